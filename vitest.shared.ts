import { defineConfig, type ViteUserConfig } from 'vitest/config';

type TestOptions = NonNullable<ViteUserConfig['test']>;

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
