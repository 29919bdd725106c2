// Alignment of the warehouse's forecasts, model outputs and actuals into the pairs relation
// (its columns: relation.ts), all in DuckDB temp tables on the warehouse connection:
//   1. per site, the interval length of its forecasts (given, else the site's model_resolution,
//      else the most common step in the data) and of its actuals (given, else the most common
//      step); actuals coarser than the forecast are never scored;
//   2. actuals resampled to the forecast intervals by mean, each sub-point placed by the two
//      interval labels; an interval missing more than `maxMissingPct` of its sub-points is dropped;
//   3. forecast points of every subject, inner-joined with actual and reference: a point missing
//      any of them stays in the relation with its drop_reason, so drops are counted per group;
//   4. the capacity at each valid time from the site's capacity timeline (held forward).
import { instantLiteral, sqlList } from '../../warehouse/sql.js';
import { withJoinsBuiltOnTheRight } from '../../warehouse/settings.js';
import { RequestError } from '../../errors.js';
import { DAY, HOUR, MINUTE } from '../../time.js';
import type { IntervalLabel } from '../../warehouse/rows.js';
import { groupTimeSql } from '../compute/groups.js';
import type { SqlRunner } from '../compute/metrics.js';
import { referencePeriodMs, referencePeriodUsSql, referenceTimeSql } from './reference.js';
import { pairColumnsDdl } from './relation.js';

export interface AlignOptions {
  /** Valid-time window [from, to) in epoch ms; open when absent. */
  from?: number;
  to?: number;
  /** Only these sites, by id or name. */
  sites?: string[];
  /** Only these model outputs, by model name (the site forecast is always scored). */
  models?: string[];
  forecastLabel: IntervalLabel;
  actualLabel: IntervalLabel;
  /** Interval lengths in ms; inferred per site from the data when absent. */
  forecastIntervalMs?: number;
  actualIntervalMs?: number;
  /** An interval missing more than this share of its actual sub-points is dropped. */
  maxMissingPct: number;
  /** Score flagged actuals too (actual_flags); by default they count as missing. */
  includeFlagged?: boolean;
  /** The ledger's refresh aligns whole sites of about this many points at a time; all at once when absent. */
  batchPoints?: number;
}

export interface SkippedSite {
  siteId: string;
  reason: string;
}

export interface Aligned {
  pairs: string;
  quantiles: string | null;
  skipped: SkippedSite[];
}

export const PAIRS_TABLE = 'acc_pairs';
export const QUANTILES_TABLE = 'acc_quantiles';

const us = (ms: number) => ms * 1000;
const ts = instantLiteral;

export function windowSql(column: string, options: Pick<AlignOptions, 'from' | 'to'>): string {
  const parts = ['TRUE'];
  if (options.from !== undefined) parts.push(`${column} >= ${ts(options.from)}`);
  if (options.to !== undefined) parts.push(`${column} < ${ts(options.to)}`);
  return parts.join(' AND ');
}

/** Days of actuals, the latest of the window, that their most common step is read from. */
const STEP_SAMPLE_DAYS = 3;

/**
 * The most common positive step between consecutive valid times per site (microseconds) in
 * `sample` (site_id, valid_time and the `partition` columns): a bounded sample, so that the
 * sort behind it takes as much memory at a year's depth as at a week's.
 */
function stepSql(sample: string, partition: string): string {
  return `SELECT site_id, mode(step) AS step FROM (
      SELECT site_id, epoch_us(valid_time) - lag(epoch_us(valid_time)) OVER (PARTITION BY ${partition} ORDER BY valid_time) AS step
      FROM (${sample}))
    WHERE step > 0 GROUP BY site_id`;
}

/** The rows of `alias` at the sites `sites` selects, in the window. */
function sampled(alias: string, sites: string, options: AlignOptions): string {
  return `${alias}.site_id IN (${sites}) AND ${windowSql(`${alias}.valid_time`, options)}`;
}

/** The points of the latest vintage (by `issued`) of each `key` in the window: one issue's horizon each. */
function latestVintageSql(table: string, key: string, issued: string, sites: string, options: AlignOptions): string {
  return `SELECT t.* FROM ${table} t
      JOIN (SELECT ${key}, max(${issued}) AS ${issued} FROM ${table} l WHERE ${sampled('l', sites, options)} GROUP BY ${key}) v
      USING (${key}, ${issued})
      WHERE ${sampled('t', sites, options)}`;
}

