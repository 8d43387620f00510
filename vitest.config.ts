import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@sluice/source'] },
  ssr: { resolve: { conditions: ['@sluice/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
