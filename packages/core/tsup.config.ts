import { defineConfig } from 'tsup';
import shared from '../../tsup.shared.js';

// Two entries (users, adapter authors) that share one copy of every module, in ESM and CommonJS.
export default defineConfig({
  ...(shared as object),
  entry: ['src/index.ts', 'src/adapter.ts'],
  splitting: true,
});
