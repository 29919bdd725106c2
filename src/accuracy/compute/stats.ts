// Per-group sufficient statistics: every metric of a group is computed from a few sums, counts,
// minima and maxima over its pairs and from a histogram of its values on fixed logarithmic bins,
// never from the pairs themselves. Sums add up and bins count, so the statistics of a group are
// the merge of those of any split of its pairs: a pairs file is one split, the warehouse keeps
// one per UTC day of valid time (stats-store.ts) so that a score reads only the days that changed.
//
// The statistics relation is long: (subject, model, grp, key, key_order, chunk, name, value), one
// row per statistic; a name starting `min_` or `max_` merges by min or max, every other by sum.
// Per-level and per-event statistics are named `<stat>|<level>` and `<stat>|<event>`.
// The histogram relation is (subject, model, grp, key, key_order, bin, n_o, n_f): scored actuals
// and forecasts per bin (see BIN_SCALE).
import { hasNativeExtension, type Statements } from '../../warehouse/native.js';
import { quoteLiteral } from '../../warehouse/sql.js';
import { eventPairsSql } from './events.js';
import { groupSql, type Group } from './groups.js';
import type { MetricOptions, SingleSubject } from './options.js';

/** How a database computes the statistics: efsync's native functions (native/efsync.c), or plain SQL. */
export type StatsEngine = 'native' | 'sql';

/** The engine of the database behind `sql`: native where efsync's extension loads into it (src/warehouse/native.ts). */
export async function statsEngine(sql: Statements): Promise<StatsEngine> {
  return (await hasNativeExtension(sql)) ? 'native' : 'sql';
}

/**
 * The layout of the statistics (which are computed, under which names): stored statistics of
 * another version are computed again from the whole ledger (stats-store.ts). 2: no n_o, and
 * s_d, s_dd only with a deadband; drop counts only where a group key has dropped pairs. 3: the
 * histograms' bins numbered without an offset for positive values (binSql). 4: n_ape, not
 * mape_skipped.
 */
export const STATS_VERSION = 4;

export const DROP_REASONS = ['actual', 'flagged', 'forecast', 'reference', 'quantiles'] as const;

/**
 * Bins per unit of ln|x|: a value x > 0 falls in bin k = round(ln x · BIN_SCALE) and counts as
 * the bin's value exp(k / BIN_SCALE); x < 0 in bin NEGATIVE_BINS − k of |x|, counting as
 * −exp(k / BIN_SCALE); 0 in bin ZERO_BIN. So the bin number grows with x (see NEGATIVE_BINS).
 * That moves no value by more than BIN_ERROR of itself, in order, so KSI and OVER from the bins
 * lie within BIN_ERROR · (mean |actual| + mean |forecast|) of SFA's exact values, and a median
 * within BIN_ERROR of the middle values (docs/accuracy.md).
 */
export const BIN_SCALE = 250;
/** The largest relative move of a value to its bin's value: exp(1 / (2 · BIN_SCALE)) − 1. */
export const BIN_ERROR = Math.expm1(1 / (2 * BIN_SCALE));
/**
 * |round(ln|x| · BIN_SCALE)| of a finite double is below 186,200 (|ln x| < 745), so positive
 * values fall in bins above −186,200, negative ones below NEGATIVE_BINS + 186,200, and ZERO_BIN
 * lies between. Only the rare negative values pay for an offset: adding one to every bin cost
 * about a fifth of binning (a wider sum of 20 M integers).
 */
const NEGATIVE_BINS = -1_000_000;
const ZERO_BIN = -500_000;

/**
 * The bin of a value (NULL for NULL). The cast rounds to the nearest integer; one logarithm in
 * each branch. efsync_bin (native/efsync.c) gives the same bin in a third of the time.
 */
