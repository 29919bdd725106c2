// The metric SQL: every metric is computed by DuckDB over a relation of aligned pairs; only the
// small table of results comes back to JavaScript. Definitions follow the Solar Forecast Arbiter
// (metrics/deterministic.py, probabilistic.py); docs/accuracy.md says each in plain words.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { EVENT_FIELDS, eventFields, type Contingency, type EventDefinition } from './events.js';
import { groupSql, type Group } from './groups.js';
import { LEVEL_METRICS, levelFields, skillScore, type LevelMetric } from './probabilistic.js';
import type { MetricOptions, SingleSubject } from './options.js';
import {
  binnedSql,
  DROP_REASONS,
  groupKeys,
  groupPartSql,
  histogramSql,
  mergedStatsSql,
  statsEngine,
  statsSql,
} from './stats.js';

// The pairs relation every source (warehouse alignment, a CSV file, the bench) produces is declared
// in ../input/relation.ts: its columns, their types and meanings.

/** What the engine needs of a connection: Warehouse has it, and so does `connectionRunner`. */
export interface SqlRunner {
  all<T = Record<string, unknown>>(sql: string, params?: DuckDBValue[]): Promise<T[]>;
  run(sql: string, params?: DuckDBValue[]): Promise<void>;
}

export function connectionRunner(connection: DuckDBConnection): SqlRunner {
  return {
    async all<T>(sql: string, params?: DuckDBValue[]) {
      return (await connection.runAndReadAll(sql, params)).getRowObjectsJS() as T[];
    },
    async run(sql: string, params?: DuckDBValue[]) {
      await connection.run(sql, params);
    },
  };
}

/** One result row: a subject (and model) in one group key, with its metric values by name. */
export interface AccuracyRow {
  subject: string;
  model: string | null;
  group: Group;
  key: string;
  keyOrder: number;
  n: number;
  values: Record<string, number>;
}

/** Field names of result rows by kind; `orderedNames` gives the order they are printed in. */
export const COUNT_FIELDS = ['dropped', ...DROP_REASONS.map((r) => `dropped_${r}`), 'mape_skipped'];
export const POINT_METRICS = [
  'mae',
  'mbe',
  'rmse',
  'mape',
  'nmae',
  'nmbe',
  'nrmse',
  'r',
  'r2',
  'crmse',
  'red',
  'ksi',
  'over',
  'cpi',
] as const;
export const REFERENCE_METRICS = ['skill', 'rmse_ref'] as const;
/** SFA's summary statistics (metrics/summary.py), of the scored actuals and forecasts: actual_mean, forecast_std, ... */
const SUMMARY_STATS = ['mean', 'min', 'max', 'median', 'std'] as const;
export const SUMMARY_FIELDS = [
  ...SUMMARY_STATS.map((s) => `actual_${s}`),
  ...SUMMARY_STATS.map((s) => `forecast_${s}`),
] as const;
export const QUANTILE_METRICS = ['crps', 'crps_pinball', 'crps_ref', 'crpss', 'coverage', 'coverage_nominal'] as const;

/** SFA's Vc: the critical value of the Kolmogorov-Smirnov test at the 99% level, 1.63/sqrt(n). */
const KS_CRITICAL = 1.63;

/** Where a group's statistics are: the merged-per-chunk statistics, the histogram, and the pairs they came from. */
export interface StatsSource {
  /** The long statistics relation (stats.ts), any number of chunks per group key. */
  stats: string;
  /** The histogram relation (stats.ts). */
  histogram: string;
  /** The pairs relation, read again only for a group far from 0 (see needsCentring). */
  pairs: string;
}

type Keyed = { subject: string; model: string | null; grp: Group; key: string };
const keyOf = (r: Keyed) => JSON.stringify([r.subject, r.model, r.grp, r.key]);

/** A metric value as a number: SQL NULL (an empty mean, say) becomes NaN, as numpy gives. */
const num = (v: unknown): number => (v === null || v === undefined ? NaN : Number(v));

/**
 * Statistics the SQL leaves out because another one is the same (stats.ts): every scored pair
 * has its actual, and without a deadband f − o is the error itself.
 */
const SAME_AS: Record<string, string> = { n_o: 'n', s_d: 's_e', s_dd: 's_sq' };

/** A statistic by name; NaN where a group has none (the sum of nothing), 0 for a drop count. */
function statOf(stats: Map<string, number>, name: string): number {
  // the pairs with a forecast whose actual is at or below the MAPE floor
  if (name === 'mape_skipped') return (stats.get('n_point') ?? 0) - (stats.get('n_ape') ?? 0);
  const value = stats.get(name) ?? (name in SAME_AS ? stats.get(SAME_AS[name]) : undefined);
  return value ?? (COUNT_FIELDS.includes(name) ? 0 : NaN);
}

