// Scoring a lake (docs/accuracy.md, "Scoring a lake"): the per-group statistics merge by
// addition (stats.ts), so each shard scores its own sites and contributes their statistics, and
// one reduce merges them into the accuracy_results a single warehouse would hold.
//
//   scoreShard: a scratch warehouse seeded from the lake with the shard's sites over the window
//     and the reference's reach before it; the warehouse's own score (scoreAndFlag); its per-day
//     statistics, histograms, the report's series and flag counts, and a manifest row committed
//     as the shard's contribution (src/lake/contrib.ts), replacing its last one.
//   reduceLake: the newest shard count's contributions, one per shard, checked to agree, merged
//     by metricsFromStats as a warehouse's days are, stored in the lake's accuracy_results and
//     accuracy_runs, and the report written.
import { FailedError } from '../errors.js';
import { DAY } from '../time.js';
import type { ColumnDefinition } from '../lake/delta/table.js';
import {
  appendToLake,
  commitContribution,
  contributionSql,
  withLakeLock,
  withScratch,
  withSeededScratch,
} from '../lake/contrib.js';
import { formatShard, type Shard, shardOf, shardTag } from '../lake/shard.js';
import { FLAGS, type FlagName } from '../warehouse/flags.js';
import { instantLiteral } from '../warehouse/sql.js';
import { withDuckDBSettings } from '../warehouse/settings.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { AccuracyRow } from './compute/metrics.js';
import { metricsFromStats } from './compute/metrics.js';
import type { MetricOptions } from './compute/options.js';
import type { SkippedSite } from './input/align.js';
import { LEDGER_PAIRS } from './input/incremental.js';
import type { FlagCount } from './input/quality.js';
import { countFlags } from './input/quality.js';
import { reportSeriesSql, SERIES_SITES, type SeriesPoint, writeReport } from './output/report.js';
import { storeAccuracy } from './output/store.js';
import { type AccuracySettings, HISTORY_REACH, reportNotes, scoreAndFlag, withReportGroups } from './score.js';

/** The default window of a lake score: as the nightly's, from 00:00 UTC 30 days before `to`. */
export const LAKE_WINDOW = 30 * DAY;

/** What a lake score runs with besides its settings. */
export interface LakeRun {
  lake: string;
  runId: string;
  now: number;
  /** DuckDB's memory_limit and threads while scoring (accuracy.memory_limit, .threads). */
  duckdb: Record<string, string | number | null>;
  lockWaitMs: number;
  /** The reduce refuses a contribution scored longer ago than this (a shard that did not score tonight); none when absent. */
  maxAgeMs?: number;
}

const COLUMNS: Record<'stats' | 'histograms' | 'series' | 'flags' | 'runs', ColumnDefinition[]> = {
  stats: [
    ...['subject', 'model', 'grp', 'key'].map((name) => ({ name, type: 'VARCHAR' })),
    { name: 'key_order', type: 'DOUBLE' },
    { name: 'chunk', type: 'BIGINT', comment: 'UTC day of valid time (days since 1970-01-01)' },
    { name: 'name', type: 'VARCHAR', comment: 'The statistic (src/accuracy/compute/stats.ts)' },
    { name: 'value', type: 'DOUBLE' },
  ],
  histograms: [
    ...['subject', 'model', 'grp', 'key'].map((name) => ({ name, type: 'VARCHAR' })),
    { name: 'key_order', type: 'DOUBLE' },
    { name: 'bin', type: 'INTEGER' },
    { name: 'n_o', type: 'BIGINT' },
    { name: 'n_f', type: 'BIGINT' },
  ],
  series: [
    { name: 'site_id', type: 'VARCHAR' },
    { name: 'site', type: 'VARCHAR', comment: 'The site as the report names it' },
    { name: 'time', type: 'TIMESTAMP WITH TIME ZONE' },
    ...['forecast', 'actual', 'reference'].map((name) => ({ name, type: 'DOUBLE' })),
  ],
  flags: [
    { name: 'site', type: 'VARCHAR' },
    { name: 'flag', type: 'VARCHAR' },
    { name: 'count', type: 'BIGINT' },
  ],
  runs: [
    { name: 'scored_at', type: 'TIMESTAMP WITH TIME ZONE', comment: "The run's clock" },
    {
      name: 'committed_at',
      type: 'TIMESTAMP WITH TIME ZONE',
      comment: 'The wall clock when the shard committed: the newest contribution is the one of the greatest',
    },
    { name: 'window_from', type: 'TIMESTAMP WITH TIME ZONE' },
    { name: 'window_to', type: 'TIMESTAMP WITH TIME ZONE' },
    { name: 'settings', type: 'VARCHAR', comment: 'JSON: the options every shard of a reduce must share' },
    { name: 'sites', type: 'INTEGER', comment: 'Sites the shard scored' },
    { name: 'skipped', type: 'VARCHAR', comment: 'JSON: sites left out, with the reason' },
    { name: 'pairs_aligned', type: 'BIGINT' },
    { name: 'counts', type: 'VARCHAR', comment: "JSON: the contribution's rows per table, to check it landed whole" },
  ],
};
/** The contribution's tables, the manifest (runs) last. */
const PARTS = ['stats', 'histograms', 'series', 'flags'] as const;

