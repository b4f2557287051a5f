import { defineConfig, type ViteUserConfig } from 'vitest/config';

type TestOptions = NonNullable<ViteUserConfig['test']>;

/**
 * Test files run at once by a package whose tests mostly wait on servers, timers and child
 * processes: vitest's default on a 2-core machine is one. Such a package's files must not share
 * state on a server (each uses keys of its own; a file that reads server-wide counters or changes a
 * server's configuration starts a dedicated server).
 */
export const WAITING_SUITE_WORKERS = 2;

/**
 * The vitest settings every workspace package shares: tests run on the TypeScript sources through
 * the `@fencelock/source` export condition, so nothing needs a build first.
 */
export function fencelockVitestConfig(test: TestOptions = {}): ViteUserConfig {
  return defineConfig({
    resolve: { conditions: ['@fencelock/source'] },
    ssr: { resolve: { conditions: ['@fencelock/source'] } },
    test: {
      include: ['test/**/*.test.ts'],
      testTimeout: 20_000,
      hookTimeout: 30_000,
      ...test,
    },
  });
}