export function binSql(x: string, engine: StatsEngine): string {
  if (engine === 'native') return `efsync_bin(${x})`;
  const k = (v: string) => `CAST(ln(${v}) * ${BIN_SCALE} AS INTEGER)`;
  return `CASE WHEN ${x} > 0 THEN ${k(x)} WHEN ${x} < 0 THEN ${NEGATIVE_BINS} - ${k(`-${x}`)} WHEN ${x} = 0 THEN ${ZERO_BIN} END`;
}

/** The value a bin stands for. */
export function binValueSql(bin: string): string {
  return `(CASE WHEN ${bin} > ${ZERO_BIN} THEN exp(${bin} / ${BIN_SCALE}.0)
    WHEN ${bin} < ${ZERO_BIN} THEN -exp((${NEGATIVE_BINS} - ${bin}) / ${BIN_SCALE}.0) ELSE 0.0 END)`;
}

/** How a group's queries split and name it: its GROUP BY columns and the columns naming a row. */
export interface GroupKeys {
  group: Group;
  /** Grouped by: subject and model unless the relation holds one; the key (or its sort number) unless total. */
  columns: string[];
  /** subject, model, grp, key, key_order: each a column or a literal. */
  select: string;
}

/**
 * The pairs relation with one group's key and sort order; rows whose key is NULL are not in it.
 * Where the sort number gives the key, the key is left out (see GroupSql.keyFromOrder).
 */
function expandedSql(pairs: string, group: Group, options: MetricOptions, chunk: string | null): string {
  const g = groupSql(group, options);
  const columns = `subject, model, ${chunk ?? '0'} AS chunk, forecast, actual, reference, capacity, drop_reason, pid`;
  if (g.keyFromOrder) {
    return `SELECT * FROM (SELECT ${columns}, ${g.order} AS key_order FROM ${pairs}) WHERE key_order IS NOT NULL`;
  }
  return `SELECT ${columns}, ${g.key} AS key, ${g.order} AS key_order FROM ${pairs} WHERE ${g.key} IS NOT NULL`;
}

export function groupKeys(group: Group, options: MetricOptions, single: SingleSubject | undefined): GroupKeys {
  const { keyFromOrder, order } = groupSql(group, options);
  const key = group === 'total' ? null : keyFromOrder ? 'key_order' : 'key';
  const columns = [...(single ? [] : ['subject', 'model']), ...(key ? [key] : [])];
  const literal = (v: string | null) => (v === null ? 'CAST(NULL AS VARCHAR)' : quoteLiteral(v));
  const select = [
    single ? `${literal(single.subject)} AS subject, ${literal(single.model)} AS model` : 'subject, model',
    `${quoteLiteral(group)} AS grp`,
    key === null ? `'all' AS key` : keyFromOrder ? `${keyFromOrder('key_order')} AS key` : 'key',
    // a key the sort number does not give sorts by a constant (groups.ts): no min() over every pair
    key === 'key_order' ? 'key_order' : `CAST(${order} AS DOUBLE) AS key_order`,
  ].join(', ');
  return { group, columns, select };
}

const groupBy = (k: GroupKeys, extra: string[]) => {
  const columns = [...k.columns, ...extra];
  return columns.length ? `GROUP BY ${columns.join(', ')}` : '';
};

/** fx - obs, or 0 where |fx - obs| <= 1e-8 + deadband * |obs| (numpy.isclose, as SFA uses it). */
function errorSql(fx: string, obs: string, deadbandPct: number): string {
  if (deadbandPct <= 0) return `(${fx} - ${obs})`;
  const tolerance = deadbandPct / 100;
  return `(CASE WHEN abs(${fx} - ${obs}) <= 1e-8 + ${tolerance} * abs(${obs}) THEN 0.0 ELSE ${fx} - ${obs} END)`;
}

/** Long rows of a wide select: every column but the keys becomes (name, value). */
function longSql(wide: string): string {
  return `SELECT subject, model, grp, key, key_order, chunk, name, CAST(value AS DOUBLE) AS value FROM (
    UNPIVOT (${wide}) ON COLUMNS(* EXCLUDE (subject, model, grp, key, key_order, chunk)) INTO NAME name VALUE value)`;
}