/** The options the statistics depend on: a reduce merges only contributions that agree on every one. */
function sharedSettings(settings: AccuracySettings): string {
  return JSON.stringify({
    groups: settings.groups,
    tz: settings.tz,
    leadBuckets: settings.leadBuckets,
    deadbandPct: settings.deadbandPct,
    mapeMinActualPct: settings.mapeMinActualPct,
    events: settings.events ?? [],
    distribution: settings.distribution !== false,
    from: settings.from ?? null,
    models: settings.models ?? null,
    forecastLabel: settings.forecastLabel,
    actualLabel: settings.actualLabel,
    forecastIntervalMs: settings.forecastIntervalMs ?? null,
    actualIntervalMs: settings.actualIntervalMs ?? null,
    maxMissingPct: settings.maxMissingPct,
    includeFlagged: settings.includeFlagged === true,
  });
}

export interface ShardScored {
  shard: Shard;
  sites: number;
  skipped: SkippedSite[];
  /** Rows contributed per table. */
  rows: Record<string, number>;
}

/** Scores the shard's sites of the lake over `settings`' window and contributes their statistics. */
export async function scoreShard(settings: AccuracySettings, shard: Shard, run: LakeRun): Promise<ShardScored> {
  if (settings.from === undefined || settings.to === undefined)
    throw new FailedError('a shard scores a bounded window: from and to are needed');
  const holder = { job: 'accuracy', runId: run.runId };
  const seed = { shard, lookback: 0, backfillFrom: settings.from - HISTORY_REACH };
  const scored = { ...settings, groups: withReportGroups(settings.groups), reportPath: null };
  return withLakeLock(run.lake, `accuracy-${shardTag(shard)}`, holder, run.lockWaitMs, () =>
    withSeededScratch(run.lake, seed, holder, async (wh) => {
      const sites = (await wh.all<{ site_id: string }>('SELECT site_id FROM sites ORDER BY site_id'))
        .map((s) => s.site_id)
        .filter((id) => shardOf(id, shard.count) === shard.index);
      const done = sites.length === 0 ? await emptyScore(wh) : await scoreSites(wh, { ...scored, sites }, run);
      await wh.run(
        `CREATE OR REPLACE TEMP TABLE acc_contrib_runs AS SELECT ${instantLiteral(run.now)} AS scored_at,
        ${instantLiteral(Date.now())} AS committed_at, ${instantLiteral(settings.from!)} AS window_from, ${instantLiteral(settings.to!)} AS window_to,
        $1 AS settings, ${sites.length}::INTEGER AS sites, $2 AS skipped, ${done.pairsAligned}::BIGINT AS pairs_aligned,
        $3 AS counts`,
        [sharedSettings(scored), JSON.stringify(done.skipped), JSON.stringify(done.counts)],
      );
      const rows = await commitContribution(wh, run.lake, {
        shard,
        runId: run.runId,
        tables: [...PARTS, 'runs' as const].map((name) => ({
          name: `accuracy_${name}`,
          columns: COLUMNS[name],
          query: `SELECT * FROM temp.acc_contrib_${name}`,
        })),
      });
      return { shard, sites: sites.length, skipped: done.skipped, rows };
    }),
  );
}

