import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';

/** Where the end-to-end tests' build of the bin goes (inside the package, so its client libraries resolve). */
export const E2E_BIN_DIR = fileURLToPath(new URL('../.e2e-bin', import.meta.url));

/**
 * Builds the bin once for every test file: src/bin.ts bundled by tsup with the workspace packages
 * taken from their sources, the client libraries left to node_modules, as in the published build.
 * The tests then start `node .e2e-bin/bin.js` as a user starts `fencelock`, at plain Node speed.
 */
export async function setup(): Promise<void> {
  await build({
    entry: { bin: fileURLToPath(new URL('../src/bin.ts', import.meta.url)) },
    format: ['esm'],
    outDir: E2E_BIN_DIR,
    target: 'node20',
    config: false,
    dts: false,
    sourcemap: false,
    clean: true,
    silent: true,
    noExternal: [/^@fencelock\//],
    esbuildOptions(options) {
      options.conditions = ['@fencelock/source'];
    },
  });
}

/** Removes the build. */
export async function teardown(): Promise<void> {
  rmSync(E2E_BIN_DIR, { recursive: true, force: true });
}
