// The metric SQL: every metric is computed by DuckDB over a relation of aligned pairs; only the
// small table of results comes back to JavaScript. Definitions follow the Solar Forecast Arbiter
// (metrics/deterministic.py, probabilistic.py); docs/accuracy.md says each in plain words.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { groupSql, type Group, type GroupOptions } from './groups.js';

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
 *   drop_reason VARCHAR   NULL when scored, else 'actual' | 'forecast' | 'reference' | 'quantiles'
 * Quantile forecasts live beside it as (pid, level DOUBLE in (0,1), q DOUBLE), complete for every
 * scored pid (an incomplete set is dropped with reason 'quantiles').
 */

const DROP_REASONS = ['actual', 'forecast', 'reference', 'quantiles'] as const;

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
export const POINT_METRICS = ['mae', 'mbe', 'rmse', 'mape', 'nmae', 'nmbe', 'nrmse', 'r', 'r2', 'crmse', 'ksi', 'over', 'cpi'] as const;
export const REFERENCE_METRICS = ['skill', 'rmse_ref'] as const;
export const QUANTILE_METRICS = ['crps', 'crps_pinball', 'coverage', 'coverage_nominal'] as const;

/** SFA's Vc: the critical value of the Kolmogorov-Smirnov test at the 99% level, 1.63/sqrt(n). */
const KS_CRITICAL = 1.63;

/** The pairs relation expanded once per group, with the group's key and sort order. */
function expandedSql(pairs: string, options: MetricOptions): string {
  return options.groups.map((group) => {
    const g = groupSql(group, options);
    return `SELECT subject, model, '${group}' AS grp, ${g.key} AS key, ${g.order} AS key_order,
      pid, forecast, actual, reference, capacity, drop_reason
      FROM ${pairs} WHERE ${g.key} IS NOT NULL`;
  }).join('\nUNION ALL\n');
}

/** fx - obs, or 0 where |fx - obs| <= 1e-8 + deadband * |obs| (numpy.isclose, as SFA uses it). */
function errorSql(fx: string, obs: string, deadbandPct: number): string {
  if (deadbandPct <= 0) return `(${fx} - ${obs})`;
  const tolerance = deadbandPct / 100;
  return `(CASE WHEN abs(${fx} - ${obs}) <= 1e-8 + ${tolerance} * abs(${obs}) THEN 0.0 ELSE ${fx} - ${obs} END)`;
}

const KEYS = 'subject, model, grp, key';

/**
 * A 64-bit hash of the result keys, to sort and join the ECDF rows by one integer; computeMetrics
 * checks that no two groups share one (the chance is about 1e-10 for 100 000 groups).
 */
const GROUP_ID = `hash(${KEYS})`;

/** KSI and OVER per group id, from the `scored` and `agg` CTEs of pointMetricsSql. */
const ECDF_SQL = `,
-- Right-continuous ECDFs of actual (+1) and forecast (-1): sorted by value, the running sum c
-- is n * (ECDF_o - ECDF_f) after each value; it holds until the next value, dx further on.
-- Within a run of equal values dx is 0, so only the last of them (holding the full sum) counts.
-- Every group holds as many actuals as forecasts, so its values sum to 0: one running sum over
-- all groups sorted by (group id, value) restarts at 0 in each group, and the dx that crosses into
-- the next group meets c = 0. This sorts once instead of per partition (several times faster).
ecdf_points AS (
  SELECT gid, o AS x, 1 AS w FROM scored WHERE o IS NOT NULL
  UNION ALL
  SELECT gid, f AS x, -1 AS w FROM scored WHERE o IS NOT NULL
),
ecdf_steps AS (
  SELECT gid, abs(sum(w) OVER ecdf) AS c, lead(x) OVER ecdf - x AS dx
  FROM ecdf_points
  WINDOW ecdf AS (ORDER BY gid, x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
ecdf_by_level AS (
  SELECT gid, c, sum(dx) AS width FROM ecdf_steps WHERE c > 0 AND dx > 0 GROUP BY gid, c
),
ecdf AS (
  SELECT l.gid,
    sum(l.c / a.n_point * l.width) AS ksi,
    sum(greatest(l.c / a.n_point - ${KS_CRITICAL} / sqrt(a.n_point), 0) * l.width) AS over
  FROM ecdf_by_level l JOIN agg a USING (gid)
  GROUP BY l.gid
)
`;

