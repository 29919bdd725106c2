import { defineConfig } from 'vitest/config';

// Two tiers, told apart by the file name alone: test/**/*.deep.test.ts is the deep tier (many
// processes, every crash point and command, long races), any other test/**/*.test.ts the fast
// tier, where a new file lands. `npm test` runs the fast tier, `npm run test:deep` the deep one,
// `npm run test:all` both: EFSYNC_TESTS=fast|deep|all (fast unless set) chooses.
const DEEP = 'test/**/*.deep.test.ts';
const tier = process.env.EFSYNC_TESTS ?? 'fast';
const TIERS: Record<string, { include: string[]; exclude: string[] }> = {
  fast: { include: ['test/**/*.test.ts'], exclude: [DEEP] },
  deep: { include: [DEEP], exclude: [] },
  all: { include: ['test/**/*.test.ts'], exclude: [] },
};
if (!(tier in TIERS)) throw new Error(`EFSYNC_TESTS: fast, deep or all, not "${tier}"`);

export default defineConfig({
  test: {
    ...TIERS[tier],
    // A temporary root for the run, dist/ built where stale (children run it), the run's seed.
    globalSetup: ['test/temp-root.ts', 'test/built.ts', 'test/seed.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files that start emulators and DuckDB files are independent; two cores on CI.
    pool: 'forks',
    maxWorkers: 2,
  },
});
