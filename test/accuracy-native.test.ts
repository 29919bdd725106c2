// The native accuracy statistics (native/efsync.c, loaded by src/warehouse/native.ts) give
// what the SQL statistics give: the same bins for every value, and the same counts, sums, minima
// and maxima for every group and chunk, NULLs, drops, deadband, MAPE floor and capacities
// included, to the last digits a different order of summing moves. Also: the install builds
// them, a database efsync opens loads them, and one it did not open scores in SQL.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerLine } from '../src/accuracy/input/incremental.js';
import { connectionRunner, type SqlRunner } from '../src/accuracy/compute/metrics.js';
import type { MetricOptions } from '../src/accuracy/compute/options.js';
import { binSql, histogramSql, type StatsEngine, statsEngine, statsSql } from '../src/accuracy/compute/stats.js';
import { type DuckDBHandle, openDuckDB } from '../src/warehouse/duckdb.js';
import { NATIVE_EXTENSION_PATH } from '../src/warehouse/native.js';
import { tempDir } from './sync-support.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');

let db: DuckDBHandle;
let sql: SqlRunner;

beforeAll(async () => {
  db = await openDuckDB(':memory:');
  sql = connectionRunner(db.connection);
  expect(await statsEngine(sql)).toBe('native');
  await sql.run('SELECT setseed(0.17)');
  // 20,000 pairs of two subjects and three models over 3 days: values of both signs and zeros,
  // missing forecasts (8%) and references (30%), capacities missing, zero, negative or positive,
  // and dropped pairs (5%)
  await sql.run(`CREATE TABLE pairs AS
    SELECT i AS pid, CASE WHEN i % 2 = 0 THEN 'site_forecast' ELSE 'pairs' END AS subject,
      ['m1', 'm2', NULL][1 + i % 3] AS model,
      make_timestamptz(1767225600000000 + i * 13 * 1000000) AS valid_time,
      make_timestamptz(1767225600000000 + i * 13 * 1000000 - (i % 97) * 3600000000) AS issue_time,
      CASE WHEN i % 11 = 0 THEN 0.0 ELSE 400 * random() - 40 END AS actual,
      CASE WHEN i % 13 = 0 THEN NULL WHEN i % 17 = 0 THEN 0.0 ELSE 420 * random() - 50 END AS forecast,
      CASE WHEN random() < 0.3 THEN NULL ELSE 300 * random() END AS reference,
      [NULL, 0.0, -5.0, 500.0, 1000.0][1 + i % 5] AS capacity,
      CASE WHEN i % 20 = 7 THEN 'flagged' END AS drop_reason
    FROM range(20000) r(i)`);
});
afterAll(() => db.close());

it('the install builds the native statistics, and a database efsync opens loads them', () => {
  expect(existsSync(NATIVE_EXTENSION_PATH)).toBe(true);
});

it('an install without a C compiler says so and goes on, leaving no extension', async () => {
  const target = join(tempDir(), 'efsync.duckdb_extension');
  const { stderr } = await run(process.execPath, [join(ROOT, 'scripts', 'build-native.js'), target], {
    env: { ...process.env, CC: join(tempDir(), 'no-such-cc') },
  });
  expect(stderr).toContain('the native extension was not built');
  expect(stderr).toContain('accuracy computes its statistics in SQL instead');
  expect(existsSync(target)).toBe(false);
});

it('a database efsync did not open (no unsigned extensions) scores in SQL', async () => {
  const plain = await DuckDBInstance.create(':memory:');
  try {
    expect(await statsEngine(connectionRunner(await plain.connect()))).toBe('sql');
  } finally {
    plain.closeSync();
  }
});

it('a warehouse run scored in SQL says so in its summary line', () => {
  const ledger = {
    mode: 'incremental' as const,
    reason: null,
    sitesChanged: 0,
    pairsAligned: 12,
    batches: 1,
    pairs: 50,
    quantiles: false,
    skipped: [],
  };
  const stats = { mode: 'incremental' as const, days: 1, of: 7 };
  expect(ledgerLine({ ...ledger, stats: { ...stats, engine: 'native' } })).toBe(
    'pairs: incremental, 12 aligned, 50 scored; statistics: incremental, 1 of 7 days read',
  );
  expect(ledgerLine({ ...ledger, stats: { ...stats, engine: 'sql' } })).toBe(
    'pairs: incremental, 12 aligned, 50 scored; statistics: incremental, 1 of 7 days read, in SQL (native functions not loaded: docs/accuracy.md#speed)',
  );
  expect(ledgerLine({ ...ledger, sitesChanged: 2, stats: { ...stats, engine: 'native' } })).toBe(
    'pairs: incremental (2 sites new or changed), 12 aligned, 50 scored; statistics: incremental, 1 of 7 days read',
  );
});

