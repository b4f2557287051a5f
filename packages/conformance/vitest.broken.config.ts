import { defineConfig } from 'vitest/config';

// Runs the suite against the deliberately broken providers; only the self-test starts it.
export default defineConfig({
  resolve: { conditions: ['@fencelock/source'] },
  ssr: { resolve: { conditions: ['@fencelock/source'] } },
  test: {
    include: ['test/broken/*.fixture.ts'],
    testTimeout: 20_000,
  },
});
