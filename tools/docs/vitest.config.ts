import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@fencelock/source'] },
  ssr: { resolve: { conditions: ['@fencelock/source'] } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