interface Contributed {
  skipped: SkippedSite[];
  pairsAligned: number;
  counts: Record<string, number>;
}

/** The warehouse's own score of the shard's sites, then its contribution's rows in temp tables. */
async function scoreSites(wh: Warehouse, settings: AccuracySettings, run: LakeRun): Promise<Contributed> {
  const { result } = await withDuckDBSettings(wh, run.duckdb, () =>
    scoreAndFlag(wh, settings, { runId: run.runId, now: run.now }),
  );
  const flags = await countFlags(wh, { sites: settings.sites, fromMs: settings.from, toMs: settings.to });
  await wh.run('CREATE OR REPLACE TEMP TABLE acc_contrib_stats AS SELECT * FROM accuracy_stats');
  await wh.run('CREATE OR REPLACE TEMP TABLE acc_contrib_histograms AS SELECT * FROM accuracy_histograms');
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_contrib_series AS
    SELECT s.site AS site_id, coalesce(n.name, s.site) AS site, s.time, s.forecast, s.actual, s.reference
    FROM (${reportSeriesSql(LEDGER_PAIRS)}) s LEFT JOIN sites n ON n.site_id = s.site`);
  await wh.run('CREATE OR REPLACE TEMP TABLE acc_contrib_flags (site VARCHAR, flag VARCHAR, count BIGINT)');
  for (const f of flags) await wh.run('INSERT INTO acc_contrib_flags VALUES ($1, $2, $3)', [f.site, f.flag, f.count]);
  return { skipped: result.skipped, pairsAligned: result.ledger?.pairsAligned ?? 0, counts: await countParts(wh) };
}

/** A shard without sites contributes a manifest and nothing else: the reduce still sees it was there. */
async function emptyScore(wh: Warehouse): Promise<Contributed> {
  for (const name of PARTS) {
    const columns = COLUMNS[name].map((c) => `NULL::${c.type} AS ${c.name}`).join(', ');
    await wh.run(`CREATE OR REPLACE TEMP TABLE acc_contrib_${name} AS SELECT ${columns} WHERE false`);
  }
  return { skipped: [], pairsAligned: 0, counts: await countParts(wh) };
}

async function countParts(wh: Warehouse): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const name of PARTS) {
    const [{ n }] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM temp.acc_contrib_${name}`);
    counts[name] = Number(n);
  }
  return counts;
}

/** One shard's contribution as the reduce reads it. */
interface Contribution {
  shard_index: number;
  shard_count: number;
  run_id: string;
  scored_at: Date;
  window_from: Date;
  window_to: Date;
  settings: string;
  sites: number;
  skipped: string;
  pairs_aligned: bigint;
  counts: string;
}

export interface LakeReduced {
  rows: AccuracyRow[];
  shards: number;
  skipped: SkippedSite[];
  reportPath: string | null;
  /** The groups the shards scored, in their order. */
  groups: MetricOptions['groups'];
}

/**
 * Merges the newest shard count's contributions (one per shard, all present, sharing their
 * settings and window start, each whole) into accuracy_results and accuracy_runs of the lake,
 * and writes the report to `reportPath` when given.
 */
