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

/** For each day of `table`'s rows, how many of its row groups its valid_time statistics span that day. */
async function rowGroupsPerDay(wh: Warehouse, table: string): Promise<number[]> {
  const rows = await wh.all<{ groups: bigint }>(
    `WITH spans AS (
       SELECT row_group_id, regexp_extract(stats, 'Min: ([^,\\]]+)', 1)::TIMESTAMPTZ AS lo,
              regexp_extract(stats, 'Max: ([^,\\]]+)', 1)::TIMESTAMPTZ AS hi
       FROM pragma_storage_info('${table}') WHERE column_name = 'valid_time' AND segment_type <> 'VALIDITY'),
     days AS (SELECT DISTINCT date_trunc('day', valid_time) AS day FROM ${table})
     SELECT count(DISTINCT row_group_id) AS groups FROM days, spans
     WHERE spans.lo < days.day + INTERVAL 1 DAY AND spans.hi >= days.day GROUP BY days.day ORDER BY days.day`,
  );
  return rows.map((row) => Number(row.groups));
}

describe('the hot window', () => {
  it('a move that takes out more rows than it leaves writes the days left one after another', async () => {
    const path = join(tempDir('efsync-hot-cluster-'), 'warehouse.duckdb');
    const wh = await Warehouse.open({ path, hotWindowMs: 3 * DAY, now: () => START + 12 * DAY + 3 * 3_600_000 });
    try {
      // as a catch-up writes it, a site after another, each with every day: each day in every row group
      const steps = 'range(0, 12 * 96)';
      const at = (expr: string) => `make_timestamptz((${START}::BIGINT + (${expr}) * 900000) * 1000)`;
      await wh.run(`INSERT INTO forecasts
        SELECT 'site-' || s, 'm', 1, ${at('q - v * 4 - 4')}, ${at('q')}, random(), 100
        FROM ${steps} b(q), range(${SITES}) a(s), range(${VINTAGES}) c(v) ORDER BY s, q, v`);
      await wh.checkpoint();
      const before = await wh.all(
        `SELECT count(*) AS n, sum(hash(COLUMNS(*))) FROM forecasts WHERE valid_time >= ${at(String(9 * 96))}`,
      );
      const comments = 'SELECT column_name, comment FROM duckdb_columns() WHERE table_name = $1 ORDER BY ALL';
      const commented = await wh.all(comments, ['forecasts']);
      expect(await rowGroupsPerDay(wh, 'forecasts')).toEqual(Array(12).fill(9)); // 12 days, 9 row groups
      await wh.publish(); // moves days 0 to 8, and leaves 9 to 11
      const spans = await rowGroupsPerDay(wh, 'forecasts');
      expect(spans).toHaveLength(3);
      // 92,160 rows a day in row groups of 122,880: a day in one or two of them, not in all three
      expect(Math.max(...spans)).toBeLessThanOrEqual(2);
      expect(await wh.all(`SELECT count(*) AS n, sum(hash(COLUMNS(*))) FROM forecasts`)).toEqual(before);
      expect(await wh.all(comments, ['forecasts'])).toEqual(commented);
    } finally {
      await wh.close();
    }
  }, 120_000);

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