/** One group key's merged statistics by name. */
interface GroupStats extends Keyed {
  keyOrder: number;
  stats: Map<string, number>;
}

/**
 * Scores the pairs relation `pairs` (and quantile relation `quantiles`, when given): its
 * statistics in two temp tables (one chunk), then every metric from them. Returns one row per
 * subject, model, group and key, sorted. `single` says the relation holds one subject and model.
 */
export async function computeMetrics(
  sql: SqlRunner,
  pairs: string,
  quantiles: string | null,
  options: MetricOptions,
  single?: SingleSubject,
): Promise<AccuracyRow[]> {
  const engine = await statsEngine(sql);
  await sql.run(
    `CREATE OR REPLACE TEMP TABLE acc_stats AS ${statsSql(pairs, quantiles, options, null, engine, single)}`,
  );
  const [{ dropped }] = await sql.all<{ dropped: bigint }>(
    `SELECT count(*) AS dropped FROM acc_stats WHERE name = 'dropped' AND value > 0`,
  );
  await sql.run(
    `CREATE OR REPLACE TEMP TABLE acc_histogram AS ${histogramSql(pairs, options, engine, single, dropped === 0n)}`,
  );
  try {
    return await metricsFromStats(sql, { stats: 'acc_stats', histogram: 'acc_histogram', pairs }, options, single);
  } finally {
    await sql.run('DROP TABLE IF EXISTS acc_stats');
    await sql.run('DROP TABLE IF EXISTS acc_histogram');
  }
}

/**
 * The histograms are read a hash partition of their group keys at a time: the running counts
 * over every group's bins in one statement (binnedSql: a window, a join, a sort) hold them all at
 * once, the largest statement of a score.
 */
const BINNED_PARTS = 4;

/** Every metric of every group key from stored statistics (stats.ts). */
export async function metricsFromStats(
  sql: SqlRunner,
  source: StatsSource,
  options: MetricOptions,
  single?: SingleSubject,
): Promise<AccuracyRow[]> {
  const groups = new Map<string, GroupStats>();
  for (const r of await sql.all<Keyed & { key_order: number; name: string; value: number | null }>(
    mergedStatsSql(source.stats),
  )) {
    const id = keyOf(r);
    let g = groups.get(id);
    if (!g) {
      g = { subject: r.subject, model: r.model, grp: r.grp, key: r.key, keyOrder: num(r.key_order), stats: new Map() };
      groups.set(id, g);
    }
    g.stats.set(r.name, num(r.value));
  }
  const binned = new Map<string, Record<string, unknown>>();
  for (let part = 0; part < BINNED_PARTS; part++) {
    const histogram = `(SELECT * FROM ${source.histogram} WHERE ${groupPartSql(part, BINNED_PARTS)})`;
    for (const r of await sql.all<Keyed & Record<string, unknown>>(binnedSql(histogram, KS_CRITICAL))) {
      binned.set(keyOf(r), r);
    }
  }
  const points = [...groups.values()].filter((g) => g.stats.has('n'));
  const centred = await centredMoments(sql, source.pairs, points.filter(needsCentring), options, single);
  const rows = new Map<string, AccuracyRow>();
  for (const g of points) rows.set(keyOf(g), pointRow(g, binned.get(keyOf(g)), centred.get(keyOf(g)), options));
  addQuantileMetrics(groups, rows);
  if (options.events?.length) addEventMetrics(groups, options.events, rows);
  return [...rows.values()].sort(compareRows(options.groups));
}

/** The moments of a group: means, population variances and covariance of o and f, and of d = f − o. */
interface Moments {
  meanO: number;
  meanF: number;
  varO: number;
  varF: number;
  cov: number;
  meanD: number;
  varD: number;
}

/**
 * Moments from the raw sums: E[x²] − E[x]², which loses about ε · (1 + mean² / variance) of the
 * variance (summing adds a little more); a group where that could exceed about 1e-12 is
 * centred instead (needsCentring). A series whose minimum is its maximum has variance 0 exactly.
 */
function rawMoments(s: Map<string, number>): Moments {
  const get = (name: string) => statOf(s, name);
  const n = get('n_point');
  const meanO = get('s_o') / get('n_o');
  const meanF = get('s_f') / get('n_f');
  const variance = (sq: number, mean: number, count: number, constant: boolean) =>
    constant ? 0 : Math.max(0, sq / count - mean * mean);
  const meanD = get('s_d') / n;
  return {
    meanO,
    meanF,
    varO: variance(get('s_oo'), meanO, get('n_o'), get('min_o') === get('max_o')),
    varF: variance(get('s_ff'), meanF, get('n_f'), get('min_f') === get('max_f')),
    cov: get('s_fo') / n - meanO * meanF,
    meanD,
    varD: variance(get('s_dd'), meanD, n, false),
  };
}

