import { openDuckDB } from '../src/warehouse/duckdb.js';
import { DAY } from '../src/time.js';
import { runMeasured } from './process.js';

export interface AccuracyRun {
  seconds: number;
  peakRssMb: number;
  mode: string;
  aligned: number;
  scored: number;
  /** Days whose per-group statistics were read from the ledger again, of how many. */
  statsDays: number;
  statsOf: number;
}

export interface IncrementalFigures {
  first: AccuracyRun;
  incremental: AccuracyRun;
  full: AccuracyRun;
  /** One scan-aggregate (MAE, MBE, RMSE) over the ledger's pairs, in its own process's connection. */
  scan_s: number;
  /** full / scan and incremental / scan. */
  full_ratio: number;
  incremental_ratio: number;
}

/** Runs `efsync accuracy` with `args` in its own process; the stderr line `pairs: ...` says what it did. */
async function timedAccuracy(cli: string, env: NodeJS.ProcessEnv, args: string[]): Promise<AccuracyRun> {
  const { code, seconds, peakRssMb, stderr } = await runMeasured(cli, ['accuracy', ...args], env, { keepStderr: true });
  // 1: scored, but a site was left out
  if (code !== 0 && code !== 1) throw new Error(`efsync accuracy exited with ${code}: ${stderr}`);
  // a full run's reason may hold commas: `full (settings, sites, capacity or models changed)`
  const line =
    /pairs: (\w+)(?: \([^)]*\))?, (\d+) aligned, (\d+) scored; statistics: \w+, (\d+) of (\d+) days read/.exec(stderr);
  if (!line) throw new Error(`efsync accuracy did not say what it aligned: ${stderr}`);
  return {
    seconds,
    peakRssMb,
    mode: line[1],
    aligned: Number(line[2]),
    scored: Number(line[3]),
    statsDays: Number(line[4]),
    statsOf: Number(line[5]),
  };
}

/** The plain scan the ratios are against: best of three over the ledger's scored pairs. */
async function scanLedger(path: string): Promise<number> {
  const db = await openDuckDB(path, { readOnly: true });
  try {
    let best = Infinity;
    for (let run = 0; run < 4; run++) {
      const t0 = process.hrtime.bigint();
      await db.connection.runAndReadAll(`SELECT count(*) AS n, avg(abs(forecast - actual)) AS mae,
        avg(forecast - actual) AS mbe, sqrt(avg((forecast - actual) * (forecast - actual))) AS rmse FROM accuracy_pairs`);
      // the first run warms the cache, as the accuracy runs found it warm
      if (run > 0) best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    }
    return best;
  } finally {
    db.close();
  }
}

/**
 * A first nightly run a night before `now`, the next one at `now`, then `--full`. With fewer than
 * two days of data the night is half of them, so that the first run scores every site and the
 * next one aligns only the second half (a first window ending before the data would score no
 * site, and the next run would rightly align everything again).
 */
export async function benchIncremental(
  cli: string,
  env: NodeJS.ProcessEnv,
  now: number,
  historyDays: number,
): Promise<IncrementalFigures> {
  const window = (to: number) => ['--from', new Date(to - 6 * DAY).toISOString(), '--to', new Date(to).toISOString()];
  const night = Math.min(DAY, (historyDays * DAY) / 2);
  const first = await timedAccuracy(cli, env, window(now - night));
  const incremental = await timedAccuracy(cli, env, window(now));
  const full = await timedAccuracy(cli, env, [...window(now), '--full']);
  const scan_s = await scanLedger(env.EFSYNC_DB!);
  return {
    first,
    incremental,
    full,
    scan_s,
    full_ratio: full.seconds / scan_s,
    incremental_ratio: incremental.seconds / scan_s,
  };
}
