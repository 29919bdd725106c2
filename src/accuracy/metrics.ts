// The metric SQL: every metric is computed by DuckDB over a relation of aligned pairs; only the
// small table of results comes back to JavaScript. Definitions follow the Solar Forecast Arbiter
// (metrics/deterministic.py, probabilistic.py); docs/accuracy.md says each in plain words.
import { quoteLiteral } from '../warehouse/sql.js';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { EVENT_FIELDS, eventFields, eventPairsSql, type Contingency, type EventDefinition } from './events.js';
import { groupSql, type Group, type GroupOptions } from './groups.js';
import { LEVEL_METRICS, levelFields, skillScore, type LevelMetric, type LevelSums } from './probabilistic.js';

/*
 * The pairs relation every source (warehouse alignment, a CSV file, the bench) produces, one row
 * per forecast point, scored or dropped (its columns):
 *   pid BIGINT            unique per row; quantiles refer to it
 *   subject VARCHAR       'forecast' (site forecast), 'model' (one model's output), 'quantiles', 'pairs'
 *   model VARCHAR         the model scored (NULL for the site forecast, quantile sets and plain pairs)
 *   site_id VARCHAR       the site (NULL when unknown)
 *   served_model VARCHAR  the model that served a site-forecast value (group `model`), else NULL
 *   issue_time, valid_time, group_time TIMESTAMPTZ (group_time: see groupTimeSql)
 *   forecast, actual, reference, capacity DOUBLE
 *   drop_reason VARCHAR   NULL when scored, else 'actual' | 'flagged' (its actual failed a data-quality check)
 *                         | 'forecast' | 'reference' | 'quantiles'
 * Quantile forecasts live beside it as (pid, level DOUBLE in (0,1), q DOUBLE), complete for every
 * scored pid (an incomplete set is dropped with reason 'quantiles').
 */

const DROP_REASONS = ['actual', 'flagged', 'forecast', 'reference', 'quantiles'] as const;

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