/** How far from 0, in standard deviations, a group may lie before its raw moments lose digits. */
const FAR = 10;
/**
 * How far actuals and forecasts may lie from 0 in standard deviations of their difference before
 * f − o itself loses digits (about ε · |o| / σ of each difference): where it could exceed 1e-12.
 */
const FAR_DIFFERENCE = 1e4;

/**
 * Whether a group's moments need the centred pass: a mean of the actuals, forecasts or errors
 * more than FAR of their own standard deviations from 0 (the raw sums lose digits), or actuals or
 * forecasts more than FAR_DIFFERENCE standard deviations of the errors (f − o itself rounds
 * there). Power data is neither, so the extra pass over the pairs is only paid for large offsets;
 * a constant series is exact either way.
 */
function needsCentring(g: GroupStats): boolean {
  const m = rawMoments(g.stats);
  const far = (mean: number, variance: number, limit: number) => mean !== 0 && mean * mean > limit * limit * variance;
  const constant = (x: string) => g.stats.get(`min_${x}`) === g.stats.get(`max_${x}`);
  if ((g.stats.get('n_point') ?? 0) === 0) {
    return (g.stats.get('n') ?? 0) > 0 && !constant('o') && far(m.meanO, m.varO, FAR);
  }
  return (
    (!constant('o') && far(m.meanO, m.varO, FAR)) ||
    (!constant('f') && far(m.meanF, m.varF, FAR)) ||
    far(m.meanD, m.varD, FAR) ||
    [m.meanO, m.meanF].some((mean) => far(mean, m.varD, FAR_DIFFERENCE))
  );
}

/**
 * The moments of the given group keys from the pairs, centred on their group's means first
 * (numpy's two-pass way): a pass of two averages, joined back, then the running moments of the
 * centred values; (f − mean f) − (o − mean o) as SFA writes it for CRMSE.
 */
async function centredMoments(
  sql: SqlRunner,
  pairs: string,
  far: GroupStats[],
  options: MetricOptions,
  single: SingleSubject | undefined,
): Promise<Map<string, Moments>> {
  const moments = new Map<string, Moments>();
  for (const group of new Set(far.map((g) => g.grp))) {
    const k = groupKeys(group, options, single);
    const keys = k.columns.map((c) => `${c}, `).join('');
    const by = k.columns.length ? `GROUP BY ${k.columns.join(', ')}` : '';
    const same = k.columns.map((c) => `v.${c} IS NOT DISTINCT FROM m.${c}`).join(' AND ') || 'TRUE';
    // NOT MATERIALIZED: read twice, the CTE would otherwise be materialized whole (every pair of
    // the ledger, expanded); computed twice, each pass streams and holds one row per group key.
    const rows = await sql.all<Keyed & Record<string, number | null>>(`
WITH scored AS NOT MATERIALIZED (
  SELECT *, CASE WHEN drop_reason IS NULL THEN forecast END AS f, CASE WHEN drop_reason IS NULL THEN actual END AS o
  FROM (${expandedSql(pairs, group, options)})
),
centres AS (SELECT ${keys} avg(o) AS centre_o, avg(f) AS centre_f FROM scored ${by}),
centred AS (SELECT v.*, o - centre_o AS oc, f - centre_f AS fc FROM scored v JOIN centres m ON ${same})
SELECT ${k.select}, avg(o) AS mean_o, avg(f) AS mean_f, var_pop(oc) AS var_o, var_pop(fc) AS var_f,
  covar_pop(fc, oc) AS cov, avg(f - o) AS mean_d, var_pop(fc - oc) AS var_d
FROM centred ${by}`);
    for (const r of rows) {
      moments.set(keyOf(r), {
        meanO: num(r.mean_o),
        meanF: num(r.mean_f),
        varO: num(r.var_o),
        varF: num(r.var_f),
        cov: num(r.cov),
        meanD: num(r.mean_d),
        varD: num(r.var_d),
      });
    }
  }
  return moments;
}

/** The pairs relation with one group's key and sort order, for the centred pass. */
function expandedSql(pairs: string, group: Group, options: MetricOptions): string {
  const g = groupSql(group, options);
  return `SELECT subject, model, ${g.key} AS key, ${g.order} AS key_order, forecast, actual, drop_reason
    FROM ${pairs} WHERE ${g.key} IS NOT NULL`;
}

