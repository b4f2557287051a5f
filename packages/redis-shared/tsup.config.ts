import { defineConfig } from 'tsup';
import shared from '../../tsup.shared.js';

// `shims`: the CommonJS build gets `import.meta.url` (loadIoredis resolves ioredis from here).
export default defineConfig({ ...(shared as object), shims: true });
