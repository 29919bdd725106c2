// KSI and OVER come from 65 536-bin histograms of the actuals and forecasts (not a sort of all
// values): against SFA's exact integrals over the two ECDFs, computed here by sorting every
// value, they agree within the documented bound of 2 (max - min) / 65 535.5, and exactly where
// each bin holds one distinct value.
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionRunner, DISTRIBUTION_BINS, type SqlRunner } from '../src/accuracy/metrics.js';
import type { PairsColumns } from '../src/accuracy/pairs.js';
import { scorePairsTable } from '../src/accuracy/score.js';

const COLUMNS: PairsColumns = {
  names: ['valid_time', 'actual', 'forecast'],
  forecast: true,
  reference: false,
  capacity: false,
  issueTime: false,
  site: false,
  model: false,
  flags: false,
  quantiles: [],
};
const OPTIONS = { tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

let instance: DuckDBInstance;
let sql: SqlRunner;

beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:');
  sql = connectionRunner(await instance.connect());
});
afterAll(() => instance.closeSync());

/** `pairs` hourly pairs; values from a hash, so the same on every run: `step` apart, `spread` wide. */
async function makePairs(table: string, pairs: number, step: number, spread: number): Promise<void> {
  const steps = Math.round(spread / step);
  await sql.run(`CREATE OR REPLACE TABLE ${table} AS
    SELECT make_timestamptz(1767225600000000 + i * 3600000000) AS valid_time,
      (hash(i) % ${steps}) * ${step} AS actual,
      (hash(i) % ${steps}) * ${step} + ((hash(i + 7919) % ${steps})::BIGINT - ${steps / 2}) * ${step} / 4 AS forecast
    FROM range(${pairs}) r(i)`);
}

/**
 * SFA's KSI and OVER by sorting all 2n values per hour of the day (or in total): the running
 * count difference after each value holds until the next value.
 */
async function exact(
  table: string,
  byHour: boolean,
): Promise<Map<number, { ksi: number; over: number; lo: number; hi: number }>> {
  const g = byHour ? 'hour(valid_time - INTERVAL 1 MICROSECOND)' : '0';
  const rows = await sql.all<{ g: number; ksi: number; over: number; lo: number; hi: number }>(`
    WITH points AS (
      SELECT ${g} AS g, actual AS x, 1 AS w FROM ${table} UNION ALL SELECT ${g}, forecast, -1 FROM ${table}
    ),
    steps AS (
      SELECT g, abs(sum(w) OVER running) AS c, lead(x) OVER running - x AS dx, count(*) OVER (PARTITION BY g) / 2 AS n
      FROM points WINDOW running AS (PARTITION BY g ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    )
    SELECT g, sum(c / n * dx) FILTER (WHERE dx > 0) AS ksi,
      sum(greatest(c / n - 1.63 / sqrt(n), 0) * dx) FILTER (WHERE dx > 0) AS over,
      (SELECT min(least(actual, forecast)) FROM ${table}) AS lo, (SELECT max(greatest(actual, forecast)) FROM ${table}) AS hi
    FROM steps GROUP BY g`);
  return new Map(rows.map((r) => [Number(r.g), { ksi: r.ksi, over: r.over, lo: r.lo, hi: r.hi }]));
}

describe('KSI and OVER from histograms', () => {
  it('are within 2 bin widths of the exact integrals when bins hold many values', async () => {
    // 300 000 pairs on a 0.001 grid over 1 000: about 18 grid values and 9 points per bin
    await makePairs('many', 300_000, 0.001, 1000);
    const [row] = (await scorePairsTable(sql, 'many', COLUMNS, 'ending', { ...OPTIONS, groups: ['total'] })).rows;
    const e = (await exact('many', false)).get(0)!;
    const bound = (2 * (e.hi - e.lo)) / (DISTRIBUTION_BINS - 0.5);
    expect(e.over).toBeGreaterThan(0); // the case exercises OVER, not only KSI
    expect(Math.abs(row.values.ksi - e.ksi)).toBeLessThanOrEqual(bound);
    expect(Math.abs(row.values.over - e.over)).toBeLessThanOrEqual(bound);
  });

  it('are exact when every bin holds one distinct value, in every key of a group', async () => {
    // 50 000 pairs on a grid of 200 values: ties everywhere, each value alone in its bin
    await makePairs('ties', 50_000, 5, 1000);
    const rows = (await scorePairsTable(sql, 'ties', COLUMNS, 'ending', { ...OPTIONS, groups: ['total', 'hour'] }))
      .rows;
    const total = (await exact('ties', false)).get(0)!;
    const byHour = await exact('ties', true);
    expect(rows).toHaveLength(25);
    for (const row of rows) {
      const e = row.group === 'total' ? total : byHour.get(Number(row.key))!;
      expect(row.values.ksi).toBeCloseTo(e.ksi, 9);
      expect(row.values.over).toBeCloseTo(e.over, 9);
    }
  });
});
