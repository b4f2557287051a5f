import { defineConfig } from 'tsup';

/** Every published package builds the same way: ESM and CommonJS with types, for Node 20. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