export interface MetricOptions extends GroupOptions {
  groups: Group[];
  /** Errors within this percentage of the actual count as zero (SFA's deadband); 0 for none. */
  deadbandPct: number;
  /** MAPE skips actuals at or below this percentage of capacity (or exactly zero without capacity). */
  mapeMinActualPct: number;
  /** Compute KSI, OVER and CPI (default true): they sort every value, the rest is one pass. */
  distribution?: boolean;
  /** Threshold and ramp events scored by the event metrics (none when absent). */
  events?: EventDefinition[];
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

/**
 * When the pairs relation holds one subject (a pairs file without a model column), its subject
 * and model are written into the results instead of grouped by: text keys in a GROUP BY over
 * millions of rows made the metrics pass about twice as slow as an ungrouped aggregate.
 */
export interface SingleSubject {
  subject: string;
  model: string | null;
}

/** The pairs relation expanded once per group, with the group's key: what quantile metrics read. */
function allGroupsSql(pairs: string, options: MetricOptions): string {
  return options.groups
    .map((group) => {
      const g = groupSql(group, options);
      return `SELECT subject, model, '${group}' AS grp, ${g.key} AS key, pid, actual, reference, drop_reason
      FROM ${pairs} WHERE ${g.key} IS NOT NULL`;
    })
    .join('\nUNION ALL\n');
}

const KEYS = 'subject, model, grp, key';

/**
 * The pairs relation with one group's key and sort order; rows whose key is NULL are not in it.
 * Where the sort number gives the key, the key is left out (see GroupSql.keyFromOrder).
 */
function expandedSql(pairs: string, group: Group, options: MetricOptions): string {
  const g = groupSql(group, options);
  if (g.keyFromOrder) {
    return `SELECT * FROM (SELECT subject, model, ${g.order} AS key_order,
        forecast, actual, reference, capacity, drop_reason FROM ${pairs})
      WHERE key_order IS NOT NULL`;
  }
  return `SELECT subject, model, ${g.key} AS key, ${g.order} AS key_order,
      forecast, actual, reference, capacity, drop_reason
    FROM ${pairs} WHERE ${g.key} IS NOT NULL`;
}

/** fx - obs, or 0 where |fx - obs| <= 1e-8 + deadband * |obs| (numpy.isclose, as SFA uses it). */
function errorSql(fx: string, obs: string, deadbandPct: number): string {
  if (deadbandPct <= 0) return `(${fx} - ${obs})`;
  const tolerance = deadbandPct / 100;
  return `(CASE WHEN abs(${fx} - ${obs}) <= 1e-8 + ${tolerance} * abs(${obs}) THEN 0.0 ELSE ${fx} - ${obs} END)`;
}

/** forecast / observed statistic: 1 when equal (0/0 too), +Infinity when only the observed one is 0 (SFA's _careful_ratio). */
function carefulRatio(observed: string, forecast: string): string {
  return `(CASE WHEN ${observed} = ${forecast} THEN 1.0 WHEN ${observed} = 0 THEN 'Infinity'::DOUBLE ELSE ${forecast} / ${observed} END)`;
}

/** The GROUP BY columns of one group's queries, and the result columns that name the row. */
interface GroupKeys {
  group: Group;
  /** Grouped by: subject and model unless the relation holds one; the key (or its sort number) unless total. */
  columns: string[];
  /** subject, model, grp, key: each a column or a literal. */
  select: string;
}

function groupKeys(group: Group, options: MetricOptions, single: SingleSubject | undefined): GroupKeys {
  const { keyFromOrder } = groupSql(group, options);
  const key = group === 'total' ? null : keyFromOrder ? 'key_order' : 'key';
  const columns = [...(single ? [] : ['subject', 'model']), ...(key ? [key] : [])];
  const literal = (v: string | null) => (v === null ? 'CAST(NULL AS VARCHAR)' : quoteLiteral(v));
  const select = [
    single ? `${literal(single.subject)} AS subject, ${literal(single.model)} AS model` : 'subject, model',
    `${quoteLiteral(group)} AS grp`,
    key === null ? `'all' AS key` : keyFromOrder ? `${keyFromOrder('key_order')} AS key` : 'key',
  ].join(', ');
  return { group, columns, select };
}

const byKeys = (k: GroupKeys, extra: string[] = []) => [...k.columns, ...extra].join(', ');
/** The key columns, each followed by a comma, to start a select list (empty without keys). */
const keysFirst = (k: GroupKeys) => k.columns.map((c) => `${c}, `).join('');
const partitionBy = (k: GroupKeys) => (k.columns.length ? `PARTITION BY ${k.columns.join(', ')}` : '');

/**
 * Deterministic metrics, summary statistics and counts of one group: every metric is a ratio of
 * plain sums over the scored rows (SFA's means and RMSEs) or a moment, so one ungrouped aggregate
 * (for group total) computes them all at a few times the cost of a scan. r, R², the standard
 * deviations (RED, std) and CRMSE use DuckDB's moments, which update a running mean; that still
 * loses up to about ε · |mean| / σ, 1e-8 relative for values near 1e9 that vary by a few units.
 * With `centred` the actuals and forecasts are first centred on their group's means (a pass of
 * two averages before, joined back), as numpy's two-pass variance does (see needsCentring).
 * Dropped rows only count: their values are NULL to the sums.
 */
function momentsSql(pairs: string, k: GroupKeys, options: MetricOptions, centred: boolean): string {
  const deadband = options.deadbandPct > 0;
  const mapeFloor = `(CASE WHEN capacity > 0 THEN ${options.mapeMinActualPct / 100} * capacity ELSE 0.0 END)`;
  const dropCounts = DROP_REASONS.map((r) => `count(CASE WHEN drop_reason = '${r}' THEN 1 END) AS dropped_${r}`).join(
    ',\n    ',
  );
  const sameKeys = k.columns.map((c) => `v.${c} IS NOT DISTINCT FROM m.${c}`).join(' AND ') || 'TRUE';
  return `
WITH scored AS (
  SELECT *, CASE WHEN drop_reason IS NULL THEN forecast END AS f, CASE WHEN drop_reason IS NULL THEN actual END AS o
  FROM (${expandedSql(pairs, k.group, options)})
),
${
  centred
    ? `centres AS (SELECT ${keysFirst(k)} avg(o) AS centre_o, avg(f) AS centre_f FROM scored ${k.columns.length ? `GROUP BY ${byKeys(k)}` : ''}),`
    : ''
}
errors AS (
  SELECT v.*, ${centred ? 'o - centre_o AS oc, f - centre_f AS fc, fc - oc AS ec' : 'o AS oc, f AS fc, f - o AS ec'},
    ${errorSql('f', 'o', options.deadbandPct)} AS e,
    CASE WHEN capacity > 0 THEN e / capacity END AS e_norm,
    CASE WHEN f IS NOT NULL THEN ${errorSql('reference', 'o', options.deadbandPct)} END AS e_ref
    ${deadband ? ', f - o AS e_plain' : ''}
  FROM scored v ${centred ? `JOIN centres m ON ${sameKeys}` : ''}
),
sums AS (
  SELECT ${keysFirst(k)} ${k.columns.includes('key_order') ? '' : 'min(key_order) AS key_order,'}
    count(*) - count(drop_reason) AS n, count(drop_reason) AS dropped,
    ${dropCounts},
    count(forecast) > 0 AS has_forecast, count(reference) > 0 AS has_reference,
    count(e) AS n_point, sum(e) AS s_e, sum(abs(e)) AS s_abs, sum(e * e) AS s_sq,
    sum(CASE WHEN abs(o) > ${mapeFloor} THEN abs(e / o) END) AS s_ape,
    count(CASE WHEN abs(o) <= ${mapeFloor} THEN e END) AS mape_skipped,
    count(e_norm) AS n_norm, sum(e_norm) AS s_norm, sum(abs(e_norm)) AS s_abs_norm, sum(e_norm * e_norm) AS s_sq_norm,
    count(e_ref) AS n_ref, sum(e_ref * e_ref) AS s_sq_ref,
    ${deadband ? 'sum(e_plain * e_plain) AS s_sq_plain' : 'sum(e * e) AS s_sq_plain'},
    corr(fc, oc) AS r, var_pop(oc) AS var_actual,
    -- CRMSE is the population standard deviation of the raw errors. DuckDB's stddev_pop updates
    -- a running mean (Welford), so a large bias no longer cancels digits as E[e²] − E[e]² did;
    -- the centred pass takes (f − mean f) − (o − mean o), as SFA does, which also keeps the
    -- digits f − o loses when f and o are far larger than the spread of their difference.
    stddev_pop(ec) AS crmse, avg(f - o) AS mean_error,
    avg(o) AS mean_o, avg(f) AS mean_f, stddev_pop(oc) AS std_o, stddev_pop(fc) AS std_f,
    min(o) AS min_o, max(o) AS max_o, median(o) AS median_o, min(f) AS min_f, max(f) AS max_f, median(f) AS median_f
  FROM errors ${k.columns.length ? `GROUP BY ${byKeys(k)}` : 'HAVING count(*) > 0'}
),
metrics AS (
  SELECT *,
    s_abs / n_point AS mae,
    s_e / n_point AS mbe,
    sqrt(s_sq / n_point) AS rmse,
    100 * s_ape / (n_point - mape_skipped) AS mape,
    100 * s_norm / n_norm AS nmbe,
    100 * s_abs_norm / n_norm AS nmae,
    100 * sqrt(s_sq_norm / n_norm) AS nrmse,
    sqrt(s_sq_ref / n_ref) AS rmse_ref,
    sqrt(s_sq_plain / n_point) AS rmse_plain,
    1 - s_sq_plain / (var_actual * n_point) AS r2,
    -- SFA's relative Euclidean distance, its ratios kept finite where both sides are equal (0/0 too)
    sqrt((${carefulRatio('mean_o', 'mean_f')} - 1) ** 2 + (${carefulRatio('std_o', 'std_f')} - 1) ** 2 + (r - 1) ** 2) AS red
  FROM sums
)
SELECT ${k.select}, key_order, n, dropped, ${DROP_REASONS.map((r) => `dropped_${r}`).join(', ')},
  has_forecast, has_reference, mape_skipped, n_point, mean_error,
  ${SUMMARY_STATS.flatMap((stat) => [`${stat}_o AS actual_${stat}`, `${stat}_f AS forecast_${stat}`]).join(', ')},
  mae, mbe, rmse, mape, nmbe, nmae, nrmse, rmse_ref, rmse_plain, r, r2, crmse, red,
  CASE WHEN rmse = rmse_ref THEN 0.0
       WHEN rmse_ref = 0 THEN -'Infinity'::DOUBLE
       ELSE 1 - rmse / rmse_ref END AS skill
FROM metrics`;
}

/**
 * KSI and OVER of one group exactly as SFA computes them (kolmogorov_smirnov_integral, over):
 * over the sorted union x of all scored actuals and forecasts, the sum of D(x_i) · (x_(i+1) − x_i),
 * where D is |ECDF_o − ECDF_f| (right-continuous: the share of values <= x) for KSI, and its
 * excess over Vc = 1.63/sqrt(n) for OVER. Each actual adds +1 and each forecast −1 to a running
 * count c = n · (ECDF_o − ECDF_f), so D = |c| / n after a value. Tied values need no grouping:
 * the running sum's RANGE frame (the default with ORDER BY) takes in the whole tie on each of its
 * rows, and every row of a tie but one has dx = 0. A group whose values are all equal has no dx:
 * 0, as SFA's empty sum.
 */
function distributionSql(pairs: string, k: GroupKeys, options: MetricOptions): string {
  const keys = keysFirst(k);
  const window = `${partitionBy(k)} ORDER BY x`;
  const sameKeys = k.columns.map((c) => `s.${c} IS NOT DISTINCT FROM m.${c}`).join(' AND ') || 'TRUE';
  const d = 'c / n';
  const vc = `${KS_CRITICAL} / sqrt(n)`;
  return `
WITH scored AS NOT MATERIALIZED (
  SELECT * FROM (${expandedSql(pairs, k.group, options)}) WHERE drop_reason IS NULL AND forecast IS NOT NULL
),
points AS (
  SELECT ${keys} actual AS x, 1 AS w FROM scored UNION ALL SELECT ${keys} forecast AS x, -1 AS w FROM scored
),
steps AS (
  SELECT ${keys} abs(sum(w) OVER (${window})) AS c, lead(x) OVER (${window}) - x AS dx FROM points
),
-- n from its own aggregate: a count over the window's partition took a second pass as long as the sort
sizes AS (SELECT ${keys} count(*) AS n FROM scored ${k.columns.length ? `GROUP BY ${byKeys(k)}` : ''}),
sized AS (SELECT s.*, m.n FROM steps s JOIN sizes m ON ${sameKeys})
SELECT ${k.select}, coalesce(sum(${d} * dx), 0) AS ksi,
  coalesce(sum(CASE WHEN ${d} > ${vc} THEN (${d} - ${vc}) * dx ELSE 0 END), 0) AS over
FROM sized ${k.columns.length ? `GROUP BY ${byKeys(k)}` : ''}`;
}

/**
 * CRPS as SFA computes it (continuous_ranked_probability_score): the nodes are the quantiles in
 * level order, with min(o, q_1) at probability 0 before them and max(o, q_k) at 1 after them;
 * (F − 1{x ≥ o})² is taken at each node (the last node's indicator is 0 when o lies beyond q_k)
 * and integrated by the trapezoid rule. Crossing quantiles are used as they come, as SFA does.
 */
function crpsSql(): string {
  const node = (j: string) => `((xs[${j}] >= o AND NOT (${j} = len(xs) AND qv[len(qv)] < o))::INTEGER)`;
  const term = (j: string) => `(fs[${j}] - ${node(j)}) * (fs[${j}] - ${node(j)})`;
  return `CASE WHEN len(qv) < 2 THEN NULL ELSE
    list_sum(list_transform(range(1, len(xs)), lambda j: (xs[j + 1] - xs[j]) * (${term('j')} + ${term('j + 1')}) / 2)) END`;
}

/** Per scored pair with quantiles: CRPS (as SFA), 2 x mean pinball, and interval coverage. */
function quantilePairsSql(pairs: string, quantiles: string): string {
  return `
WITH sets AS (
  SELECT p.pid, any_value(p.actual) AS o,
    list(q.level ORDER BY q.level) AS lv,
    list(q.q ORDER BY q.level) AS qv,
    2 * avg((q.q - p.actual) * (q.level - CASE WHEN p.actual > q.q THEN 1 ELSE 0 END)) AS crps_pinball
  FROM ${pairs} p JOIN ${quantiles} q USING (pid)
  WHERE p.drop_reason IS NULL
  GROUP BY p.pid
),
nodes AS (
  SELECT *, list_concat([least(o, qv[1])], qv, [greatest(o, qv[len(qv)])]) AS xs,
    list_concat([0.0], lv, [1.0]) AS fs
  FROM sets
)
SELECT pid, ${crpsSql()} AS crps, crps_pinball,
  CASE WHEN len(qv) < 2 THEN NULL WHEN o BETWEEN list_min(qv) AND list_max(qv) THEN 100.0 ELSE 0.0 END AS covered,
  CASE WHEN len(qv) < 2 THEN NULL ELSE 100 * (lv[len(lv)] - lv[1]) END AS nominal
FROM nodes`;
}

function quantileMetricsSql(pairs: string, quantiles: string, options: MetricOptions): string {
  return `
WITH expanded AS (${allGroupsSql(pairs, options)}),
per_pair AS (${quantilePairsSql(pairs, quantiles)})
SELECT ${KEYS}, avg(crps) AS crps, avg(crps_pinball) AS crps_pinball,
  -- the reference is a single value: the CRPS of its step CDF is its absolute error
  avg(abs(reference - actual)) AS crps_ref, count(reference) > 0 AS has_reference,
  avg(covered) AS coverage, avg(nominal) AS coverage_nominal
FROM expanded JOIN per_pair USING (pid)
GROUP BY ${KEYS}`;
}

/** Per group and level: pairs, actuals at or below the quantile, pinball of the quantile and of the reference. */
function levelSumsSql(pairs: string, quantiles: string, options: MetricOptions): string {
  const pinball = (fx: string) => `avg((${fx} - x.actual) * (q.level - CASE WHEN x.actual > ${fx} THEN 1 ELSE 0 END))`;
  return `
WITH expanded AS (${allGroupsSql(pairs, options)})
SELECT ${KEYS}, q.level, count(*) AS n, count(*) FILTER (WHERE x.actual <= q.q) AS below,
  ${pinball('q.q')} AS pinball, ${pinball('x.reference')} AS pinball_ref, count(x.reference) > 0 AS has_reference
FROM expanded x JOIN ${quantiles} q USING (pid)
WHERE x.drop_reason IS NULL
GROUP BY ${KEYS}, q.level`;
}

type Keyed = { subject: string; model: string | null; grp: Group; key: string };
const keyOf = (r: Keyed) => JSON.stringify([r.subject, r.model, r.grp, r.key]);

/** A metric value as a number: SQL NULL (an empty mean, say) becomes NaN, as numpy gives. */
const num = (v: unknown): number => (v === null || v === undefined ? NaN : Number(v));

/**
 * Scores the pairs relation `pairs` (and quantile relation `quantiles`, when given) in SQL and
 * returns one row per subject, model, group and key, sorted. Fields a subject cannot have (skill
 * without a reference, pinball without quantiles, point metrics for a quantile set) are absent.
 * `single` says the relation holds one subject and model (see SingleSubject).
 */
export async function computeMetrics(
  sql: SqlRunner,
  pairs: string,
  quantiles: string | null,
  options: MetricOptions,
  single?: SingleSubject,
): Promise<AccuracyRow[]> {
  const rows = new Map<string, AccuracyRow>();
  for (const group of options.groups) {
    for (const row of await pointMetrics(sql, pairs, groupKeys(group, options, single), options)) {
      rows.set(keyOf({ ...row, grp: row.group }), row);
    }
  }
  if (quantiles) await addQuantileMetrics(sql, pairs, quantiles, options, rows);
  if (options.events?.length) await addEventMetrics(sql, pairs, options, options.events, rows);
  return [...rows.values()].sort(compareRows(options.groups));
}

type PointRow = Keyed & Record<string, unknown>;

/**
 * Whether a group's moments need the centred pass: a mean of the actuals or forecasts more than
 * 1e4 of their standard deviations from 0, or a mean of actuals, forecasts or errors (a large
 * bias) more than 1e4 times the errors' standard deviation (CRMSE), where the running moments' error, up to about ε · |mean| / σ,
 * could exceed 1e-12 relative. Power data rarely is (mean and spread are alike), so the extra
 * pass is only paid for large offsets; a constant series (σ 0) is exact either way.
 */
function needsCentring(r: PointRow): boolean {
  const far = (mean: unknown, std: unknown) => num(std) > 0 && Math.abs(num(mean)) > 1e4 * num(std);
  return (
    far(r.actual_mean, r.actual_std) ||
    far(r.forecast_mean, r.forecast_std) ||
    [r.actual_mean, r.forecast_mean, r.mean_error].some((mean) => far(mean, r.crmse))
  );
}

/** One group's point metrics: the moments pass, then KSI and OVER from a sort of all values. */
async function pointMetrics(
  sql: SqlRunner,
  pairs: string,
  k: GroupKeys,
  options: MetricOptions,
): Promise<AccuracyRow[]> {
  const plain = await sql.all<PointRow>(momentsSql(pairs, k, options, false));
  const moments = plain.some(needsCentring) ? await sql.all<PointRow>(momentsSql(pairs, k, options, true)) : plain;
  const distribution = new Map<string, PointRow>();
  const scored = moments.filter((r) => num(r.n_point) > 0);
  if (options.distribution !== false && scored.length > 0) {
    const rows = await sql.all<PointRow>(distributionSql(pairs, k, options));
    for (const r of rows) distribution.set(keyOf(r), r);
  }
  return moments.map((r) => {
    const values: Record<string, number> = {};
    for (const f of COUNT_FIELDS) values[f] = num(r[f]);
    // a quantile set has no single-value forecast to summarise
    for (const f of SUMMARY_FIELDS) if (r.has_forecast || f.startsWith('actual_')) values[f] = num(r[f]);
    if (r.has_forecast) {
      for (const m of POINT_METRICS) if (m in r) values[m] = num(r[m]);
      if (options.distribution !== false) {
        const d = distribution.get(keyOf(r));
        values.ksi = num(d?.ksi);
        values.over = num(d?.over);
        // SFA's CPI; its RMSE ignores any deadband
        values.cpi = (values.ksi + values.over + 2 * num(r.rmse_plain)) / 4;
      }
    }
    if (r.has_forecast && r.has_reference) for (const m of REFERENCE_METRICS) values[m] = num(r[m]);
    return {
      subject: r.subject,
      model: r.model,
      group: r.grp,
      key: r.key,
      keyOrder: num(r.key_order),
      n: num(r.n),
      values,
    };
  });
}

/**
 * Per-level metrics (pinball, QSS, Brier score and decomposition) and the set's metrics (CRPS,
 * CRPSS, coverage) of every quantile subject's row. A group whose pairs were all dropped has no
 * sums: its fields are NaN, as for points. Skill scores only where the subject has a reference.
 */
async function addQuantileMetrics(
  sql: SqlRunner,
  pairs: string,
  quantiles: string,
  options: MetricOptions,
  rows: Map<string, AccuracyRow>,
): Promise<void> {
  type LevelRow = Keyed & { level: number; n: bigint; below: bigint; pinball: number; pinball_ref: number | null };
  const levels = await sql.all<LevelRow & { has_reference: boolean }>(levelSumsSql(pairs, quantiles, options));
  const summary = await sql.all<Keyed & Record<string, unknown>>(quantileMetricsSql(pairs, quantiles, options));
  const subjectOf = (r: Pick<Keyed, 'subject' | 'model'>) => JSON.stringify([r.subject, r.model]);
  const referenced = new Set(summary.filter((r) => r.has_reference).map(subjectOf));
  const fields = (sums: LevelSums, subject: string) => levelFields(sums, referenced.has(subject));
  // every field a subject has, to fill with NaN where a group has no pairs
  const known = new Map<string, Set<string>>();
  for (const r of levels) {
    const subject = subjectOf(r);
    const values = fields(
      { level: r.level, n: Number(r.n), below: Number(r.below), pinball: r.pinball, pinballRef: num(r.pinball_ref) },
      subject,
    );
    const row = rows.get(keyOf(r));
    if (row) Object.assign(row.values, values);
    known.set(subject, new Set([...(known.get(subject) ?? []), ...Object.keys(values)]));
  }
  for (const r of summary) {
    const row = rows.get(keyOf(r));
    if (!row) continue;
    for (const m of ['crps', 'crps_pinball', 'coverage', 'coverage_nominal']) row.values[m] = num(r[m]);
    if (r.has_reference) {
      row.values.crps_ref = num(r.crps_ref);
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

/** Contingency counts of every event per group key, from the expanded groups and the event pairs. */
function eventCountsSql(pairs: string, options: MetricOptions, events: EventDefinition[]): string {
  return `
WITH expanded AS (${allGroupsSql(pairs, options)}),
judged AS (${eventPairsSql(pairs, events)})
SELECT ${KEYS}, j.event,
  count(*) FILTER (WHERE j.fe AND j.oe) AS tp, count(*) FILTER (WHERE j.fe AND NOT j.oe) AS fp,
  count(*) FILTER (WHERE NOT j.fe AND NOT j.oe) AS tn, count(*) FILTER (WHERE NOT j.fe AND j.oe) AS fn
FROM expanded x JOIN judged j USING (pid)
GROUP BY ${KEYS}, j.event`;
}

/**
 * Event fields of every single-value subject's row; a group no pair of which could be judged
 * (all dropped, or no pair `span` earlier) has counts 0 and metrics NaN.
 */
async function addEventMetrics(
  sql: SqlRunner,
  pairs: string,
  options: MetricOptions,
  events: EventDefinition[],
  rows: Map<string, AccuracyRow>,
): Promise<void> {
  const counts = new Map<string, Contingency>();
  for (const r of await sql.all<Keyed & { event: string } & Record<keyof Contingency, bigint>>(
    eventCountsSql(pairs, options, events),
  )) {
    counts.set(JSON.stringify([keyOf(r), r.event]), {
      tp: Number(r.tp),
      fp: Number(r.fp),
      tn: Number(r.tn),
      fn: Number(r.fn),
    });
  }
  for (const row of rows.values()) {
    if (!('mae' in row.values)) continue; // a quantile set has no single value to judge
    const key = keyOf({ ...row, grp: row.group });
    for (const e of events) {
      Object.assign(
        row.values,
        eventFields(e.name, counts.get(JSON.stringify([key, e.name])) ?? { tp: 0, fp: 0, tn: 0, fn: 0 }),
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