/** forecast / observed statistic: 1 when equal (0/0 too), +Infinity when only the observed one is 0 (SFA's _careful_ratio). */
function carefulRatio(observed: number, forecast: number): number {
  if (observed === forecast) return 1;
  if (observed === 0) return Infinity;
  return forecast / observed;
}

/** A group key's point metrics, summary statistics and counts from its statistics. */
function pointRow(
  g: GroupStats,
  binned: Record<string, unknown> | undefined,
  centred: Moments | undefined,
  options: MetricOptions,
): AccuracyRow {
  const s = (name: string) => statOf(g.stats, name);
  const n = s('n_point');
  const m = centred ?? rawMoments(g.stats);
  const hasForecast = s('c_forecast') > 0;
  const stdO = Math.sqrt(m.varO);
  const stdF = Math.sqrt(m.varF);
  const r = m.varO === 0 || m.varF === 0 ? NaN : m.cov / (stdO * stdF);
  const rmse = Math.sqrt(s('s_sq') / n);
  const rmseRef = Math.sqrt(s('s_sq_ref') / s('n_ref'));
  const metrics: Record<string, number> = {
    mae: s('s_abs') / n,
    mbe: s('s_e') / n,
    rmse,
    mape: (100 * s('s_ape')) / (n - s('mape_skipped')),
    nmae: (100 * s('s_abs_norm')) / s('n_norm'),
    nmbe: (100 * s('s_norm')) / s('n_norm'),
    nrmse: 100 * Math.sqrt(s('s_sq_norm') / s('n_norm')),
    r,
    r2: 1 - s('s_dd') / (m.varO * n),
    crmse: Math.sqrt(m.varD),
    // SFA's relative Euclidean distance, its ratios kept finite where both sides are equal (0/0 too)
    red: Math.sqrt((carefulRatio(m.meanO, m.meanF) - 1) ** 2 + (carefulRatio(stdO, stdF) - 1) ** 2 + (r - 1) ** 2),
  };
  const summary: Record<string, number> = {
    actual_mean: m.meanO,
    actual_min: s('min_o'),
    actual_max: s('max_o'),
    actual_median: num(binned?.median_o),
    actual_std: stdO,
    forecast_mean: m.meanF,
    forecast_min: s('min_f'),
    forecast_max: s('max_f'),
    forecast_median: num(binned?.median_f),
    forecast_std: stdF,
  };
  const values: Record<string, number> = {};
  for (const f of COUNT_FIELDS) values[f] = s(f);
  // a quantile set has no single-value forecast to summarise
  for (const f of SUMMARY_FIELDS) if (hasForecast || f.startsWith('actual_')) values[f] = summary[f];
  if (hasForecast) {
    for (const f of POINT_METRICS) if (f in metrics) values[f] = metrics[f];
    if (options.distribution !== false) {
      values.ksi = num(binned?.ksi);
      values.over = num(binned?.over);
      // SFA's CPI; its RMSE ignores any deadband
      values.cpi = (values.ksi + values.over + 2 * Math.sqrt(s('s_dd') / n)) / 4;
    }
    if (s('c_reference') > 0) {
      values.skill = skillScore(rmse, rmseRef);
      values.rmse_ref = rmseRef;
    }
  }
  return { subject: g.subject, model: g.model, group: g.grp, key: g.key, keyOrder: g.keyOrder, n: s('n'), values };
}

/** `stat|suffix` statistics of a group key by suffix (a quantile level, an event name). */
function bySuffix(g: GroupStats): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const [name, value] of g.stats) {
    const at = name.indexOf('|');
    if (at < 0) continue;
    const suffix = name.slice(at + 1);
    if (!out.has(suffix)) out.set(suffix, new Map());
    out.get(suffix)!.set(name.slice(0, at), value);
  }
  return out;
}

/**
 * Per-level metrics (pinball, QSS, Brier score and decomposition) and the set's metrics (CRPS,
 * CRPSS, coverage) of every quantile subject's row. A group whose pairs were all dropped has no
 * sums: its fields are NaN, as for points. Skill scores only where the subject has a reference.
 */
