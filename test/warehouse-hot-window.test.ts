// The hot window bounds the published file (docs/warehouse.md, "Hot and cold"): a warehouse with
// 10 and with 20 days of history (rows generated in SQL, as bench/publish.ts does), published,
// reopened, then a night's rows added and published again: with a hot window of 3 days the
// published DuckDB file holds about the same bytes at both depths, and far fewer than keeping
// 40 days hot.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Config } from '../src/config.js';
import { DAY } from '../src/time.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { query, tempDir } from './sync-support.js';

const START = Date.UTC(2026, 0, 1);
const SITES = 20;
const VINTAGES = 48;

/** Per site and 15-minute valid time of days [fromDay, toDay): VINTAGES forecast vintages, 2 model outputs, an actual; random values, which compress about as real ones do. */
async function load(wh: Warehouse, fromDay: number, toDay: number): Promise<void> {
  const steps = `range(${fromDay * 96}, ${toDay * 96})`;
  const at = (expr: string) => `make_timestamptz((${START}::BIGINT + (${expr}) * 900000) * 1000)`;
  await wh.run(`INSERT INTO forecasts
    SELECT 'site-' || s, 'm', 1, ${at('q - v * 4 - 4')}, ${at('q')}, random(), 100
    FROM ${steps} b(q), range(${SITES}) a(s), range(${VINTAGES}) c(v)`);
  await wh.run(`INSERT INTO model_outputs
    SELECT 'model-' || s, ${at('q - v * 48 - 4')}, ${at('q')}, 'site-' || s, 'm', 1, random(), 100
    FROM ${steps} b(q), range(${SITES}) a(s), range(2) c(v)`);
  await wh.run(`INSERT INTO actuals
    SELECT 'site-' || s, ${at('q')}, random(), ${at('q + 1')}, NULL FROM ${steps} b(q), range(${SITES}) a(s)`);
}

/**
 * Bytes of data in the published file (its used blocks: a file keeps the free blocks of the first
 * move until they pass compaction's floor) the night after `days` of history were first published.
 */
async function publishedBytes(days: number, hotDays: number): Promise<number> {
  const path = join(tempDir('efsync-hot-window-'), 'warehouse.duckdb');
  let clock = START + days * DAY + 3 * 3_600_000;
  const open = () => Warehouse.open({ path, hotWindowMs: hotDays * DAY, now: () => clock });
  let wh = await open();
  await load(wh, 0, days + 2);
  await wh.publish();
  await wh.close();
  wh = await open(); // the writer file the first move left mostly free is compacted here
  try {
    clock += DAY;
    await load(wh, days + 2, days + 3);
    await wh.publish();
  } finally {
    await wh.close();
  }
  const [{ bytes }] = await query<{ bytes: bigint }>(
    path,
    'SELECT (total_blocks - free_blocks) * block_size AS bytes FROM pragma_database_size()',
  );
  return Number(bytes);
}

describe('the hot window', () => {
  it('is 8 days by default, and at least what the flags of a sync read back', () => {
    expect(Config.parse({}).warehouse.hot_window).toBe(8 * DAY);
    // twice a day (the stale span is shorter) plus the 6-hour lookback
    expect(Config.parse({ warehouse: { hot_window: '54h' } }).warehouse.hot_window).toBe(54 * 3_600_000);
    expect(() => Config.parse({ warehouse: { hot_window: '2d' } })).toThrow(/hot_window.*stale_span/s);
    expect(() =>
      Config.parse({ warehouse: { hot_window: '8d' }, accuracy: { quality: { stale_span: '4d' } } }),
    ).toThrow(/at least twice accuracy.quality.stale_span/);
  });

  it('keeps the published file the same size at 20 days of history as at 10, past the window', async () => {
    const cold = [await publishedBytes(10, 3), await publishedBytes(20, 3)];
    expect(cold[1]).toBeLessThanOrEqual(cold[0] * 1.1);
    // keeping every day hot, the same history weighs half as much again
    expect(await publishedBytes(20, 40)).toBeGreaterThan(cold[1] * 1.4);
  }, 240_000);
});
