import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@fencelock/source'] },
  ssr: { resolve: { conditions: ['@fencelock/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    // Real servers: a JVM ensemble or an etcd cluster needs a few seconds on 2 cores, and a
    // readiness wait is bounded at 30 s, so hooks get more than that to report the real error.
    testTimeout: 60_000,
    hookTimeout: 90_000,
    teardownTimeout: 30_000,
  },
});
