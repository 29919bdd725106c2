// Data-quality flags on actuals, in the spirit of the Solar Forecast Arbiter's validation toolkit
// (validation/validator.py): a bitmask per suspect value in `actual_flags` (migration 006 names
// every bit in `quality_flags`), computed in SQL over the warehouse, one DELETE and one INSERT per
// batch of sites. This module is the one place that computes them (flagActuals); the others only
// say when, each with the settings of config.ts (qualitySettingsFromConfig):
//   - a load that changes actuals records the site and the earliest changed valid time in
//     `actual_flags_pending`, in its own transaction (markFlagsPending), and flagPending computes
//     what is pending: in that transaction when the load is given thresholds, else the sync once
//     after its series;
//   - the accuracy step recomputes them over its window before every score (reflagActuals) for
//     each site whose thresholds, capacity timeline or outage windows (src/capacity/windows.ts)
//     changed since they were last recomputed so (actual_flags_basis).
import { createHash } from 'node:crypto';
import { DAY, HOUR } from '../time.js';
import type { IntervalLabel } from './rows.js';
import { digestPerSiteSql, digestTextSql, instantLiteral, quoteLiteral, sqlList } from './sql.js';
import { runInHalves } from './executor.js';
import type { Warehouse } from './warehouse.js';
import { faultPoint } from '../fault.js';

/** The bits of actual_flags.flags; quality_flags in the warehouse says the same in words. */
export const FLAGS = {
  missing: 1,
  stale: 2,
  negative: 4,
  over_capacity: 8,
  night: 16,
  clipping: 32,
  outage: 64,
} as const;
export type FlagName = keyof typeof FLAGS;

export interface QualitySettings {
  /** A value held (within 1e-5 relative) this long or longer is stale from then on. */
  staleSpanMs: number;
  /** Solar and wind below -negativePct % of capacity are negative (SFA: -5 %). */
  negativePct: number;
  /** Above capacity by more than this share (SFA: 105 % of capacity by day). */
  overCapacityPct: number;
  /** Solar output above this share of capacity with the sun below the horizon (SFA: 5 % at night). */
  nightPct: number;
  /** A plateau: this many consecutive values or more ... */
  clippingPoints: number;
  /** ... within this share of capacity of each other (SFA's rtol 5e-3), at half the capacity or more (solar). */
  clippingPct: number;
  /** How the actuals' timestamps label their intervals (which instant the capacity and outages apply at). */
  label: IntervalLabel;
}

/** Intervals longer than this (daily values) are never judged by the sun: they span a day and a night. */
const LONGEST_SUN_INTERVAL_US = 3 * HOUR * 1000;

const RAD = Math.PI / 180;

/**
 * `source` (a query with columns latitude and longitude, degrees) with a column sun_<name> for
 * each of `instants` (name → an expression of epoch seconds over `source`): the up component of
 * the unit vector towards the sun (the sine of its elevation) at that instant, by NOAA's
 * declination, equation of time and hour angle, the same formulas as the emulator's sunVector
 * (src/emulator/solar.ts). Each step is a column of its own query: written as one expression, the
 * formula repeats its angle a dozen times, and three of them made a statement that took ~200 ms
 * to plan, more than flagging a batch's actuals.
 */
export function withSunUp(source: string, instants: Record<string, string>): string {
  const names = Object.keys(instants);
  const step = (from: string, columns: (name: string) => string) =>
    `(SELECT *, ${names.map(columns).join(', ')} FROM ${from})`;
  const times = step(
    `(${source})`,
    (n) => `(dayofyear(make_timestamp(CAST((${instants[n]}) * 1e6 AS BIGINT))) - 1) AS sun_${n}_day,
      (((${instants[n]}) - 86400 * floor((${instants[n]}) / 86400)) / 3600) AS sun_${n}_hour`,
  );
  const gamma = step(times, (n) => `${(2 * Math.PI) / 365} * (sun_${n}_day + (sun_${n}_hour - 12) / 24) AS sun_${n}_g`);
  const angles = step(gamma, (n) => {
    const g = `sun_${n}_g`;
    return `229.18 * (0.000075 + 0.001868 * cos(${g}) - 0.032077 * sin(${g})
        - 0.014615 * cos(2 * ${g}) - 0.040849 * sin(2 * ${g})) AS sun_${n}_eot,
      0.006918 - 0.399912 * cos(${g}) + 0.070257 * sin(${g}) - 0.006758 * cos(2 * ${g})
        + 0.000907 * sin(2 * ${g}) - 0.002697 * cos(3 * ${g}) + 0.00148 * sin(3 * ${g}) AS sun_${n}_decl`;
  });
  const phi = `(latitude * ${RAD})`;
  return step(angles, (n) => {
    const hourAngle = `(((sun_${n}_hour * 60 + sun_${n}_eot + 4 * longitude) / 4 - 180) * ${RAD})`;
    return `sin(${phi}) * sin(sun_${n}_decl) + cos(${phi}) * cos(sun_${n}_decl) * cos(${hourAngle}) AS sun_${n}`;
  });
}

