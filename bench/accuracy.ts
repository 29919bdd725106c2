// Accuracy speed: score N synthetic forecast-actual pairs held in a DuckDB file with the accuracy
// engine (every metric of group total, KSI and OVER included), beside one plain DuckDB
// scan-aggregate over the same table (MAE, MBE, RMSE) as the limit. Figures only, no assertions.
// Each figure is the best of a few warm runs, taken in turn through the same runner, so that a
// busy machine (others building on the same two cores) weighs on both sides alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectionRunner, type SqlRunner } from '../src/accuracy/compute/metrics.js';
import { type StatsEngine, statsEngine } from '../src/accuracy/compute/stats.js';
import type { PairsColumns } from '../src/accuracy/input/pairs.js';
import { scorePairsTable } from '../src/accuracy/score.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';

const COLUMNS: PairsColumns = {
  names: ['valid_time', 'issue_time', 'actual', 'forecast', 'reference', 'capacity'],
  forecast: true,
  reference: true,
  capacity: true,
  issueTime: true,
  site: false,
  model: false,
  flags: false,
  quantiles: [],
};

/** A day-shaped 15-minute series with noisy forecasts and a day-old reference, 1 MW capacity. */
async function buildPairs(sql: SqlRunner, pairs: number): Promise<void> {
  await sql.run('SELECT setseed(0.42)');
  await sql.run(`CREATE TABLE bench_pairs AS
    WITH t AS (SELECT i, greatest(0, 500 + 450 * sin(2 * pi() * (i % 96) / 96)) AS truth FROM range(${pairs}) r(i))
    SELECT make_timestamptz(1767225600000000 + i * 900000000) AS valid_time,
      make_timestamptz(1767225600000000 + (i - 4 - (i % 192)) * 900000000) AS issue_time,
      truth + 60 * (random() - 0.5) AS actual,
      truth + 120 * (random() - 0.5) AS forecast,
      truth + 200 * (random() - 0.5) AS reference,
      1000.0::DOUBLE AS capacity
    FROM t`);
}

const RUNS = 3;

async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return (performance.now() - start) / 1000;
}

/** Best time of each task over RUNS rounds, the tasks taking turns within a round, after one warm-up each. */
async function bestOf<K extends string>(tasks: Record<K, () => Promise<unknown>>): Promise<Record<K, number>> {
  const names = Object.keys(tasks) as K[];
  for (const name of names) await tasks[name]();
  const best = Object.fromEntries(names.map((n) => [n, Infinity])) as Record<K, number>;
  for (let run = 0; run < RUNS; run++) {
    for (const name of names) best[name] = Math.min(best[name], await seconds(tasks[name]));
  }
  return best;
}

export interface AccuracyFigures {
  pairs: number;
  /** Every metric of group total, KSI and OVER included. */
  score_s: number;
  /** One plain scan-aggregate (MAE, MBE, RMSE) over the same table. */
  scan_s: number;
  ratio: number;
  /** Every metric but KSI, OVER and CPI (`--no-distribution`): no sort of the values. */
  moments_s: number;
  moments_ratio: number;
  /** How the statistics were computed: the native functions, or SQL where they are not built. */
  engine: StatsEngine;
}

const OPTIONS = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

export async function benchAccuracy(pairs = 10_000_000, path?: string): Promise<AccuracyFigures> {
  const dir = path ? null : mkdtempSync(join(tmpdir(), 'efsync-bench-accuracy-'));
  const file = path ?? join(dir!, 'accuracy.duckdb');
  const db = await openDuckDB(file);
  try {
    const sql = connectionRunner(db.connection);
    await buildPairs(sql, pairs);
    await sql.run('CHECKPOINT');
    const { scan_s, moments_s, score_s } = await bestOf({
      scan_s: () =>
        sql.all(`SELECT count(*) AS n, avg(abs(forecast - actual)) AS mae, avg(forecast - actual) AS mbe,
        sqrt(avg((forecast - actual) * (forecast - actual))) AS rmse FROM bench_pairs`),
      moments_s: () => scorePairsTable(sql, 'bench_pairs', COLUMNS, 'ending', { ...OPTIONS, distribution: false }),
      score_s: () => scorePairsTable(sql, 'bench_pairs', COLUMNS, 'ending', OPTIONS),
    });
    const engine = await statsEngine(sql);
    return { pairs, score_s, scan_s, ratio: score_s / scan_s, moments_s, moments_ratio: moments_s / scan_s, engine };
  } finally {
    db.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pairs = Number(process.argv[2] ?? 10_000_000);
  console.log(JSON.stringify(await benchAccuracy(pairs)));
}
