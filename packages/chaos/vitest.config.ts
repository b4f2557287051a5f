import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@fencelock/source'] },
  ssr: { resolve: { conditions: ['@fencelock/source'] } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // One backend at a time: each file runs its own servers and client processes on a 2-core machine.
    fileParallelism: false,
  },
});