/** The interval an actual at `t` (epoch µs) describes, as [start, end] in epoch µs, by its label. */
function intervalUs(label: IntervalLabel, t: string, len: string): { start: string; end: string } {
  if (label === 'ending') return { start: `(${t} - ${len})`, end: t };
  if (label === 'beginning') return { start: t, end: `(${t} + ${len})` };
  return { start: t, end: t };
}

export interface FlagScope {
  /** The sites whose flags are computed; all sites when absent. */
  sites?: readonly string[];
  /** Flags of valid times from here on (epoch ms) are recomputed; all when absent. */
  fromMs?: number;
  /** Stamps checked_at (epoch ms). */
  now: number;
}

/** How far a run of stale or clipped values is looked for before the flags recomputed (see flagActuals). */
const marginMs = (settings: QualitySettings) => Math.max(settings.staleSpanMs, DAY);

/**
 * Recomputes the flags of `scope` (its sites, from its time on) in one DELETE and one INSERT.
 * A run of stale or clipped values can reach back past `fromMs`: the values are read from
 * 2 · margin before it and flags written from margin before it, margin being the stale span or a
 * day, whichever is longer; a run that began before the values read is then at least a margin
 * old where flags are written, so it is flagged as it would be with all of history. Flags
 * computed by other rules than those recorded for their sites (actual_flags_basis) leave those
 * sites to be recomputed whole by the next reflagActuals.
 */
export async function flagActuals(
  sql: Pick<Warehouse, 'run'>,
  settings: QualitySettings,
  scope: FlagScope,
): Promise<void> {
  if (scope.sites && scope.sites.length === 0) return;
  const margin = marginMs(settings);
  const siteFilter = (alias: string) => (scope.sites ? `${alias}site_id IN (${sqlList(scope.sites)})` : 'TRUE');
  const ts = instantLiteral;
  const writeFrom = scope.fromMs === undefined ? 'TRUE' : `valid_time >= ${ts(scope.fromMs - margin)}`;
  const readFrom = scope.fromMs === undefined ? 'TRUE' : `a.valid_time >= ${ts(scope.fromMs - 2 * margin)}`;
  await sql.run(
    `DELETE FROM actual_flags_basis WHERE ${siteFilter('')} AND rules <> ${quoteLiteral(rulesDigest(settings))}`,
  );
  await sql.run(`DELETE FROM actual_flags WHERE ${siteFilter('')} AND ${writeFrom}`);
  await sql.run(`INSERT INTO actual_flags
    SELECT site_id, valid_time, flags, ${ts(scope.now)} FROM (${flagsSql(settings, siteFilter(''), `${siteFilter('a.')} AND ${readFrom}`)})
    WHERE flags <> 0 AND ${writeFrom}`);
}

/**
 * Every actual of the sites `sites` selects (over sites) that `actuals` selects (over actuals
 * `a`), with its flags. Each window holds every row it reads, sorted, so there are three (the
 * value before; the runs so far and the interval length; each plateau whole), the capacity and
 * outages are found by hash joins, the rows carry the site as its number in the slice, and the
 * site's own columns are joined in at the end.
 */