/**
 * The point statistics: counts, the sums every deterministic metric is a ratio of, the raw moments
 * of actuals, forecasts and their differences (sum, sum of squares, cross product), minima and
 * maxima, each as SQL over the scored pairs with their errors (pointStatsSql). Every aggregate
 * over millions of pairs costs about as much as a plain scan's three, so there are as few as the
 * metrics need: no n_o (every scored pair has its actual: n), s_d and s_dd only with a deadband
 * (without one they are s_e, s_sq; metrics.ts reads them so), and the pairs MAPE skips counted as
 * n_point − n_ape (a CASE over every pair less). efsync_point_stats computes each under the same
 * name (native/efsync.c).
 */
const POINT_STATS: { name: string; sql: string; deadbandOnly?: true }[] = [
  { name: 'n', sql: 'count(*)' },
  { name: 'c_forecast', sql: 'count(forecast)' },
  { name: 'c_reference', sql: 'count(reference)' },
  { name: 'n_point', sql: 'count(e)' },
  { name: 's_e', sql: 'sum(e)' },
  { name: 's_abs', sql: 'sum(abs(e))' },
  { name: 's_sq', sql: 'sum(e * e)' },
  { name: 'n_ape', sql: 'count(ape)' },
  { name: 's_ape', sql: 'sum(ape)' },
  { name: 'n_norm', sql: 'count(e_norm)' },
  { name: 's_norm', sql: 'sum(e_norm)' },
  { name: 's_abs_norm', sql: 'sum(abs(e_norm))' },
  { name: 's_sq_norm', sql: 'sum(e_norm * e_norm)' },
  { name: 'n_ref', sql: 'count(e_ref)' },
  { name: 's_sq_ref', sql: 'sum(e_ref * e_ref)' },
  { name: 's_d', sql: 'sum(forecast - actual)', deadbandOnly: true },
  { name: 's_dd', sql: 'sum((forecast - actual) * (forecast - actual))', deadbandOnly: true },
  { name: 's_o', sql: 'sum(actual)' },
  { name: 's_oo', sql: 'sum(actual * actual)' },
  { name: 'n_f', sql: 'count(forecast)' },
  { name: 's_f', sql: 'sum(forecast)' },
  { name: 's_ff', sql: 'sum(forecast * forecast)' },
  { name: 's_fo', sql: 'sum(forecast * actual)' },
  { name: 'min_o', sql: 'min(actual)' },
  { name: 'max_o', sql: 'max(actual)' },
  { name: 'min_f', sql: 'min(forecast)' },
  { name: 'max_f', sql: 'max(forecast)' },
];

/**
 * The point statistics of one group over its scored pairs only (filtered once, rather than a CASE
 * over the drop reason in every aggregate); the dropped pairs are counted in a second aggregate
 * over them alone, which DuckDB skips outright where the columns' statistics show none.
 */
function pointStatsSql(
  pairs: string,
  k: GroupKeys,
  options: MetricOptions,
  chunk: string | null,
  engine: StatsEngine,
): string {
  const expanded = expandedSql(pairs, k.group, options, chunk);
  const select = `${k.select}, ${chunk === null ? '0 AS chunk' : 'chunk'}`;
  const by = groupBy(k, chunk === null ? [] : ['chunk']);
  const stats = POINT_STATS.filter((p) => options.deadbandPct > 0 || !p.deadbandOnly);
  const dropCounts = DROP_REASONS.map((r) => `count(*) FILTER (WHERE drop_reason = '${r}') AS dropped_${r}`).join(', ');
  const scored = longSql(
    engine === 'native'
      ? `SELECT * EXCLUDE (st), ${stats.map((p) => `st.${p.name} AS ${p.name}`).join(', ')} FROM (
  SELECT ${select}, efsync_point_stats(actual, forecast, reference, capacity,
    ${options.mapeMinActualPct / 100}, ${options.deadbandPct / 100}) AS st
  FROM (${expanded}) WHERE drop_reason IS NULL ${by})`
      : `
WITH errors AS (${errorsSql(expanded, options)})
SELECT ${select}, ${stats.map((p) => `${p.sql} AS ${p.name}`).join(', ')}
FROM errors ${by}`,
  );
  const dropped = longSql(`
SELECT ${select}, 0 AS n, count(*) AS dropped, ${dropCounts}, count(forecast) AS c_forecast, count(reference) AS c_reference
FROM (${expanded}) WHERE drop_reason IS NOT NULL ${by}`);
  return `SELECT * FROM (${scored})\nUNION ALL\nSELECT * FROM (${dropped})`;
}