/** Each site's actuals of the last STEP_SAMPLE_DAYS days of the window it has actuals in. */
function latestActualsSql(sites: string, options: AlignOptions): string {
  return `SELECT t.* FROM actuals t WHERE ${sampled('t', sites, options)} AND t.valid_time >= (
      SELECT max(l.valid_time) - INTERVAL ${STEP_SAMPLE_DAYS} DAY FROM actuals l WHERE l.site_id = t.site_id AND ${sampled('l', sites, options)})`;
}

/** The site's `model_resolution` setting (15min, 30min, 1h, 1d) in microseconds, NULL when other. */
function resolutionUsSql(setting: string): string {
  const known = Object.entries(MODEL_RESOLUTIONS)
    .map(([text, ms]) => `WHEN '${text}' THEN ${us(ms)}`)
    .join(' ');
  return `CAST(CASE ${setting} ${known} END AS BIGINT)`;
}

const MODEL_RESOLUTIONS: Record<string, number> = { '15min': 15 * MINUTE, '30min': 30 * MINUTE, '1h': HOUR, '1d': DAY };

export async function chooseSites(sql: SqlRunner, options: AlignOptions): Promise<void> {
  const filter = options.sites?.length
    ? `site_id IN (${sqlList(options.sites)}) OR name IN (${sqlList(options.sites)})`
    : 'TRUE';
  await sql.run(`CREATE OR REPLACE TEMP TABLE acc_chosen AS
    SELECT site_id, name, type, nameplate_kw, ${resolutionUsSql("settings->>'$.model_resolution'")} AS resolution
    FROM sites WHERE ${filter}`);
  if (options.sites?.length) {
    const found = await sql.all<{ site_id: string; name: string }>('SELECT site_id, name FROM acc_chosen');
    const known = new Set(found.flatMap((s) => [s.site_id, s.name]));
    const missing = options.sites.filter((s) => !known.has(s));
    if (missing.length)
      throw new RequestError(
        `--site: no site with id or name ${missing.map((s) => `"${s}"`).join(', ')} in the warehouse`,
      );
  }
  // Steps are read from the data only where neither an option nor the site's setting gives them,
  // each kind in a subquery of its own that acc_site joins: correlated to each site, they ran out
  // of memory where the same subqueries alone fit.
  const unset = 'SELECT site_id FROM acc_chosen WHERE resolution IS NULL';
  const forecastSteps =
    options.forecastIntervalMs !== undefined
      ? NO_STEPS
      : `SELECT site_id, min(step) AS step FROM (
      ${stepSql(latestVintageSql('forecasts', 'site_id, model_name', 'update_time', unset, options), 'site_id, model_name')}
      UNION ALL
      ${stepSql(latestVintageSql('model_outputs', 'model_id', 'as_of', unset, options), 'model_id')}
    ) GROUP BY site_id`;
  const actualSteps =
    options.actualIntervalMs !== undefined
      ? NO_STEPS
      : stepSql(latestActualsSql('SELECT site_id FROM acc_chosen', options), 'site_id');
  const fixed = (ms: number | undefined) => (ms === undefined ? 'NULL' : String(us(ms)));
  await sql.run(`CREATE OR REPLACE TEMP TABLE acc_site AS
    SELECT c.site_id, c.type, c.nameplate_kw,
      coalesce(${fixed(options.forecastIntervalMs)}, c.resolution, f.step) AS f_len,
      coalesce(${fixed(options.actualIntervalMs)}, a.step) AS a_len,
      ${referencePeriodUsSql('c.type')} AS ref_period
    FROM acc_chosen c LEFT JOIN (${forecastSteps}) f USING (site_id) LEFT JOIN (${actualSteps}) a USING (site_id)`);
}

/** The steps of no site: where an option gives every site's. */
const NO_STEPS = 'SELECT NULL::VARCHAR AS site_id, NULL::BIGINT AS step WHERE false';

/** Sites whose actuals cannot be resampled to their forecast intervals are left out, with the reason. */
export async function unusableSites(sql: SqlRunner, options: AlignOptions): Promise<SkippedSite[]> {
  if (options.forecastLabel === 'instant') return [];
  const rows = await sql.all<{ site_id: string; f_len: bigint; a_len: bigint }>(
    `SELECT site_id, f_len, a_len FROM acc_site WHERE f_len IS NOT NULL AND a_len IS NOT NULL AND (a_len > f_len OR f_len % a_len <> 0)`,
  );
  const minutes = (v: bigint) => `${Number(v) / 60e6} min`;
  const skipped = rows.map((r) => ({
    siteId: r.site_id,
    reason:
      Number(r.a_len) > Number(r.f_len)
        ? `actuals every ${minutes(r.a_len)} are coarser than the forecast intervals of ${minutes(r.f_len)}: an interval forecast is never scored against a coarser observation`
        : `forecast intervals of ${minutes(r.f_len)} are not a whole number of actual intervals of ${minutes(r.a_len)}`,
  }));
  if (skipped.length) await sql.run(`DELETE FROM acc_site WHERE site_id IN (${sqlList(skipped.map((s) => s.siteId))})`);
  return skipped;
}