function flagsSql(s: QualitySettings, sites: string, actuals: string): string {
  const t = 'epoch_us(valid_time)';
  const { start, end } = intervalUs(s.label, t, 'coalesce(len_us, 0)');
  const generating = `type IN ('solar', 'wind')`;
  const share = (pct: number) => `${pct / 100} * capacity`;
  const same = 'value IS NOT NULL AND prev IS NOT NULL AND abs(value - prev) <= 1e-8 + 1e-5 * abs(prev)';
  const near = `value IS NOT NULL AND prev IS NOT NULL AND capacity > 0 AND abs(value - prev) <= ${share(s.clippingPct)}`;
  const bit = (name: FlagName, condition: string) => `CASE WHEN ${condition} THEN ${FLAGS[name]} ELSE 0 END`;
  const clipping = `type = 'solar' AND value IS NOT NULL AND plateau_n >= ${s.clippingPoints}
      AND plateau_hi - plateau_lo <= ${share(s.clippingPct)} AND plateau_lo >= 0.5 * capacity`;
  // A value held is explained, not stale: zero output (night, calm), a wind site at its rated
  // power, a solar plateau (flagged clipping instead).
  const explained = `(${generating} AND value = 0) OR (type = 'wind' AND value >= capacity - ${share(s.clippingPct)}) OR (${clipping})`;
  const flags = [
    bit('missing', 'value IS NULL'),
    bit(
      'stale',
      `value IS NOT NULL AND NOT coalesce(${explained}, FALSE)
      AND epoch_us(valid_time) - epoch_us(run_start) >= ${s.staleSpanMs * 1000}`,
    ),
    bit('negative', `${generating} AND value < -${s.negativePct / 100} * coalesce(capacity, 0)`),
    bit('over_capacity', `capacity > 0 AND value > (1 + ${s.overCapacityPct / 100}) * capacity`),
    bit(
      'night',
      `type = 'solar' AND value > ${s.nightPct / 100} * coalesce(capacity, 0)
      AND coalesce(len_us, 0) <= ${LONGEST_SUN_INTERVAL_US}
      AND sun_start < 0 AND sun_mid < 0 AND sun_end < 0`,
    ),
    bit('clipping', clipping),
    bit('outage', 'in_outage'),
  ];
  // the instant inside the interval: what the capacity timeline and outage windows apply at
  const at = s.label === 'ending' ? '(a.valid_time - INTERVAL 1 MICROSECOND)' : 'a.valid_time';
  // Each capacity segment (and outage window) until the next one of its site starts: where an
  // as-of join on the start would pick it. Those spans do not overlap, so a hash join on the site
  // finds at most one per actual, without sorting the actuals as an as-of join does.
  const spans = (table: string, from: string, to: string, value: string) =>
    `SELECT s.site_no, ${from} AS valid_from, least(${to}, coalesce(lead(${from}) OVER (PARTITION BY t.site_id ORDER BY ${from}), 'infinity'::TIMESTAMPTZ)) AS valid_to${value}
  FROM ${table} t JOIN sited s USING (site_id)`;
  return `
WITH sited AS (
  SELECT row_number() OVER (ORDER BY site_id)::INTEGER AS site_no, site_id, type, latitude, longitude, nameplate_kw
  FROM sites WHERE ${sites}
),
capacity AS (${spans('site_capacity', "coalesce(t.valid_from, '-infinity'::TIMESTAMPTZ)", "coalesce(t.valid_to, 'infinity'::TIMESTAMPTZ)", ', t.value_kw')}),
outages AS (${spans('capacity_windows', 't.valid_from', 't.valid_to', '')}),
placed AS (
  SELECT s.site_no, a.valid_time, a.value, coalesce(c.value_kw, s.nameplate_kw) AS capacity, o.site_no IS NOT NULL AS in_outage
  FROM actuals a JOIN sited s USING (site_id)
  LEFT JOIN capacity c ON c.site_no = s.site_no AND ${at} >= c.valid_from AND ${at} < c.valid_to
  LEFT JOIN outages o ON o.site_no = s.site_no AND ${at} >= o.valid_from AND ${at} < o.valid_to
  WHERE ${actuals}
),
stepped AS (
  SELECT *, lag(value) OVER w AS prev, epoch_us(valid_time) - lag(epoch_us(valid_time)) OVER w AS step_us
  FROM placed
  WINDOW w AS (PARTITION BY site_no ORDER BY valid_time)
),
-- a stale run starts where a value differs from the one before, so its start is the latest such
-- valid time so far; a plateau is numbered by the values that broke one so far
runs AS (
  SELECT site_no, valid_time, value, capacity, in_outage,
    max(CASE WHEN ${same} THEN NULL ELSE valid_time END) OVER w AS run_start,
    sum(CASE WHEN ${near} THEN 0 ELSE 1 END) OVER w AS plateau,
    mode(step_us) FILTER (WHERE step_us > 0) OVER whole AS len_us
  FROM stepped
  WINDOW w AS (PARTITION BY site_no ORDER BY valid_time ROWS UNBOUNDED PRECEDING),
    whole AS (PARTITION BY site_no ORDER BY valid_time ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
),
plateaus AS (
  SELECT *, count(value) OVER p AS plateau_n, min(value) OVER p AS plateau_lo, max(value) OVER p AS plateau_hi
  FROM runs
  WINDOW p AS (PARTITION BY site_no, plateau)
),
judged AS (SELECT p.*, s.site_id, s.type, s.latitude, s.longitude FROM plateaus p JOIN sited s USING (site_no))
SELECT site_id, valid_time, ${flags.join('\n    | ')} AS flags
FROM ${withSunUp('SELECT * FROM judged', {
    start: `(${start}) / 1e6`,
    mid: `((${start} + ${end}) / 2) / 1e6`,
    end: `(${end}) / 1e6`,
  })}`;
}

