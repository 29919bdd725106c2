// The rows a sync holds: sites are admitted by the rows they hold, fetched and not yet committed.
import { describe, expect, it } from 'vitest';
import { SMALLEST_BUDGET } from '../src/resources/budget.js';
import { DEFAULT_SIZES, sizesFor } from '../src/resources/sizes.js';
import { RowBudget } from '../src/sync/budget.js';
import { heldBy } from '../src/sync/types.js';
import { emulator, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

/** Whether `promise` has settled once pending callbacks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('RowBudget', () => {
  it('the first site goes alone until its rows are known; then sites start while they fit', async () => {
    const budget = new RowBudget(100, 2);
    const first = await budget.admit();
    const second = budget.admit();
    expect(await settled(second)).toBe(false);
    first.fetched(20);
    expect(await settled(second)).toBe(false); // one step of two: the site's rows are not known yet
    first.fetched(10);
    // 30 held, and a site not fetched yet counts as the most any site fetched (30): 60 fit, 90 fit, 120 do not.
    expect(await settled(second)).toBe(true);
    const third = await budget.admit();
    const fourth = budget.admit();
    expect(budget.held()).toBe(90);
    expect(await settled(fourth)).toBe(false);
    first.released(30); // the first site's rows are committed
    expect(await settled(fourth)).toBe(true);
    first.done();
    (await second).done();
    third.done();
    (await fourth).done();
    expect(budget.held()).toBe(0);
  });

  it('a piece not read yet counts as its weight times the most rows per weight fetched so far', async () => {
    const budget = new RowBudget(100, 1);
    const first = await budget.admit(4);
    first.fetched(40); // 10 rows per vintage
    // 40 held: a piece of 6 vintages counts 60 and fits (100).
    const second = await budget.admit(6);
    expect(budget.held()).toBe(100);
    first.released(40);
    first.done();
    // 60 held: one of 2 counts 20 and fits (80); one of 3 would count 30 and does not.
    const third = await budget.admit(2);
    expect(budget.held()).toBe(80);
    const fourth = budget.admit(3);
    expect(await settled(fourth)).toBe(false);
    // The second piece read 3 rows a vintage: its own rows count from then on, not its estimate.
    second.fetched(18);
    expect(await settled(fourth)).toBe(true);
    expect(budget.held()).toBe(18 + 20 + 30);
    second.done();
    third.done();
    (await fourth).done();
  });

  it('a site above the whole budget still goes, alone', async () => {
    const budget = new RowBudget(10, 1);
    const big = await budget.admit();
    big.fetched(500);
    const next = budget.admit();
    expect(await settled(next)).toBe(false);
    big.released(500);
    big.done();
    expect(await settled(next)).toBe(true);
  });

  it('a site that ends (failed, or stopped) releases what it still held', async () => {
    const budget = new RowBudget(50, 1);
    const site = await budget.admit();
    site.fetched(40);
    expect(budget.held()).toBe(40);
    site.done();
    expect(budget.held()).toBe(0);
  });

  it('a fetch holds its rows and, at three rows each, the vintages its load records', () => {
    const key = (issue: number) => ({ modelId: '', issue });
    const deferred = Array.from({ length: 2879 }, (_, i) => key(i));
    const attempted = [{ key: key(-1), status: 'pending' as const, attempts: 1, reason: 'HTTP 500' }];
    const fetched = { data: [], rows: 289, mark: null, vintages: { deferred, stored: [key(-2)], attempted } };
    expect(heldBy(fetched)).toBe(289 + 3 * (2879 + 1 + 1));
    expect(heldBy({ data: [], rows: 12, mark: null })).toBe(12);
    expect(heldBy(null)).toBe(0);
  });
});

describe('a sync held to a few rows in memory', () => {
  it('stores exactly what a sync with the default budget stores, a site at a time', async () => {
    const emu = await emulator({ sites: 3 });
    try {
      const stored = [];
      for (const rows_in_memory of [200_000, 1]) {
        const config = testConfig({ dir: tempDir(), url: emu.url, sync: { rows_in_memory } });
        const result = await runSync(config);
        expect(result.exitCode).toBe(0);
        stored.push(await tableHashes(config.warehouse.path));
      }
      expect(stored[1]).toEqual(stored[0]);
      expect(stored[0].forecasts).not.toMatch(/^0 rows/);
    } finally {
      await emu.close();
    }
  }, 120_000);
});

describe('a long site list', () => {
  it("loads within the smallest budget's DuckDB limit, as it loads within the default one", async () => {
    const emu = await emulator({ sites: 3_000 });
    try {
      const stored = [];
      for (const memory_limit of [
        DEFAULT_SIZES.duckdb.sync,
        sizesFor({ bytes: SMALLEST_BUDGET, source: '--memory' }).duckdb.sync,
      ]) {
        const config = testConfig({ dir: tempDir(), url: emu.url, sync: { memory_limit, resources: ['sites'] } });
        const result = await runSync(config);
        expect(result.exitCode, result.error ?? undefined).toBe(0);
        const { sites, site_assets, site_capacity } = await tableHashes(config.warehouse.path);
        stored.push({ sites, site_assets, site_capacity });
      }
      expect(stored[1]).toEqual(stored[0]);
      expect(stored[0].sites).toMatch(/^3000 rows/);
    } finally {
      await emu.close();
    }
  }, 120_000);
});