export const modelFilterSql = (options: AlignOptions) =>
  options.models?.length ? `m.name IN (${sqlList(options.models)})` : 'TRUE';

/**
 * The forecast points of every subject in the window. `narrow`, when given, wraps their query
 * (rows with site_id, issue_time, valid_time) in one that keeps some of them: the incremental
 * score aligns only what changed (incremental.ts).
 */
async function collectPoints(
  sql: SqlRunner,
  options: AlignOptions,
  narrow: (points: string) => string = (points) => points,
  { forecasts, modelOutputs }: PointSources = TABLES,
): Promise<void> {
  const modelFilter = modelFilterSql(options);
  await sql.run(`CREATE OR REPLACE TEMP TABLE acc_points AS
    ${narrow(`SELECT 'forecast' AS subject, CAST(NULL AS VARCHAR) AS model, f.site_id, f.model_name AS served_model,
      f.update_time AS issue_time, f.valid_time, f.forecast, f.capacity AS service_capacity, CAST(NULL AS DOUBLE) AS level
    FROM ${forecasts} f WHERE f.site_id IN (SELECT site_id FROM acc_batch) AND ${windowSql('f.valid_time', options)}
    UNION ALL
    SELECT CASE WHEN m.quantile IS NULL THEN 'model' ELSE 'quantiles' END, CASE WHEN m.quantile IS NULL THEN o.model_name END,
      o.site_id, NULL, o.as_of, o.valid_time, o.forecast, o.capacity, m.quantile
    FROM ${modelOutputs} o JOIN models m USING (site_id, model_id)
    WHERE o.site_id IN (SELECT site_id FROM acc_batch) AND ${windowSql('o.valid_time', options)} AND ${modelFilter}`)}`);
}

/** The relations the points are read from: the tables, or a caller's narrower ones of their rows (ColdStore.between). */
export interface PointSources {
  forecasts: string;
  modelOutputs: string;
}

const TABLES: PointSources = { forecasts: 'forecasts', modelOutputs: 'model_outputs' };

/**
 * Quantile levels per site: those of its quantile models with outputs in the window, read from
 * the outputs themselves so that a partial alignment expects every level all the same.
 */
export async function siteLevels(sql: SqlRunner, options: AlignOptions): Promise<void> {
  await sql.run(`CREATE OR REPLACE TEMP TABLE acc_site_levels AS
    SELECT o.site_id, count(DISTINCT m.quantile) AS levels
    FROM model_outputs o JOIN models m USING (site_id, model_id)
    WHERE m.quantile IS NOT NULL AND o.site_id IN (SELECT site_id FROM acc_site)
      AND ${windowSql('o.valid_time', options)} AND ${modelFilterSql(options)}
    GROUP BY o.site_id`);
}

/**
 * Actuals resampled to each site's forecast intervals: the mean of the sub-points, labelled as
 * the forecast is, kept when no more than `maxMissingPct` of the expected sub-points are missing.
 * A partial alignment reads the actuals of the hours its points need only (acc_needed_hours).
 */
