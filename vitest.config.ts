import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A temporary root for the run; dist/ built where stale (the tests' child processes run it).
    globalSetup: ['test/temp-root.ts', 'test/built.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files that start emulators and DuckDB files are independent; two cores on CI.
    pool: 'forks',
    maxWorkers: 2,
  },
});