/** Deterministic metrics, counts and the ECDF metrics (KSI, OVER) per subject and group key. */
function pointMetricsSql(pairs: string, options: MetricOptions): string {
  const mapeFloor = `(CASE WHEN capacity > 0 THEN ${options.mapeMinActualPct / 100} * capacity ELSE 0.0 END)`;
  const dropCounts = DROP_REASONS
    .map((r) => `count(*) FILTER (WHERE drop_reason = '${r}') AS dropped_${r}`).join(',\n      ');
  return `
WITH expanded AS (${expandedSql(pairs, options)}),
scored AS (
  SELECT ${KEYS}, ${GROUP_ID} AS gid, key_order, drop_reason, capacity,
    CASE WHEN drop_reason IS NULL THEN forecast END AS f,
    CASE WHEN drop_reason IS NULL AND forecast IS NOT NULL THEN actual END AS o,
    forecast IS NOT NULL AS has_forecast, reference IS NOT NULL AS has_reference,
    ${errorSql('f', 'o', options.deadbandPct)} AS e,
    CASE WHEN o IS NOT NULL THEN ${errorSql('reference', 'o', options.deadbandPct)} END AS e_ref,
    f - o AS e_plain,
    ${mapeFloor} AS mape_floor
  FROM expanded
),
agg AS (
  SELECT ${KEYS}, gid, min(key_order) AS key_order,
    count(*) FILTER (WHERE drop_reason IS NULL) AS n,
    count(*) FILTER (WHERE drop_reason IS NOT NULL) AS dropped,
    ${dropCounts},
    bool_or(has_forecast) AS has_forecast, bool_or(has_reference) AS has_reference,
    count(o) AS n_point,
    avg(abs(e)) AS mae,
    avg(e) AS mbe,
    sqrt(avg(e * e)) AS rmse,
    100 * avg(abs(e / o)) FILTER (WHERE abs(o) > mape_floor) AS mape,
    count(e) FILTER (WHERE abs(o) <= mape_floor) AS mape_skipped,
    100 * avg(e / capacity) FILTER (WHERE capacity > 0) AS nmbe,
    100 * avg(abs(e) / capacity) FILTER (WHERE capacity > 0) AS nmae,
    100 * sqrt(avg((e / capacity) * (e / capacity)) FILTER (WHERE capacity > 0)) AS nrmse,
    sqrt(avg(e_ref * e_ref)) AS rmse_ref,
    sqrt(avg(e_plain * e_plain)) AS rmse_plain,
    corr(f, o) AS r,
    1 - sum(e_plain * e_plain) / (var_pop(o) * count(o)) AS r2,
    stddev_pop(e_plain) AS crmse
  FROM scored GROUP BY ${KEYS}, gid
)${options.distribution === false ? '' : ECDF_SQL}SELECT a.*, ${options.distribution === false ? '' : `
  CASE WHEN a.n_point = 0 THEN NULL ELSE coalesce(k.ksi, 0) END AS ksi,
  CASE WHEN a.n_point = 0 THEN NULL ELSE coalesce(k.over, 0) END AS over,
  (coalesce(k.ksi, 0) + coalesce(k.over, 0) + 2 * a.rmse_plain) / 4 AS cpi,`}
  CASE WHEN a.rmse = a.rmse_ref THEN 0.0
       WHEN a.rmse_ref = 0 THEN -'Infinity'::DOUBLE
       ELSE 1 - a.rmse / a.rmse_ref END AS skill
FROM agg a ${options.distribution === false ? '' : 'LEFT JOIN ecdf k USING (gid)'}`;
}

/** Piecewise-linear CDF from (level, value) nodes: the exact CRPS integral, in SQL. */
function crpsSql(): string {
  // The CDF is 0 below the lowest quantile, linear between consecutive (q_i, p_i) nodes and 1
  // from the highest quantile on (the tails carry the remaining p_1 and 1 - p_k as point masses).
  // CRPS = integral (F(x) - 1{x >= o})^2 dx. On a segment where F runs linearly from a to b over
  // a length L, integral F^2 = L (a^2 + ab + b^2) / 3; split the segment at o when o is inside it.
  const g = (a: string, b: string, len: string) => `((${len}) * ((${a}) * (${a}) + (${a}) * (${b}) + (${b}) * (${b})) / 3)`;
  const a = 'lv[i]', b = 'lv[i + 1]', x0 = 'qv[i]', x1 = 'qv[i + 1]';
  const c = `(${a} + (${b} - ${a}) * (o - ${x0}) / (${x1} - ${x0}))`;
  const segment = `CASE WHEN o <= ${x0} THEN ${g(`${a} - 1`, `${b} - 1`, `${x1} - ${x0}`)}
    WHEN o >= ${x1} THEN ${g(a, b, `${x1} - ${x0}`)}
    ELSE ${g(a, c, `o - ${x0}`)} + ${g(`${c} - 1`, `${b} - 1`, `${x1} - o`)} END`;
  return `CASE WHEN len(qv) < 2 THEN NULL ELSE
    greatest(qv[1] - o, 0) + greatest(o - qv[len(qv)], 0)
    + list_sum(list_transform(range(1, len(qv)), lambda i: ${segment})) END`;
}