describe('efsync_bin', () => {
  it('puts every value in the bin binSql gives it', async () => {
    const [row] = await sql.all<{ values: bigint; differ: bigint; bins: bigint }>(`
      WITH v AS (
        SELECT x FROM (VALUES (0.0), (NULL), (5e-324), (-5e-324), (2.2250738585072014e-308), (1e100), (-1e100),
          (1.7976931348623157e308), (1.0), (-1.0)) t(x)
        -- magnitudes across the whole range, both signs
        UNION ALL SELECT (CASE WHEN random() < 0.5 THEN -1 ELSE 1 END) * exp(1380 * random() - 690) FROM range(200000)
        -- values at and beside the bins' edges, where rounding decides
        UNION ALL SELECT exp((k + 0.5) / 250) * (1 + d * 1e-15) FROM range(-5000, 5000) a(k), (VALUES (-1), (0), (1)) b(d)
      )
      SELECT count(*) AS values, count(DISTINCT efsync_bin(x)) AS bins,
        count(*) FILTER (WHERE efsync_bin(x) IS DISTINCT FROM ${binSql('x', 'sql')}) AS differ FROM v`);
    expect(row.values).toBe(230010n);
    expect(row.bins).toBeGreaterThan(100_000n);
    expect(row.differ).toBe(0n);
  });

  it('fails on a value that is not finite, as the SQL does', async () => {
    for (const engine of ['native', 'sql'] as const) {
      await expect(sql.all(`SELECT ${binSql("'inf'::DOUBLE", engine)} AS bin`)).rejects.toThrow();
    }
  });
});

const BASE: MetricOptions = {
  groups: ['total'],
  tz: 'Europe/Berlin',
  leadBuckets: [],
  deadbandPct: 0,
  mapeMinActualPct: 1,
};
const CASES: { name: string; options: MetricOptions; chunk: string | null }[] = [
  { name: 'group total', options: BASE, chunk: null },
  {
    name: 'lead and hour groups, per UTC day',
    options: { ...BASE, groups: ['lead', 'hour'], leadBuckets: [6 * 3600_000, 24 * 3600_000] },
    chunk: 'epoch_us(valid_time) // 86400000000',
  },
  {
    name: 'a deadband of 2.5% and no MAPE floor',
    options: { ...BASE, deadbandPct: 2.5, mapeMinActualPct: 0 },
    chunk: null,
  },
  {
    name: 'a MAPE floor of 12.5% of capacity',
    options: { ...BASE, groups: ['total', 'site'], mapeMinActualPct: 12.5 },
    chunk: null,
  },
];

type StatRow = {
  subject: string;
  model: string | null;
  grp: string;
  key: string;
  chunk: bigint;
  name: string;
  value: number;
};

async function statistics(
  options: MetricOptions,
  chunk: string | null,
  engine: StatsEngine,
): Promise<Map<string, number>> {
  const pairs = `(SELECT *, subject || '-site' AS site_id, valid_time AS group_time FROM pairs)`;
  const rows = await sql.all<StatRow>(`SELECT * FROM (${statsSql(pairs, null, options, chunk, engine)})`);
  return new Map(
    rows.map((r) => [JSON.stringify([r.subject, r.model, r.grp, r.key, String(r.chunk), r.name]), r.value]),
  );
}

describe('efsync_point_stats', () => {
  for (const { name, options, chunk } of CASES) {
    it(`gives the SQL's statistics: ${name}`, async () => {
      const native = await statistics(options, chunk, 'native');
      const plain = await statistics(options, chunk, 'sql');
      expect([...native.keys()].sort()).toEqual([...plain.keys()].sort());
      expect(native.size).toBeGreaterThan(50);
      for (const [key, value] of plain) {
        const other = native.get(key)!;
        // the same terms summed in another order: 1e-9 relative, as the issue holds incremental to full
        expect(Math.abs(other - value), key).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(value)));
      }
    });
  }

  it('gives NULL sums and minima, and zero counts, where a group has no value for them', async () => {
    const [row] = await sql.all<Record<string, unknown>>(`
      SELECT unnest(efsync_point_stats(actual, forecast, NULL, NULL, 0.01, 0)) FROM (VALUES (1.0, NULL::DOUBLE)) t(actual, forecast)`);
    expect(row).toMatchObject({
      n: 1n,
      c_forecast: 0n,
      n_point: 0n,
      s_e: null,
      min_f: null,
      s_o: 1,
      min_o: 1,
      max_o: 1,
    });
  });
});

describe('the histograms', () => {
  for (const { name, options } of CASES) {
    it(`count the same bins both ways: ${name}`, async () => {
      const pairs = `(SELECT *, subject || '-site' AS site_id, valid_time AS group_time FROM pairs)`;
      const bins = (engine: StatsEngine) => `SELECT * FROM (${histogramSql(pairs, options, engine)})`;
      const [{ rows, differ }] = await sql.all<{ rows: bigint; differ: bigint }>(`
        SELECT (SELECT count(*) FROM (${bins('native')})) AS rows,
          (SELECT count(*) FROM ((${bins('native')} EXCEPT ALL ${bins('sql')}) UNION ALL (${bins('sql')} EXCEPT ALL ${bins('native')}))) AS differ`);
      expect(rows).toBeGreaterThan(1000n);
      expect(differ).toBe(0n);
    });
  }
});
