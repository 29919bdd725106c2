// The two ways in: score the warehouse (alignment, then metrics), or score a table or CSV file
// of pairs (no service, no warehouse: an in-memory DuckDB). Both return the same rows.
import { sqlList } from '../warehouse/sql.js';
import { RequestError } from '../errors.js';
import { type Config, qualitySettingsFromConfig } from '../config.js';
import { DAY, formatInstant } from '../time.js';
import { openDuckDB } from '../warehouse/duckdb.js';
import { handBackMemory, handBackPool } from '../warehouse/executor.js';
import { type QualitySettings, reflagActuals } from '../warehouse/flags.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { alignWarehouse, dropAlignment, type AlignOptions, type SkippedSite } from './input/align.js';
import type { IntervalLabel } from '../warehouse/rows.js';
import type { Group } from './compute/groups.js';
import {
  computeMetrics,
  connectionRunner,
  metricsFromStats,
  type AccuracyRow,
  type SqlRunner,
} from './compute/metrics.js';
import type { MetricOptions } from './compute/options.js';
import { statsKeeper } from './compute/stats-store.js';
import {
  flatFlagCounts,
  flatPairsSql,
  flatQuantilesSql,
  loadPairsCsv,
  validatePairsCsv,
  type PairsColumns,
} from './input/pairs.js';
import { referencePeriodMs } from './input/reference.js';
import { refreshCapacityWindows } from '../capacity/windows.js';
import { countFlags, type FlagCount } from './input/quality.js';
import { reportSeries, writeReport, type SeriesPoint } from './output/report.js';
import { storeAccuracy } from './output/store.js';
import { faultPoint } from '../fault.js';
import { dropRefresh, LEDGER_PAIRS, LEDGER_QUANTILES, refreshLedger, type LedgerRefresh } from './input/incremental.js';
import { withFlagsFlushing } from '../warehouse/settings.js';

export interface AccuracyResult {
  rows: AccuracyRow[];
  /** Sites left out of a warehouse run, with the reason. */
  skipped: SkippedSite[];
  /** Forecast, actual and reference of the latest days per site, for the report's first plot. */
  series: SeriesPoint[];
  /** For a pairs file's report: its flagged actuals per site and flag (its flags column). */
  flags?: FlagCount[];
  /** How a warehouse run brought its pairs up to date (incremental.ts). */
  ledger?: LedgerRefresh;
}

/**
 * Who scores and when: the run's id and clock, and the run's signal (a first SIGINT/SIGTERM, the
 * run's timeout), which stops a score between two batches of its alignment or two slices of its
 * statistics, their work committed: stopped in the alignment, the ledger has no state and the
 * next run aligns in full; in the statistics, the next run computes the days still pending.
 */
export interface ScoreMeta {
  runId: string;
  now: number;
  signal?: AbortSignal;
}

export interface ScoreExtras {
  /** Also read the series the report plots. */
  withSeries?: boolean;
  /** Score pairs whose actual is flagged too (a pairs file's `flags` column). */
  includeFlagged?: boolean;
}

export async function scoreWarehouse(
  sql: SqlRunner,
  options: MetricOptions & AlignOptions & ScoreExtras,
): Promise<AccuracyResult> {
  const aligned = await alignWarehouse(sql, options);
  try {
    const rows = await computeMetrics(sql, aligned.pairs, aligned.quantiles, options);
    const series = options.withSeries ? await namedBySite(sql, await reportSeries(sql, aligned.pairs)) : [];
    return { rows, skipped: aligned.skipped, series };
  } finally {
    await dropAlignment(sql);
  }
}

/**
 * Scores the warehouse from its ledger of pairs, brought up to date first: only the new and
 * changed pairs are aligned, unless `full` or the settings changed (incremental.ts).
 */
export async function scoreWithLedger(
  warehouse: Warehouse,
  options: MetricOptions & AlignOptions & ScoreExtras & { full?: boolean },
  meta: ScoreMeta,
): Promise<AccuracyResult> {
  const stats = statsKeeper(warehouse, options, {
    ...meta,
    ledgerPairs: LEDGER_PAIRS,
    ledgerQuantiles: LEDGER_QUANTILES,
    batchPoints: options.batchPoints,
  });
  try {
    const ledger = await refreshLedger(warehouse, options, { ...meta, full: options.full, listener: stats.listener });
    faultPoint('accuracy-ledger');
    ledger.stats = stats.result();
    // The metrics read the stored statistics alone, not what saving the ledger's state cached.
    await handBackPool(warehouse);
    const rows = await metricsFromStats(
      warehouse,
      { stats: 'accuracy_stats', histogram: 'accuracy_histograms', pairs: LEDGER_PAIRS },
      options,
    );
    const series = options.withSeries ? await seriesAlone(warehouse) : [];
    return { rows, skipped: ledger.skipped, series, ledger };
  } finally {
    await stats.drop();
    await dropRefresh(warehouse);
    await dropAlignment(warehouse);
  }
}