/**
 * The bounds of one flags statement (one DELETE and INSERT, in a transaction of its own). The two
 * statements cost about the same whatever their size, so the sync computes the flags of many
 * sites at once rather than per batch of loads. Their windows hold every value they read and
 * blocks per site, so a statement takes at most SITES_PER_STATEMENT sites and the budget's
 * `rows.flagValues` values (a site with more goes alone). The measurements behind both bounds:
 * docs/decisions/memory-budget.md and docs/benchmarks.md (2026-11-24).
 */
const SITES_PER_STATEMENT = 100;

/** A site whose flags are to be computed, with how many actuals that reads. */
interface SiteValues {
  site_id: string;
  values: number;
}

/**
 * Runs `fn` in a transaction of its own for each slice of `sites`, in order, within the bounds
 * above. A slice that runs out of DuckDB's memory is rolled back and done again in halves, down to a site alone; inside a
 * caller's transaction the error is the caller's.
 */
async function inSlices<T extends SiteValues>(
  warehouse: Warehouse,
  sites: readonly T[],
  fn: (slice: T[]) => Promise<void>,
): Promise<void> {
  for (const slice of slicesOf(sites, warehouse.rows.flagValues)) {
    // inside a caller's transaction, the transaction fails whole: no halves
    if (warehouse.insideTransaction) await fn(slice);
    else await runInHalves(slice, (part) => warehouse.transaction(() => fn([...part])));
  }
}

function slicesOf<T extends SiteValues>(sites: readonly T[], maxValues: number): T[][] {
  const slices: T[][] = [];
  let values = 0;
  for (const site of sites) {
    const last = slices.at(-1);
    if (!last || last.length === SITES_PER_STATEMENT || values + site.values > maxValues) {
      slices.push([site]);
      values = site.values;
    } else {
      last.push(site);
      values += site.values;
    }
  }
  return slices;
}

/**
 * `sites` (a query of site_id and from_time) with the actuals each reads: from 2 · margin before
 * from_time (a null from_time: all). The bound is one comparison, not an OR: DuckDB joins on a
 * condition that holds an OR by a nested loop, every site against every actual.
 */
function siteValuesSql(sites: string, settings: QualitySettings): string {
  return `SELECT s.site_id, epoch_ms(s.from_time)::DOUBLE AS from, count(a.site_id)::DOUBLE AS values
    FROM (${sites}) s LEFT JOIN actuals a
      ON a.site_id = s.site_id
        AND a.valid_time >= coalesce(s.from_time - to_milliseconds(${2 * marginMs(settings)}), '-infinity'::TIMESTAMPTZ)
    GROUP BY s.site_id, s.from_time`;
}

/**
 * The flag rules as a digest: of the statement that computes them with these settings, so that
 * other thresholds, another interval label or another version of efsync recomputes them.
 */
function rulesDigest(settings: QualitySettings): string {
  return createHash('sha256')
    .update(flagsSql(settings, 'TRUE', 'TRUE'))
    .digest('hex');
}

/**
 * Per site of `sites` (a query of site_id), a digest of what its flags depend on besides its
 * actuals and the rules: the columns of sites that flagsSql reads, its capacity timeline and its
 * outage windows.
 */
function basisSql(sites: string): string {
  const named = `site_id IN (SELECT site_id FROM (${sites}))`;
  const text = digestTextSql;
  return digestPerSiteSql([
    `SELECT site_id, 'named' AS x FROM (${sites})`,
    `SELECT site_id, 'site/' || ${text('type', 'latitude', 'longitude', 'nameplate_kw')} AS x FROM sites WHERE ${named}`,
    `SELECT site_id, 'capacity/' || ${text('epoch_us(valid_from)', 'epoch_us(valid_to)', 'value_kw')} AS x
      FROM site_capacity WHERE ${named}`,
    `SELECT site_id, 'outage/' || ${text('epoch_us(valid_from)', 'epoch_us(valid_to)')} AS x
      FROM capacity_windows WHERE ${named}`,
  ]);
}