export async function reduceLake(reportPath: string | null, run: LakeRun): Promise<LakeReduced> {
  const holder = { job: 'accuracy', runId: run.runId };
  return withLakeLock(run.lake, 'accuracy', holder, run.lockWaitMs, () =>
    withScratch(holder, async (wh) => {
      const chosen = await chooseContributions(wh, run);
      // the options every shard scored with (sharedSettings), which the metrics follow
      const settings = JSON.parse(chosen[0].settings) as AccuracySettings;
      // no pairs: a group far from 0 is scored from its raw sums (docs/lake.md, Scoring a lake)
      const rows = await metricsFromStats(
        wh,
        { stats: 'temp.acc_lake_stats', histogram: 'temp.acc_lake_histograms', pairs: LEDGER_PAIRS },
        settings,
      );
      const skipped = chosen.flatMap((c) => JSON.parse(c.skipped) as SkippedSite[]);
      const to = Math.max(...chosen.map((c) => c.window_to.getTime()));
      const window = { ...settings, from: chosen[0].window_from.getTime(), to, reportPath };
      if (reportPath) await writeLakeReport(wh, reportPath, rows, window, skipped, run, chosen.length);
      await storeAccuracy(
        wh,
        {
          runId: run.runId,
          scoredAt: run.now,
          source: 'warehouse',
          ...window,
          skipped,
          reportPath: reportPath ?? undefined,
          mode: 'full',
          pairsAligned: chosen.reduce((sum, c) => sum + Number(c.pairs_aligned), 0),
        },
        rows,
      );
      // the results before the run that names them
      for (const table of ['accuracy_results', 'accuracy_runs'])
        await appendToLake(wh, run.lake, table, { who: 'accuracy', runId: run.runId });
      return { rows, shards: chosen.length, skipped, reportPath, groups: settings.groups };
    }),
  );
}

/**
 * Reads every contribution into temp tables and picks the newest shard count's: one per shard
 * index, all of them, with the same settings and window start, each whole (its rows of every
 * table those its manifest counted); the chosen rows of statistics and histograms are left in
 * acc_lake_stats and acc_lake_histograms. Fails naming the shards that fall short.
 */
async function chooseContributions(wh: Warehouse, run: LakeRun): Promise<Contribution[]> {
  const { lake } = run;
  for (const name of [...PARTS, 'runs'] as const) {
    const sql = await contributionSql(wh.connection, lake, `accuracy_${name}`);
    if (sql === null && name === 'runs')
      throw new FailedError(
        `no shard has scored into the lake ${lake}`,
        'run efsync accuracy --lake PATH --shard I/N first',
      );
    const empty = [
      'NULL::INTEGER AS shard_index, NULL::INTEGER AS shard_count, NULL::VARCHAR AS run_id',
      ...COLUMNS[name].map((c) => `NULL::${c.type} AS ${c.name}`),
    ].join(', ');
    await wh.run(`CREATE OR REPLACE TEMP TABLE acc_lake_${name} AS ${sql ?? `SELECT ${empty} WHERE false`}`);
  }
  const all = await wh.all<Contribution>(
    'SELECT * FROM temp.acc_lake_runs ORDER BY committed_at DESC, shard_index, run_id',
  );
  const count = all[0].shard_count;
  const chosen: Contribution[] = [];
  for (let index = 0; index < count; index++) {
    const c = all.find((r) => r.shard_count === count && r.shard_index === index);
    if (c) chosen.push(c);
  }
  const name = (c: Pick<Contribution, 'shard_index' | 'shard_count'>) =>
    formatShard({ index: c.shard_index, count: c.shard_count });
  const missing = Array.from({ length: count }, (_, index) => index).filter(
    (i) => !chosen.some((c) => c.shard_index === i),
  );
  if (missing.length > 0)
    throw new FailedError(
      `shards ${missing.map((index) => formatShard({ index, count })).join(', ')} have not scored into the lake (the newest contribution is of ${count} shards)`,
      'score every shard (efsync accuracy --lake PATH --shard I/N), then reduce',
    );
  const newest = chosen.find((c) => c.run_id === all[0].run_id)!;
  const apart = chosen.filter(
    (c) => c.settings !== newest.settings || c.window_from.getTime() !== newest.window_from.getTime(),
  );
  if (apart.length > 0)
    throw new FailedError(
      `shards ${apart.map(name).join(', ')} scored another window or other settings than shard ${name(newest)}: their contributions are of another night`,
      'score them again with the same settings, then reduce',
    );
  const stale = chosen.filter((c) => run.maxAgeMs !== undefined && run.now - c.scored_at.getTime() > run.maxAgeMs);
  if (stale.length > 0)
    throw new FailedError(
      `shards ${stale.map(name).join(', ')} last scored longer ago than the maximum age: their contributions are of another night`,
      'score them, then reduce',
    );
  const broken = await incomplete(wh, chosen);
  if (broken.length > 0)
    throw new FailedError(
      `the contributions of shards ${broken.map(name).join(', ')} are incomplete (a run stopped while committing them)`,
      'score those shards again, then reduce',
    );
  await keepChosen(wh, chosen);
  return chosen;
}