/** The scored pairs of `expanded` with their error, absolute percentage, normalised and reference errors. */
function errorsSql(expanded: string, options: MetricOptions): string {
  const mapeFloor = `(CASE WHEN capacity > 0 THEN ${options.mapeMinActualPct / 100} * capacity ELSE 0.0 END)`;
  const error = (x: string) => errorSql(x, 'actual', options.deadbandPct);
  return `SELECT *, ${error('forecast')} AS e,
    CASE WHEN abs(actual) > ${mapeFloor} THEN abs(${error('forecast')} / actual) END AS ape,
    CASE WHEN capacity > 0 THEN ${error('forecast')} / capacity END AS e_norm,
    CASE WHEN forecast IS NOT NULL THEN ${error('reference')} END AS e_ref
  FROM (${expanded}) WHERE drop_reason IS NULL`;
}

/** The pairs relation once per group, with the group's key, sort number and chunk. */
function allGroupsSql(pairs: string, options: MetricOptions, chunk: string | null): string {
  return options.groups
    .map((group) => {
      const g = groupSql(group, options);
      return `SELECT subject, model, '${group}' AS grp, ${g.key} AS key, ${g.order} AS key_order, ${chunk ?? '0'} AS chunk,
        pid, actual, reference, drop_reason FROM ${pairs} WHERE ${g.key} IS NOT NULL`;
    })
    .join('\nUNION ALL\n');
}

const KEYS = 'subject, model, grp, key, key_order, chunk';

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

/**
 * Sums of the quantile sets' per-pair scores (CRPS, coverage) and, per level, the pinball sums.
 * The pairs with sets and their quantiles are materialised first (qp, qq: the quantiles of
 * those pairs, found by a semi-join that builds on their pids), so the joins after them build on
 * relations of known size: left to estimate a filtered scan, DuckDB builds on the whole
 * quantile table, however few sets a slice has.
 */
function quantileStatsSql(
  withSets: string,
  quantileTable: string,
  options: MetricOptions,
  chunk: string | null,
): string {
  const materialised = `qp AS MATERIALIZED (SELECT * FROM ${withSets}),
qq AS MATERIALIZED (SELECT * FROM ${quantileTable} WHERE pid IN (SELECT pid FROM qp))`;
  const [pairs, quantiles] = ['qp', 'qq'];
  const sums = (x: string) => `count(${x}) AS n_${x}, sum(${x}) AS s_${x}`;
  const set = longSql(`
WITH ${materialised},
expanded AS (${allGroupsSql(pairs, options, chunk)}),
per_pair AS (${quantilePairsSql(pairs, quantiles)})
SELECT ${KEYS}, ${sums('crps')}, ${sums('crps_pinball')}, ${sums('covered')}, ${sums('nominal')},
  -- the reference is a single value: the CRPS of its step CDF is its absolute error
  count(reference) AS n_crps_ref, sum(abs(reference - actual)) AS s_crps_ref
FROM expanded JOIN per_pair USING (pid)
GROUP BY ${KEYS}`);
  const pinball = (fx: string) => `(${fx} - x.actual) * (q.level - CASE WHEN x.actual > ${fx} THEN 1 ELSE 0 END)`;
  const keys = KEYS.split(', ')
    .map((c) => `x.${c}`)
    .join(', ');
  const stats = ['n', 'below', 's_pinball', 'n_ref', 's_pinball_ref'];
  const level = `
WITH ${materialised},
expanded AS (${allGroupsSql(pairs, options, chunk)}),
sums AS (
  SELECT ${keys}, CAST(q.level AS VARCHAR) AS level, count(*) AS n, count(*) FILTER (WHERE x.actual <= q.q) AS below,
    sum(${pinball('q.q')}) AS s_pinball, count(x.reference) AS n_ref, sum(${pinball('x.reference')}) AS s_pinball_ref
  FROM expanded x JOIN ${quantiles} q USING (pid)
  WHERE x.drop_reason IS NULL
  GROUP BY ${keys}, q.level
)
SELECT ${KEYS}, unnest([${stats.map((s) => `'${s}|' || level`).join(', ')}]) AS name,
  unnest([${stats.map((s) => `CAST(${s} AS DOUBLE)`).join(', ')}]) AS value
FROM sums`;
  return `SELECT * FROM (${set})\nUNION ALL\nSELECT * FROM (${level})`;
}