/**
 * The report's series, a scan of the whole ledger, on an empty pool and leaving one, so that
 * neither it starts on what the metrics' bins read nor the flags' count after it on what it read.
 */
async function seriesAlone(warehouse: Warehouse): Promise<SeriesPoint[]> {
  await handBackPool(warehouse);
  const series = await namedBySite(warehouse, await reportSeries(warehouse, LEDGER_PAIRS));
  await handBackPool(warehouse);
  return series;
}

/** The report names sites as people know them, not by id. */
async function namedBySite(sql: SqlRunner, series: SeriesPoint[]): Promise<SeriesPoint[]> {
  const names = new Map(
    (await sql.all<{ site_id: string; name: string }>('SELECT site_id, name FROM acc_chosen')).map((s) => [
      s.site_id,
      s.name,
    ]),
  );
  return series.map((p) => ({ ...p, site: p.site === null ? null : (names.get(p.site) ?? p.site) }));
}

/** Groups a flat pairs table can be split by: lead needs issue_time, site a site column. */
function checkGroupsForPairs(groups: Group[], columns: PairsColumns): void {
  if (groups.includes('lead') && !columns.issueTime)
    throw new RequestError('--by lead needs an issue_time column in the pairs file');
  if (groups.includes('site') && !columns.site)
    throw new RequestError('--by site needs a site column in the pairs file');
  if (groups.includes('model'))
    throw new RequestError(
      '--by model groups the warehouse site forecast by serving model; a pairs file scores each model column value as its own row instead',
    );
}

/** Scores a flat table of pairs already in `sql`'s database (a loaded CSV, or the bench table). */
export async function scorePairsTable(
  sql: SqlRunner,
  table: string,
  columns: PairsColumns,
  label: IntervalLabel,
  options: MetricOptions & ScoreExtras,
): Promise<AccuracyResult> {
  checkGroupsForPairs(options.groups, columns);
  await sql.run(
    `CREATE OR REPLACE TEMP VIEW acc_flat_pairs AS SELECT * FROM ${flatPairsSql(table, columns, label, options.includeFlagged)}`,
  );
  const quantiles = flatQuantilesSql(table, columns);
  if (quantiles) await sql.run(`CREATE OR REPLACE TEMP VIEW acc_flat_quantiles AS SELECT * FROM ${quantiles}`);
  // without a model column, every row is subject 'pairs' with no model
  const single = columns.model ? undefined : { subject: 'pairs', model: null };
  const rows = await computeMetrics(sql, 'acc_flat_pairs', quantiles ? 'acc_flat_quantiles' : null, options, single);
  const series = options.withSeries ? await reportSeries(sql, 'acc_flat_pairs') : [];
  const flags = options.withSeries && columns.flags ? await flatFlagCounts(sql, table, columns) : undefined;
  return { rows, skipped: [], series, flags };
}

/** Scores a CSV of pairs: checked line by line, loaded with DuckDB's reader into memory. */
export async function scorePairsFile(
  file: string,
  label: IntervalLabel,
  options: MetricOptions & ScoreExtras,
): Promise<AccuracyResult> {
  const columns = await validatePairsCsv(file);
  const db = await openDuckDB(':memory:');
  try {
    const sql = connectionRunner(db.connection);
    await loadPairsCsv(sql, file, columns, 'csv_pairs');
    return await scorePairsTable(sql, 'csv_pairs', columns, label, options);
  } finally {
    db.close();
  }
}

export interface AccuracySettings extends MetricOptions, AlignOptions {
  /** Where to write the HTML report; null for none. */
  reportPath: string | null;
  /** Thresholds of the data-quality flags, recomputed over the window before scoring. */
  quality: QualitySettings;
  /** The capacity files whose outage windows flag actuals (capacity.dir). */
  capacityDir: string;
  /** Align every pair again rather than only the new and changed ones (--full). */
  full?: boolean;
}

