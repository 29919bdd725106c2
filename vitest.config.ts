import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/temp-root.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files that start emulators and DuckDB files are independent; two cores on CI.
    pool: 'forks',
    maxWorkers: 2,
  },
});