/** Contingency counts of every event per group key and chunk. */
function eventStatsSql(pairs: string, options: MetricOptions, chunk: string | null): string {
  const events = options.events ?? [];
  return `
WITH expanded AS (${allGroupsSql(pairs, options, chunk)}),
judged AS (${eventPairsSql(pairs, events)}),
counts AS (
  SELECT ${KEYS}, j.event,
    count(*) FILTER (WHERE j.fe AND j.oe) AS tp, count(*) FILTER (WHERE j.fe AND NOT j.oe) AS fp,
    count(*) FILTER (WHERE NOT j.fe AND NOT j.oe) AS tn, count(*) FILTER (WHERE NOT j.fe AND j.oe) AS fn
  FROM expanded x JOIN judged j USING (pid)
  GROUP BY ${KEYS}, j.event
)
SELECT ${KEYS}, stat || '|' || event AS name, CAST(value AS DOUBLE) AS value
FROM (UNPIVOT counts ON tp, fp, tn, fn INTO NAME stat VALUE value)`;
}

/**
 * Every statistic of every group of `pairs` (and `quantiles`), per chunk (`chunk` an expression
 * over the pairs, e.g. the UTC day of the valid time; null for one chunk, 0).
 */
export function statsSql(
  pairs: string,
  quantiles: string | null,
  options: MetricOptions,
  chunk: string | null,
  engine: StatsEngine,
  single?: SingleSubject,
): string {
  const parts = options.groups.map((group) =>
    pointStatsSql(pairs, groupKeys(group, options, single), options, chunk, engine),
  );
  // Only scored pairs of a subject that has quantile sets (the warehouse's quantiles, a file's
  // pairs) have quantiles: the joins with them build on these alone, a few of the pairs, not on
  // every pair of every group.
  const withSets = `(SELECT * FROM ${pairs} WHERE drop_reason IS NULL AND subject IN ('quantiles', 'pairs'))`;
  if (quantiles) parts.push(quantileStatsSql(withSets, quantiles, options, chunk));
  if (options.events?.length) parts.push(eventStatsSql(pairs, options, chunk));
  return parts.map((part) => `SELECT * FROM (${part})`).join('\nUNION ALL\n');
}

/**
 * The histogram of every group: scored actuals and forecasts per bin (no chunk: bins are merged
 * as counts). Actuals and forecasts are binned and counted by two aggregates, whose few rows are
 * then added per bin: one aggregate over both, their rows stacked, cost a sixth more.
 * `allScored` says the statistics found no dropped pair: then the drop reason is not read, which
 * over a pairs file is a CASE over three value columns (about 0.4x a scan per aggregate).
 */