async function resampleActuals(sql: SqlRunner, options: AlignOptions, partial: boolean): Promise<void> {
  if (partial) await neededHours(sql);
  const [bounds] = await sql.all<{ lo: bigint | null; hi: bigint | null }>(
    `SELECT min(epoch_us(least(issue_time, valid_time))) AS lo, max(epoch_us(valid_time)) AS hi FROM acc_points`,
  );
  // A reference reaches back at most one persistence period (a week, for load) before the issue time.
  const lo = bounds.lo === null ? 0 : Number(bounds.lo) - us(referencePeriodMs('load') + DAY);
  const hi = bounds.hi === null ? 0 : Number(bounds.hi) + us(DAY);
  const t = 'epoch_us(a.valid_time)';
  const instantForecast = options.forecastLabel === 'instant';
  const position = {
    beginning: t,
    ending: `${t} - s.a_len`,
    // an instant on a boundary belongs to the interval its label closes
    instant: options.forecastLabel === 'ending' ? `${t} - 1` : t,
  }[options.actualLabel];
  const start = `((${position}) // s.f_len) * s.f_len`;
  const label = instantForecast ? t : options.forecastLabel === 'ending' ? `${start} + s.f_len` : start;
  const expected = instantForecast ? '1' : 's.f_len // s.a_len';
  const enough = (present: string) =>
    `any_value(${expected}) - ${present} <= ${options.maxMissingPct / 100} * any_value(${expected})`;
  // Flagged values count as missing: an interval that has enough values only with them is kept
  // apart (flagged_out), so its forecasts are dropped as 'flagged' rather than 'actual'.
  const kept = options.includeFlagged ? 'TRUE' : 'f.flags IS NULL';
  await sql.run(`CREATE OR REPLACE TEMP TABLE acc_actual_iv AS
    SELECT * FROM (
      SELECT a.site_id, make_timestamptz(${label}) AS label_time,
        CASE WHEN ${enough(`count(a.value) FILTER (WHERE ${kept})`)} THEN avg(a.value) FILTER (WHERE ${kept}) END AS actual,
        NOT (${enough(`count(a.value) FILTER (WHERE ${kept})`)}) AS flagged_out
      FROM actuals a JOIN acc_batch s USING (site_id)
      LEFT JOIN (${batchFlagsSql(lo, hi)}) f ON f.site_id = a.site_id AND f.valid_time = a.valid_time
      WHERE s.f_len IS NOT NULL AND s.a_len IS NOT NULL
        AND a.valid_time >= make_timestamptz(${lo}) AND a.valid_time < make_timestamptz(${hi})
        ${partial ? `AND EXISTS (SELECT 1 FROM acc_needed_hours n WHERE n.site_id = a.site_id AND n.hour = ${t} // ${us(HOUR)})` : ''}
      GROUP BY a.site_id, ${label}
      HAVING ${enough('count(a.value)')})`);
}

/**
 * The flags of the batch's actuals from `lo` to `hi` (epoch microseconds): the side of the join
 * its hash table holds, so it must grow with the batch, not with the warehouse.
 */
function batchFlagsSql(lo: number, hi: number): string {
  return `SELECT site_id, valid_time, flags FROM actual_flags
    WHERE site_id IN (SELECT site_id FROM acc_batch) AND valid_time >= make_timestamptz(${lo}) AND valid_time < make_timestamptz(${hi})`;
}

/**
 * The UTC hours (epoch hours, per site) whose actuals the points of a partial alignment need: an
 * interval labelled L holds actuals from L - f_len to L + f_len + a_len whatever the labels, for
 * the point's own interval and for its reference's; a spare hour on each side. An interval the
 * hours cover only in part is resampled wrongly, but no point of acc_points is labelled by it.
 */
async function neededHours(sql: SqlRunner): Promise<void> {
  await sql.run(`CREATE OR REPLACE TEMP TABLE acc_needed_hours AS
    WITH labels AS (
      SELECT site_id, valid_time AS t FROM acc_points
      UNION
      SELECT p.site_id, ${referenceTimeSql('p.valid_time', 'p.issue_time', 's.ref_period')}
      FROM acc_points p JOIN acc_batch s USING (site_id)
    )
    SELECT DISTINCT site_id, unnest(range((epoch_us(t) - m) // ${us(HOUR)}, (epoch_us(t) + m) // ${us(HOUR)} + 1)) AS hour
    FROM labels JOIN (SELECT site_id, coalesce(f_len, 0) + coalesce(a_len, 0) + ${us(HOUR)} AS m FROM acc_batch) USING (site_id)`);
}

/**
 * The chosen sites' capacity segments, each cut short where the next one starts: a time lies
 * in at most one, the latest segment starting at or before it, and is given its value while
 * the segment lasts (after its end, the service's capacity or the nameplate). As a range join
 * on the site its build side is these few rows, where an ASOF join sorts every point, more than
 * a memory limit holds inside a transaction.
 */
function capacitySegmentsSql(): string {
  const from = "coalesce(valid_from, '-infinity'::TIMESTAMPTZ)";
  const next = `lead(${from}) OVER (PARTITION BY site_id ORDER BY ${from}, segment_index)`;
  return `SELECT site_id, ${from} AS valid_from,
      least(coalesce(valid_to, 'infinity'::TIMESTAMPTZ), coalesce(${next}, 'infinity'::TIMESTAMPTZ)) AS until, value_kw
    FROM site_capacity WHERE site_id IN (SELECT site_id FROM acc_batch)`;
}

async function buildPairs(sql: SqlRunner, options: AlignOptions): Promise<void> {
  const groupTime = groupTimeSql('n.valid_time', options.forecastLabel);
  await sql.run(`CREATE OR REPLACE TEMP TABLE ${PAIRS_TABLE} (${pairColumnsDdl()})`);
  await sql.run(`INSERT INTO ${PAIRS_TABLE}
    WITH points AS (
      SELECT subject, model, site_id, served_model, issue_time, valid_time, forecast, service_capacity,
        CAST(NULL AS BIGINT) AS levels_present, CAST(NULL AS BIGINT) AS levels_expected
      FROM acc_points WHERE level IS NULL
      UNION ALL
      SELECT 'quantiles', NULL, p.site_id, NULL, p.issue_time, p.valid_time, NULL, any_value(p.service_capacity),
        count(p.forecast), any_value(l.levels)
      FROM acc_points p JOIN acc_site_levels l USING (site_id)
      WHERE p.level IS NOT NULL GROUP BY p.site_id, p.issue_time, p.valid_time
    ),
    numbered AS (
      SELECT row_number() OVER () AS pid, n.*, ${groupTime} AS group_time, s.nameplate_kw,
        ${referenceTimeSql('n.valid_time', 'n.issue_time', 's.ref_period')} AS reference_time
      FROM points n JOIN acc_batch s USING (site_id)
    ),
    capacity AS (${capacitySegmentsSql()})
    SELECT n.pid, n.subject, n.model, n.site_id, n.served_model, n.issue_time, n.valid_time, n.group_time, n.reference_time,
      n.forecast, a.actual, r.actual AS reference,
      coalesce(c.value_kw, n.service_capacity, n.nameplate_kw) AS capacity,
      CASE WHEN a.flagged_out THEN 'flagged'
           WHEN a.actual IS NULL THEN 'actual'
           WHEN n.subject <> 'quantiles' AND n.forecast IS NULL THEN 'forecast'
           WHEN r.actual IS NULL THEN 'reference'
           WHEN n.subject = 'quantiles' AND n.levels_present < n.levels_expected THEN 'quantiles' END AS drop_reason
    FROM numbered n
    LEFT JOIN acc_actual_iv a ON a.site_id = n.site_id AND a.label_time = n.valid_time
    LEFT JOIN acc_actual_iv r ON r.site_id = n.site_id AND r.label_time = n.reference_time
    LEFT JOIN capacity c ON c.site_id = n.site_id AND n.group_time >= c.valid_from AND n.group_time < c.until`);
  await sql.run(`CREATE OR REPLACE TEMP TABLE ${QUANTILES_TABLE} AS
    SELECT p.pid, q.level, q.forecast AS q
    FROM ${PAIRS_TABLE} p JOIN acc_points q
      ON q.level IS NOT NULL AND q.site_id = p.site_id AND q.issue_time = p.issue_time AND q.valid_time = p.valid_time
    WHERE p.subject = 'quantiles'`);
}

/** Builds the pairs and quantile relations of the warehouse's data in temp tables, all sites at once. */
export async function alignWarehouse(sql: SqlRunner, options: AlignOptions): Promise<Aligned> {
  await chooseSites(sql, options);
  const skipped = await unusableSites(sql, options);
  await siteLevels(sql, options);
  await sql.run('CREATE OR REPLACE TEMP TABLE acc_batch AS SELECT * FROM acc_site');
  await alignPoints(sql, options);
  const [{ count }] = await sql.all<{ count: bigint }>(`SELECT count(*) AS count FROM ${QUANTILES_TABLE}`);
  return { pairs: PAIRS_TABLE, quantiles: Number(count) > 0 ? QUANTILES_TABLE : null, skipped };
}

/**
 * The pairs of the sites in acc_batch (rows of acc_site, from chooseSites and unusableSites, with
 * their quantile levels from siteLevels), all of them or only the points `narrow` keeps (see
 * collectPoints), read from `sources` (default: the tables).
 */
export async function alignPoints(
  sql: SqlRunner,
  options: AlignOptions,
  narrow?: (points: string) => string,
  sources?: PointSources,
): Promise<void> {
  if (narrow) await withJoinsBuiltOnTheRight(sql, () => collectPoints(sql, options, narrow, sources));
  else await collectPoints(sql, options, undefined, sources);
  await resampleActuals(sql, options, narrow !== undefined);
  await buildPairs(sql, options);
}

/** Drops the temp tables of an alignment. */
export async function dropAlignment(sql: SqlRunner): Promise<void> {
  for (const table of [
    'acc_chosen',
    'acc_site',
    'acc_batch',
    'acc_points',
    'acc_actual_iv',
    'acc_site_levels',
    'acc_needed_hours',
    PAIRS_TABLE,
    QUANTILES_TABLE,
  ]) {
    await sql.run(`DROP TABLE IF EXISTS ${table}`);
  }
}
