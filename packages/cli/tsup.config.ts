import { defineConfig } from 'tsup';
import shared from '../../tsup.shared.js';

// The library entry builds like every package; the bin is ESM only (Node runs it directly).
export default defineConfig([
  shared,
  { ...shared, entry: ['src/bin.ts'], format: ['esm'], dts: false, clean: false, banner: { js: '#!/usr/bin/env node' } },
]);