export function histogramSql(
  pairs: string,
  options: MetricOptions,
  engine: StatsEngine,
  single?: SingleSubject,
  allScored = false,
): string {
  return options.groups
    .map((group) => {
      const k = groupKeys(group, options, single);
      const scored = `(${expandedSql(pairs, group, options, null)}) WHERE ${allScored ? 'TRUE' : 'drop_reason IS NULL'}`;
      const columns = k.columns.map((c) => `${c}, `).join('');
      const counts = (x: string, filter: string) =>
        `SELECT ${columns}${binSql(x, engine)} AS bin, count(*) AS n FROM ${scored}${filter} ${groupBy(k, ['bin'])}`;
      return `SELECT ${k.select}, bin, sum(n_o) AS n_o, sum(n_f) AS n_f FROM (
        SELECT *, n AS n_o, 0 AS n_f FROM (${counts('actual', '')})
        UNION ALL
        SELECT *, 0 AS n_o, n AS n_f FROM (${counts('forecast', ' AND forecast IS NOT NULL')}))
      ${groupBy(k, ['bin'])}`;
    })
    .join('\nUNION ALL\n');
}

/** One of `parts` hash partitions of the group keys, as a condition on a relation of histogram or statistics rows. */
export function groupPartSql(part: number, parts: number): string {
  return parts === 1 ? 'TRUE' : `hash(subject, model, grp, key) % ${parts} = ${part}`;
}

/** Statistics merged over chunks (or per chunk, with `by` ['chunk']): one row per group key and name. */
export function mergedStatsSql(stats: string, by: string[] = []): string {
  const keys = ['subject', 'model', 'grp', 'key', ...by, 'name'].join(', ');
  return `SELECT ${keys}, min(key_order) AS key_order,
    CASE WHEN starts_with(name, 'min_') THEN min(value) WHEN starts_with(name, 'max_') THEN max(value) ELSE sum(value) END AS value
  FROM ${stats} GROUP BY ${keys}`;
}

/**
 * KSI, OVER (over the pairs with a forecast, n of them) and the medians of actuals and
 * forecasts of every group key from its bins: the running count of actuals minus forecasts
 * over the bins in order gives n · |ECDF_o − ECDF_f| between one bin's value and the next.
 */
export function binnedSql(histogram: string, ksCritical: number): string {
  const keys = 'subject, model, grp, key';
  const same = keys
    .split(', ')
    .map((c) => `s.${c} IS NOT DISTINCT FROM t.${c}`)
    .join(' AND ');
  const middle = (count: string, total: string) =>
    `(min(x) FILTER (WHERE ${count} >= (${total} + 1) // 2) + min(x) FILTER (WHERE ${count} >= ${total} // 2 + 1)) / 2`;
  return `
WITH bins AS (
  SELECT ${keys}, bin, ${binValueSql('bin')} AS x, sum(n_o) AS n_o, sum(n_f) AS n_f FROM ${histogram} GROUP BY ${keys}, bin
),
-- the totals by a join, not a second window: that would sort the bins again
totals AS (SELECT ${keys}, sum(n_o) AS total_o, sum(n_f) AS total_f FROM bins GROUP BY ${keys}),
steps AS (
  SELECT *, sum(n_o) OVER w AS cum_o, sum(n_f) OVER w AS cum_f, lead(x) OVER w - x AS dx
  FROM bins WINDOW w AS (PARTITION BY ${keys} ORDER BY bin)
),
d AS (
  SELECT s.*, t.total_o, t.total_f, abs(cum_o - cum_f) / t.total_f AS dist, ${ksCritical} / sqrt(t.total_f) AS vc
  FROM steps s JOIN totals t ON ${same}
)
SELECT ${keys},
  CASE WHEN max(total_f) > 0 THEN coalesce(sum(dist * dx), 0) END AS ksi,
  CASE WHEN max(total_f) > 0 THEN coalesce(sum(CASE WHEN dist > vc THEN (dist - vc) * dx ELSE 0 END), 0) END AS over,
  ${middle('cum_o', 'total_o')} AS median_o,
  ${middle('cum_f', 'total_f')} AS median_f
FROM d GROUP BY ${keys}`;
}