/**
 * Recomputes the flags of `scope` (every site with actuals or flags when it names none) from its
 * time on, for each site whose flags were not last recomputed so: by other rules, over another
 * basis (basisSql), or from a later time (actual_flags_basis). The other sites' flags are those a
 * recompute would give: their actuals loaded since were flagged as they loaded, and what is
 * still pending of them is computed here (flagPending). A slice of sites to a transaction
 * (inSlices), so that neither a statement nor a transaction grows with the number of sites or the
 * values they read, each recording its sites' basis. A run killed part way leaves some sites
 * flagged anew and recorded, the rest as they were; the next run recomputes those. Returns how
 * many sites it recomputed.
 */
export async function reflagActuals(
  warehouse: Warehouse,
  settings: QualitySettings,
  scope: FlagScope,
): Promise<number> {
  const from = scope.fromMs === undefined ? 'NULL::TIMESTAMPTZ' : instantLiteral(scope.fromMs);
  const named = scope.sites
    ? `SELECT unnest([${sqlList(scope.sites)}]) AS site_id`
    : 'SELECT site_id FROM actuals UNION SELECT site_id FROM actual_flags';
  const rules = quoteLiteral(rulesDigest(settings));
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE flags_basis AS ${basisSql(named)}`);
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE flags_stale AS
    SELECT b.site_id FROM flags_basis b LEFT JOIN actual_flags_basis k USING (site_id)
    WHERE k.site_id IS NULL OR k.rules <> ${rules} OR k.basis <> b.digest
      OR (k.flagged_from IS NOT NULL AND (${from} IS NULL OR k.flagged_from > ${from}))`);
  try {
    const current = await warehouse.all<{ site_id: string }>(
      'SELECT site_id FROM flags_basis WHERE site_id NOT IN (SELECT site_id FROM flags_stale) ORDER BY site_id',
    );
    await flagPending(warehouse, settings, { now: scope.now, sites: current.map((site) => site.site_id) });
    const stale = await warehouse.all<SiteValues>(
      `${siteValuesSql(`SELECT site_id, ${from} AS from_time FROM flags_stale`, settings)} ORDER BY s.site_id`,
    );
    await inSlices(warehouse, stale, async (slice) => {
      const sites = slice.map((site) => site.site_id);
      await flagActuals(warehouse, settings, { ...scope, sites });
      await warehouse.run(`DELETE FROM actual_flags_basis WHERE site_id IN (${sqlList(sites)})`);
      await warehouse.run(`INSERT INTO actual_flags_basis
        SELECT site_id, ${rules}, digest, ${from}, ${instantLiteral(scope.now)} FROM flags_basis
        WHERE site_id IN (${sqlList(sites)})`);
    });
    return stale.length;
  } finally {
    await warehouse.run('DROP TABLE IF EXISTS flags_basis');
    await warehouse.run('DROP TABLE IF EXISTS flags_stale');
  }
}

/**
 * Records, in the caller's transaction (with its next statement: defer), that the flags of the
 * sites in `changes` (a table with site_id and valid_time: the actuals a load changed) are to be
 * computed from the earliest valid time that changed.
 */
export function markFlagsPending(warehouse: Pick<Warehouse, 'defer'>, changes: string): void {
  warehouse.defer(`INSERT INTO actual_flags_pending SELECT site_id, min(valid_time) FROM ${changes} GROUP BY site_id`);
}

/**
 * Computes the pending flags (of `sites`, or of every site pending) and deletes their pending
 * rows in the same transaction, a slice of sites at a time (inSlices; inside a caller's
 * transaction, all in it). From each group's earliest pending time on: flagging more than
 * changed is harmless. Returns the sites flagged.
 */
export async function flagPending(
  warehouse: Warehouse,
  settings: QualitySettings,
  options: { now: number; sites?: readonly string[] },
): Promise<number> {
  if (options.sites?.length === 0) return 0;
  const only = options.sites ? `WHERE site_id IN (${sqlList(options.sites)})` : '';
  // in order of their pending time, so that the sites of a slice (read from its earliest) read alike
  const pending = await warehouse.all<SiteValues & { from: number }>(
    `${siteValuesSql(`SELECT site_id, min(from_time) AS from_time FROM actual_flags_pending ${only} GROUP BY site_id`, settings)}
     ORDER BY s.from_time, s.site_id`,
  );
  if (pending.length > 0) faultPoint('flags');
  await inSlices(warehouse, pending, async (group) => {
    const sites = group.map((site) => site.site_id);
    await flagActuals(warehouse, settings, {
      sites,
      fromMs: Math.min(...group.map((site) => site.from)),
      now: options.now,
    });
    await warehouse.run(`DELETE FROM actual_flags_pending WHERE site_id IN (${sqlList(sites)})`);
  });
  return pending.length;
}