function addQuantileMetrics(groups: Map<string, GroupStats>, rows: Map<string, AccuracyRow>): void {
  const subjectOf = (r: Pick<Keyed, 'subject' | 'model'>) => JSON.stringify([r.subject, r.model]);
  const quantileGroups = [...groups.values()].filter((g) => g.stats.has('n_crps'));
  const referenced = new Set(quantileGroups.filter((g) => (g.stats.get('n_crps_ref') ?? 0) > 0).map(subjectOf));
  // every field a subject has, to fill with NaN where a group has no pairs
  const known = new Map<string, Set<string>>();
  for (const g of quantileGroups) {
    const row = rows.get(keyOf(g));
    const subject = subjectOf(g);
    const s = (name: string) => g.stats.get(name) ?? NaN;
    for (const [suffix, level] of bySuffix(g)) {
      const l = (name: string) => level.get(name) ?? NaN;
      const values = levelFields(
        {
          level: Number(suffix),
          n: l('n'),
          below: l('below'),
          pinball: l('s_pinball') / l('n'),
          pinballRef: l('s_pinball_ref') / l('n_ref'),
        },
        referenced.has(subject),
      );
      if (row) Object.assign(row.values, values);
      known.set(subject, new Set([...(known.get(subject) ?? []), ...Object.keys(values)]));
    }
    if (!row) continue;
    row.values.crps = s('s_crps') / s('n_crps');
    row.values.crps_pinball = s('s_crps_pinball') / s('n_crps_pinball');
    row.values.coverage = s('s_covered') / s('n_covered');
    row.values.coverage_nominal = s('s_nominal') / s('n_nominal');
    if (s('n_crps_ref') > 0) {
      row.values.crps_ref = s('s_crps_ref') / s('n_crps_ref');
      row.values.crpss = skillScore(row.values.crps, row.values.crps_ref);
    }
  }
  for (const row of rows.values()) {
    const subject = subjectOf(row);
    const names = known.get(subject);
    if (!names) continue;
    for (const name of names) row.values[name] ??= NaN;
    for (const m of QUANTILE_METRICS) {
      if (referenced.has(subject) || (m !== 'crps_ref' && m !== 'crpss')) row.values[m] ??= NaN;
    }
  }
}

/**
 * Event fields of every single-value subject's row; a group no pair of which could be judged
 * (all dropped, or no pair `span` earlier) has counts 0 and metrics NaN.
 */
function addEventMetrics(
  groups: Map<string, GroupStats>,
  events: EventDefinition[],
  rows: Map<string, AccuracyRow>,
): void {
  for (const row of rows.values()) {
    if (!('mae' in row.values)) continue; // a quantile set has no single value to judge
    const counts = bySuffix(groups.get(keyOf({ ...row, grp: row.group }))!);
    for (const e of events) {
      const c = counts.get(e.name);
      const count = (stat: keyof Contingency) => c?.get(stat) ?? 0;
      Object.assign(
        row.values,
        eventFields(e.name, { tp: count('tp'), fp: count('fp'), tn: count('tn'), fn: count('fn') }),
      );
    }
  }
}

function compareRows(groups: Group[]) {
  return (a: AccuracyRow, b: AccuracyRow): number =>
    a.subject.localeCompare(b.subject) ||
    (a.model ?? '').localeCompare(b.model ?? '') ||
    groups.indexOf(a.group) - groups.indexOf(b.group) ||
    a.keyOrder - b.keyOrder ||
    a.key.localeCompare(b.key);
}

/** Field names of a row in output order: counts, point metrics, skill, pinball by level, quantile metrics. */
export function orderedNames(values: Record<string, number>): string[] {
  // per-level fields metric by metric (all pinball_q.., then qss_q.., ...), each by level
  const levelName = new RegExp(`^(${LEVEL_METRICS.join('|')})_q([0-9.]+)$`);
  const byLevel = Object.keys(values)
    .flatMap((k) => {
      const m = levelName.exec(k);
      return m ? [{ k, metric: LEVEL_METRICS.indexOf(m[1] as LevelMetric), level: Number(m[2]) }] : [];
    })
    .sort((a, b) => a.metric - b.metric || a.level - b.level)
    .map((f) => f.k);
  const fixed = [
    ...COUNT_FIELDS,
    ...POINT_METRICS.slice(0, 7),
    ...REFERENCE_METRICS,
    ...POINT_METRICS.slice(7),
    ...SUMMARY_FIELDS,
  ];
  // event fields last, event by event (in the order they were defined), each in EVENT_FIELDS order
  const eventField = new RegExp(`^(?:${EVENT_FIELDS.join('|')})_(.+)$`);
  const events = [...new Set(Object.keys(values).flatMap((k) => eventField.exec(k)?.[1] ?? []))];
  return [
    ...fixed.filter((k) => k in values),
    ...byLevel,
    ...QUANTILE_METRICS.filter((k) => k in values),
    ...events.flatMap((e) => EVENT_FIELDS.map((f) => `${f}_${e}`).filter((k) => k in values)),
  ];
}
