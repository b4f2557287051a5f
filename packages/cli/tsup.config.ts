import { defineConfig, type Options } from 'tsup';
import sharedConfig from '../../tsup.shared.js';

// The shared config is one plain object; tsup's defineConfig types it as any of its input forms.
const shared = sharedConfig as Options;

// The library entry builds like every package (shims give the CJS build `import.meta.url`, with
// which the version is read); the bin is ESM only (Node runs it directly).
export default defineConfig([
  { ...shared, shims: true },
  { ...shared, entry: ['src/bin.ts'], format: ['esm'], dts: false, clean: false, banner: { js: '#!/usr/bin/env node' } },
]);