/**
 * Settings from the config's accuracy section and the service's interval labels
 * (`service.interval_label`: interval-beginning unless configured, as the service's guides show;
 * docs/interface-assumptions.md) and the capacity files' folder (outage windows flag actuals),
 * before command-line overrides.
 */
export function settingsFromConfig(
  accuracy: Config['accuracy'],
  labels: Config['service']['interval_label'],
  capacityDir: string,
): AccuracySettings {
  return {
    quality: qualitySettingsFromConfig(accuracy.quality, labels.actuals),
    capacityDir,
    groups: ['total', 'lead', 'hour'],
    tz: accuracy.tz,
    leadBuckets: accuracy.lead_buckets,
    deadbandPct: accuracy.deadband_pct,
    maxMissingPct: accuracy.max_missing_pct,
    batchPoints: accuracy.batch_points,
    mapeMinActualPct: accuracy.mape_min_actual_pct,
    events: accuracy.events,
    forecastLabel: labels.forecasts,
    actualLabel: labels.actuals,
    reportPath: null,
  };
}

/** The report needs the lead and hour groups whatever was asked for the table. */
function groupsFor(settings: AccuracySettings): Group[] {
  return settings.reportPath ? withReportGroups(settings.groups) : settings.groups;
}

/** The groups asked for and those the report plots. */
export function withReportGroups(groups: Group[]): Group[] {
  return [...new Set<Group>([...groups, 'total', 'lead', 'hour'])];
}

export function reportNotes(settings: AccuracySettings, skipped: SkippedSite[], source: string): string[] {
  const window = `${settings.from === undefined ? 'the start' : formatInstant(settings.from)} to ${settings.to === undefined ? 'the end' : formatInstant(settings.to)}`;
  return [
    `Source: ${source}; valid times from ${window}.`,
    `Hours, weekdays and dates in ${settings.tz}; forecast intervals labelled ${settings.forecastLabel}, actuals ${settings.actualLabel}.`,
    ...skipped.map((s) => `Site ${s.siteId} left out: ${s.reason}.`),
  ];
}

export interface WarehouseRun {
  result: AccuracyResult;
  /** Rows written per table. */
  written: Record<string, number>;
  reportPath: string | null;
}

/** How far before its window a score reads actuals: the week-ahead reference, and a day for the intervals around it. */
export const HISTORY_REACH = referencePeriodMs('load') + DAY;

/** Scores the warehouse, writes the report when asked, and stores the results: the accuracy job's body. */
export async function runWarehouseAccuracy(
  warehouse: Warehouse,
  settings: AccuracySettings,
  meta: ScoreMeta,
): Promise<WarehouseRun> {
  // Days older than the hot window are in the cold store: the score reads them through it.
  const reach = settings.from === undefined ? undefined : await historyFrom(warehouse, settings.from);
  return warehouse.cold.withHistory(reach, () => scoreWithHistory(warehouse, settings, meta));
}

/**
 * The earliest valid time a score of the window from `from` reads, so that it sees the rows a
 * warehouse keeping every day hot holds: a pair's reference actual lies k persistence periods
 * before its valid time, k the fewest that reach back to its issue time, so at most the longest
 * lead (of the hot vintages) rounded up to whole weeks (the longest period, load's); an
 * incremental score also counts the points of the ledger's last window, which starts earlier
 * after missed nights (undefined: open at its start, every day); a day covers the intervals
 * around them.
 */
async function historyFrom(warehouse: Warehouse, from: number): Promise<number | undefined> {
  const [ledger] = await warehouse.all<{ window_from: Date | null }>('SELECT window_from FROM accuracy_ledger_state');
  if (ledger && ledger.window_from === null) return undefined;
  const [{ lead }] = await warehouse.all<{ lead: number | null }>(
    `SELECT greatest((SELECT max(epoch_ms(valid_time) - epoch_ms(update_time)) FROM forecasts),
       (SELECT max(epoch_ms(valid_time) - epoch_ms(as_of)) FROM model_outputs))::DOUBLE AS lead`,
  );
  const period = referencePeriodMs('load');
  const start = Math.min(from, ledger?.window_from?.getTime() ?? from);
  return start - Math.max(1, Math.ceil((lead ?? 0) / period)) * period - DAY;
}