/** The chosen contributions' rows of every table, in acc_lake_<table> (statistics and histograms without the shard columns). */
async function keepChosen(wh: Warehouse, chosen: Contribution[]): Promise<void> {
  const list = chosen.map((c) => `(${c.shard_index}, ${c.shard_count}, '${c.run_id.replace(/'/g, "''")}')`).join(', ');
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE acc_lake_chosen AS SELECT * FROM (VALUES ${list}) AS t(shard_index, shard_count, run_id)`,
  );
  for (const name of ['stats', 'histograms'] as const) {
    const columns = COLUMNS[name].map((c) => c.name).join(', ');
    await wh.run(`CREATE OR REPLACE TEMP TABLE acc_lake_${name}_chosen AS
      SELECT ${columns} FROM temp.acc_lake_${name} JOIN temp.acc_lake_chosen USING (shard_index, shard_count, run_id)`);
    await wh.run(`DROP TABLE temp.acc_lake_${name}`);
    await wh.run(`ALTER TABLE temp.acc_lake_${name}_chosen RENAME TO acc_lake_${name}`);
  }
}

/** The chosen contributions whose rows of a table are not those their manifest counted: another run's, or fewer. */
async function incomplete(wh: Warehouse, chosen: Contribution[]): Promise<Contribution[]> {
  const broken: Contribution[] = [];
  for (const c of chosen) {
    const counts = JSON.parse(c.counts) as Record<string, number>;
    for (const name of PARTS) {
      const [{ n, mine }] = await wh.all<{ n: bigint; mine: bigint }>(
        `SELECT count(*) AS n, count(*) FILTER (WHERE run_id = $1) AS mine FROM temp.acc_lake_${name}
          WHERE shard_index = ${c.shard_index} AND shard_count = ${c.shard_count}`,
        [c.run_id],
      );
      if (Number(n) !== counts[name] || Number(mine) !== counts[name]) {
        broken.push(c);
        break;
      }
    }
  }
  return broken;
}

/** The report as a warehouse's: the shards' series of the first sites by id, their flag counts by site and flag. */
async function writeLakeReport(
  wh: Warehouse,
  path: string,
  rows: AccuracyRow[],
  settings: AccuracySettings,
  skipped: SkippedSite[],
  run: LakeRun,
  shards: number,
): Promise<void> {
  const series = await wh.all<{ site: string; time: Date } & Omit<SeriesPoint, 'site' | 'time'>>(`
    SELECT s.site, s.time, s.forecast, s.actual, s.reference FROM temp.acc_lake_series s
    JOIN temp.acc_lake_chosen USING (shard_index, shard_count, run_id)
    WHERE s.site_id IN (SELECT DISTINCT site_id FROM temp.acc_lake_series JOIN temp.acc_lake_chosen USING (shard_index, shard_count, run_id)
      ORDER BY site_id NULLS FIRST LIMIT ${SERIES_SITES})
    ORDER BY s.site_id, s.time`);
  const flags = await wh.all<FlagCount & { count: bigint }>(`
    SELECT f.site, f.flag, f.count FROM temp.acc_lake_flags f JOIN temp.acc_lake_chosen USING (shard_index, shard_count, run_id)`);
  const bit = (flag: string) => FLAGS[flag as FlagName] ?? 0;
  // as countFlags orders them: by name (bytes, as DuckDB compares text), then bit
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  await writeReport(path, {
    title: 'Forecast accuracy',
    rows,
    series: series.map((p) => ({ ...p, time: p.time.getTime() })),
    generatedAt: run.now,
    flags: flags
      .map((f) => ({ ...f, count: Number(f.count) }))
      .sort((a, b) => byName(a.site, b.site) || bit(a.flag) - bit(b.flag)),
    includeFlagged: settings.includeFlagged === true,
    notes: reportNotes(settings, skipped, `the lake ${run.lake}, ${shards} shards`),
  });
}