/** Per scored pair with quantiles: exact CRPS, 2 x mean pinball, and interval coverage. */
function quantilePairsSql(pairs: string, quantiles: string): string {
  return `
WITH sets AS (
  SELECT p.pid, any_value(p.actual) AS o,
    list(q.level ORDER BY q.level) AS lv,
    -- crossing quantiles are sorted (rearranged) before the CDF is built
    list_sort(list(q.q)) AS qv,
    2 * avg((q.q - p.actual) * (q.level - CASE WHEN p.actual > q.q THEN 1 ELSE 0 END)) AS crps_pinball
  FROM ${pairs} p JOIN ${quantiles} q USING (pid)
  WHERE p.drop_reason IS NULL
  GROUP BY p.pid
)
SELECT pid, ${crpsSql()} AS crps, crps_pinball,
  CASE WHEN len(qv) < 2 THEN NULL WHEN o BETWEEN qv[1] AND qv[len(qv)] THEN 100.0 ELSE 0.0 END AS covered,
  CASE WHEN len(qv) < 2 THEN NULL ELSE 100 * (lv[len(lv)] - lv[1]) END AS nominal
FROM sets`;
}

function quantileMetricsSql(pairs: string, quantiles: string, options: MetricOptions): string {
  return `
WITH expanded AS (${expandedSql(pairs, options)}),
per_pair AS (${quantilePairsSql(pairs, quantiles)})
SELECT ${KEYS}, avg(crps) AS crps, avg(crps_pinball) AS crps_pinball,
  avg(covered) AS coverage, avg(nominal) AS coverage_nominal
FROM expanded JOIN per_pair USING (pid)
GROUP BY ${KEYS}`;
}

function pinballSql(pairs: string, quantiles: string, options: MetricOptions): string {
  return `
WITH expanded AS (${expandedSql(pairs, options)})
SELECT ${KEYS}, q.level,
  avg((q.q - x.actual) * (q.level - CASE WHEN x.actual > q.q THEN 1 ELSE 0 END)) AS pinball
FROM expanded x JOIN ${quantiles} q USING (pid)
WHERE x.drop_reason IS NULL
GROUP BY ${KEYS}, q.level`;
}

/** `pinball_q10` for level 0.1, `pinball_q2.5` for 0.025. */
export function pinballName(level: number): string {
  return `pinball_q${Number((level * 100).toFixed(6))}`;
}

type Keyed = { subject: string; model: string | null; grp: Group; key: string };
const keyOf = (r: Keyed) => JSON.stringify([r.subject, r.model, r.grp, r.key]);

/** A metric value as a number: SQL NULL (an empty mean, say) becomes NaN, as numpy gives. */
const num = (v: unknown): number => (v === null || v === undefined ? NaN : Number(v));

/**
 * Scores the pairs relation `pairs` (and quantile relation `quantiles`, when given) in SQL and
 * returns one row per subject, model, group and key, sorted. Fields a subject cannot have (skill
 * without a reference, pinball without quantiles, point metrics for a quantile set) are absent.
 */
export async function computeMetrics(
  sql: SqlRunner, pairs: string, quantiles: string | null, options: MetricOptions,
): Promise<AccuracyRow[]> {
  type PointRow = Keyed & Record<string, unknown>;
  const pointRows = await sql.all<PointRow>(pointMetricsSql(pairs, options));
  if (new Set(pointRows.map((r) => r.gid)).size !== pointRows.length) {
    throw new Error('two result groups share one hash, so their KSI and OVER would mix; score them in separate runs (e.g. by --site)');
  }
  const rows = new Map<string, AccuracyRow>();
  for (const r of pointRows) {
    const values: Record<string, number> = {};
    for (const f of COUNT_FIELDS) values[f] = num(r[f]);
    if (r.has_forecast) for (const m of POINT_METRICS) if (m in r) values[m] = num(r[m]);
    if (r.has_forecast && r.has_reference) for (const m of REFERENCE_METRICS) values[m] = num(r[m]);
    rows.set(keyOf(r), {
      subject: r.subject, model: r.model, group: r.grp, key: r.key,
      keyOrder: num(r.key_order), n: num(r.n), values,
    });
  }
  if (quantiles) await addQuantileMetrics(sql, pairs, quantiles, options, rows);
  return [...rows.values()].sort(compareRows(options.groups));
}

async function addQuantileMetrics(
  sql: SqlRunner, pairs: string, quantiles: string, options: MetricOptions, rows: Map<string, AccuracyRow>,
): Promise<void> {
  const pinball = await sql.all<Keyed & { level: number; pinball: number }>(pinballSql(pairs, quantiles, options));
  for (const r of pinball) {
    const row = rows.get(keyOf(r));
    if (row) row.values[pinballName(r.level)] = num(r.pinball);
  }
  const summary = await sql.all<Keyed & Record<string, unknown>>(quantileMetricsSql(pairs, quantiles, options));
  for (const r of summary) {
    const row = rows.get(keyOf(r));
    if (row) for (const m of QUANTILE_METRICS) row.values[m] = num(r[m]);
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
  const pinball = Object.keys(values)
    .filter((k) => k.startsWith('pinball_q'))
    .sort((a, b) => Number(a.slice(9)) - Number(b.slice(9)));
  const fixed = [...COUNT_FIELDS, ...POINT_METRICS.slice(0, 7), ...REFERENCE_METRICS, ...POINT_METRICS.slice(7)];
  return [...fixed.filter((k) => k in values), ...pinball, ...QUANTILE_METRICS.filter((k) => k in values)];
}