/** A warehouse's score before it is stored: the results, the groups scored and the flags the report shows. */
export interface Scored {
  result: AccuracyResult;
  groups: Group[];
  /** The window's flagged actuals per site and flag (the report's last table). */
  flags: FlagCount[];
}

/**
 * Flags the window's actuals again and scores the warehouse from its ledger: what a warehouse
 * run stores, and what a lake shard contributes (src/accuracy/lake.ts, which reads the report's
 * series and flags itself, from the ledger the score leaves).
 */
export async function scoreAndFlag(warehouse: Warehouse, settings: AccuracySettings, meta: ScoreMeta): Promise<Scored> {
  const groups = groupsFor(settings);
  // Flags follow today's thresholds, capacity timeline and outage windows, not those of the load.
  const sites = await chosenSiteIds(warehouse, settings.sites);
  await warehouse.transaction(() => refreshCapacityWindows(warehouse, settings.capacityDir));
  await withFlagsFlushing(warehouse, () =>
    reflagActuals(warehouse, settings.quality, { sites, fromMs: settings.from, now: meta.now }),
  );
  const withSeries = settings.reportPath !== null;
  const result = await scoreWithLedger(warehouse, { ...settings, groups, withSeries }, meta);
  const flags = withSeries ? await countFlags(warehouse, { sites, fromMs: settings.from, toMs: settings.to }) : [];
  return { result, groups, flags };
}

async function scoreWithHistory(
  warehouse: Warehouse,
  settings: AccuracySettings,
  meta: ScoreMeta,
): Promise<WarehouseRun> {
  const { result, groups, flags } = await scoreAndFlag(warehouse, settings, meta);
  if (settings.reportPath) {
    // The plots are drawn from what scoring leaves, not on top of it (in a worker: plots.ts).
    await handBackMemory(warehouse);
    await writeReport(settings.reportPath, {
      title: 'Forecast accuracy',
      rows: result.rows,
      series: result.series,
      generatedAt: meta.now,
      flags,
      includeFlagged: settings.includeFlagged === true,
      notes: reportNotes(settings, result.skipped, 'the warehouse'),
    });
  }
  const written = await storeAccuracy(
    warehouse,
    {
      runId: meta.runId,
      scoredAt: meta.now,
      source: 'warehouse',
      from: settings.from,
      to: settings.to,
      sites: settings.sites,
      models: settings.models,
      groups,
      tz: settings.tz,
      forecastLabel: settings.forecastLabel,
      actualLabel: settings.actualLabel,
      deadbandPct: settings.deadbandPct,
      maxMissingPct: settings.maxMissingPct,
      mapeMinActualPct: settings.mapeMinActualPct,
      skipped: result.skipped,
      reportPath: settings.reportPath ?? undefined,
      mode: result.ledger?.mode,
      pairsAligned: result.ledger?.pairsAligned,
    },
    result.rows,
  );
  // the pairs aligned were written to the ledger (accuracy_pairs)
  return {
    result,
    written: { ...written, accuracy_pairs: result.ledger?.pairsAligned ?? 0 },
    reportPath: settings.reportPath,
  };
}

/** The ids of the sites named by id or name (all sites when none are named). */
async function chosenSiteIds(sql: SqlRunner, sites: string[] | undefined): Promise<string[] | undefined> {
  if (!sites?.length) return undefined;
  const list = sqlList(sites);
  const rows = await sql.all<{ site_id: string }>(
    `SELECT site_id FROM sites WHERE site_id IN (${list}) OR name IN (${list})`,
  );
  return rows.map((r) => r.site_id);
}

/** Scores a CSV of pairs and writes the report when asked; nothing is stored. */
export async function runPairsAccuracy(file: string, settings: AccuracySettings, now: number): Promise<AccuracyResult> {
  // The report plots hours; lead times only when the file has issue times and they were asked for.
  const groups = settings.reportPath ? [...new Set<Group>([...settings.groups, 'total', 'hour'])] : settings.groups;
  const result = await scorePairsFile(file, settings.forecastLabel, {
    ...settings,
    groups,
    withSeries: settings.reportPath !== null,
  });
  if (settings.reportPath) {
    await writeReport(settings.reportPath, {
      title: `Forecast accuracy: ${file}`,
      rows: result.rows,
      series: result.series,
      generatedAt: now,
      flags: result.flags,
      includeFlagged: settings.includeFlagged === true,
      notes: reportNotes(settings, [], file),
    });
  }
  return result;
}
