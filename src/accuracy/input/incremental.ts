// Incremental accuracy: the warehouse's aligned pairs are kept in a ledger (accuracy_pairs and
// accuracy_pair_quantiles, migration 012), so that a score aligns only what is new since the
// last one: the valid times new to its window, the forecast vintages that gained points, and the
// pairs whose actual or reference actual arrived, was revised, or was flagged or unflagged.
// Everything else is read from the ledger as it was aligned. A pair is a pure function of its
// forecast row, the actuals around its valid time and reference time, the flags of those
// actuals and the settings in the fingerprint, so re-aligning exactly the pairs that any of
// these touched leaves the ledger equal, row for row, to a full alignment (docs/accuracy.md,
// "Incremental scoring").
import { coldOrder, CURRENT, parseDay, type MovedDay } from '../../warehouse/cold.js';
import { Spool } from '../../warehouse/spool.js';
import {
  dateOfEpochDay,
  digestPerSiteSql,
  digestTextSql,
  epochDayOf,
  instantLiteral,
  quoteIdentifier,
  quoteLiteral,
  sqlList,
} from '../../warehouse/sql.js';
import { halvesOf, handBackPool, runInHalves, runSplitting } from '../../warehouse/executor.js';
import type { Warehouse } from '../../warehouse/warehouse.js';
import {
  alignPoints,
  chooseSites,
  modelFilterSql,
  PAIRS_TABLE,
  QUANTILES_TABLE,
  siteLevels,
  unusableSites,
  windowSql,
  type AlignOptions,
  type PointSources,
  type SkippedSite,
} from './align.js';
import { dropDayPlan, planDayGroups, planGroupBatches, type DayGroup } from './day-plan.js';
import { referenceTimeSql } from './reference.js';
import { pairColumnsSql } from './relation.js';
import type { StatsEngine } from '../compute/stats.js';
import { faultPoint } from '../../fault.js';
import { DAY, HOUR } from '../../time.js';
import { withJoinsBuiltOnTheRight } from '../../warehouse/settings.js';

export const LEDGER_PAIRS = 'accuracy_pairs';
export const LEDGER_QUANTILES = 'accuracy_pair_quantiles';

export type LedgerMode = 'full' | 'incremental';

/**
 * Told of the pairs a refresh removes from the ledger and adds to it, each batch inside its
 * transaction (stats-store.ts keeps the per-group statistics in step so).
 */
export interface LedgerListener {
  /**
   * The ledger is about to change for the first time in this run (before its first batch, in
   * the transaction that takes away the ledger's state); `rebuilt` when every pair is aligned anew.
   */
  starting(rebuilt: boolean): Promise<void>;
  /**
   * The batch's ledger pairs in acc_stale (their rows) are about to be deleted. Not called when
   * every pair is aligned anew: the ledger's hot tables are then emptied before the first batch.
   */
  removing(): Promise<void>;
  /**
   * The ledger pairs of `pairs` (a relation: the whole days leaving the window, retireDays) are
   * about to be deleted, before the first batch, outside any transaction.
   */
  retiring(pairs: string): Promise<void>;
  /** A batch committed, outside any transaction: what the listener keeps aside may be tidied. */
  settled(): Promise<void>;
  /**
   * Every batch is in and the ledger's state written, outside any transaction (the listener runs
   * its own, and writes its state): the new pairs are those from `added.fromPid` on, in the hot
   * tables and in the cold days from `added.coldFromMs` on (null: the run wrote no cold day).
   */
  done(added: AddedPairs): Promise<void>;
}

/** Where a refresh's new pairs are: pids from `fromPid` on, hot, and cold from `coldFromMs` (a UTC day) on. */
export interface AddedPairs {
  fromPid: number;
  coldFromMs: number | null;
}

export interface LedgerRefresh {
  mode: LedgerMode;
  /** Why a full alignment ran (null for incremental). */
  reason: string | null;
  /** Sites an incremental run aligned anew, new to the ledger or changed (description, capacity, models). */
  sitesChanged: number;
  /** Pairs aligned from forecasts and actuals by this run. */
  pairsAligned: number;
  /** Batches of sites they were aligned in: those planned, and more where one ran out of memory and went again in halves. */
  batches: number;
  /** Pairs in the ledger after the run: what is scored. */
  pairs: number;
  /** Whether the ledger holds quantile sets. */
  quantiles: boolean;
  skipped: SkippedSite[];
  /** How the per-group statistics followed (stats-store.ts): days computed again from the ledger, of how many, and how. */
  stats?: { mode: LedgerMode; days: number; of: number; engine: StatsEngine };
}

interface LedgerState {
  fingerprint: string;
  from: number | null;
  to: number | null;
  actualsSeenTo: number;
  /** Above every pid of the ledger: a run removes the state before it adds a pair. */
  nextPid: number;
}

/**
 * The ledger's state, the first changed hour markChanges found (µs; null: no hour changed), and
 * the earliest valid time a row inside the old window can be stale from, through a changed hour
 * or vintage (µs; null: none is; 'all': not known, any may be).
 */
interface Changes extends LedgerState {
  dirtyFromUs: number | null;
  staleFromUs: number | null | 'all';
}

const HOUR_US = HOUR * 1000;
const ms = (v: Date | null) => (v === null ? null : v.getTime());
const sqlInstant = (v: number | undefined | null) => (v === undefined || v === null ? 'NULL' : instantLiteral(v));

/** `column` inside the valid-time window [from, to) (either end open when null). */
function inWindowSql(column: string, from: number | null | undefined, to: number | null | undefined): string {
  return windowSql(column, { from: from ?? undefined, to: to ?? undefined });
}

/**
 * `column` outside the valid-time window [from, to), as two ranges ORed rather than NOT of
 * inWindowSql: DuckDB pushes these into the scans (zone maps, Parquet statistics).
 */
function outOfWindowSql(column: string, from: number | null | undefined, to: number | null | undefined): string {
  const parts: string[] = [];
  if (from !== null && from !== undefined) parts.push(`${column} < ${sqlInstant(from)}`);
  if (to !== null && to !== undefined) parts.push(`${column} >= ${sqlInstant(to)}`);
  return parts.length ? `(${parts.join(' OR ')})` : 'FALSE';
}

/**
 * The options that shape alignment: a change in any of them makes the next run align everything
 * again. What a pair depends on per site is its digest (siteDigests).
 */
function fingerprintOf(options: AlignOptions): string {
  return JSON.stringify({
    v: 2,
    forecastLabel: options.forecastLabel,
    actualLabel: options.actualLabel,
    forecastIntervalMs: options.forecastIntervalMs ?? null,
    actualIntervalMs: options.actualIntervalMs ?? null,
    maxMissingPct: options.maxMissingPct,
    includeFlagged: options.includeFlagged === true,
    sites: [...(options.sites ?? [])].sort(),
    models: [...(options.models ?? [])].sort(),
  });
}

/**
 * Per chosen site, as acc_site_digest, a digest of everything its pairs depend on besides the
 * data rows: its type, nameplate, interval lengths and persistence period, its capacity timeline,
 * models and quantile levels. Read after chooseSites, unusableSites and siteLevels. A site whose
 * digest differs from the ledger's has its pairs aligned anew (markDirtySites), so that a
 * capacity push or a new site does not align every other site's month again.
 */
async function siteDigests(wh: Warehouse): Promise<void> {
  const text = digestTextSql;
  const chosen = 'site_id IN (SELECT site_id FROM acc_site)';
  await wh.run(
    `CREATE OR REPLACE TEMP TABLE acc_site_digest AS ${digestPerSiteSql([
      `SELECT site_id, 'site/' || ${text('type', 'nameplate_kw', 'f_len', 'a_len', 'ref_period')} AS x FROM acc_site`,
      `SELECT site_id, 'capacity/' || ${text('segment_index', 'epoch_us(valid_from)', 'epoch_us(valid_to)', 'value_kw')} AS x
      FROM site_capacity WHERE ${chosen}`,
      `SELECT site_id, 'model/' || ${text('model_id', 'name', 'quantile')} AS x FROM models WHERE ${chosen}`,
      `SELECT site_id, 'levels/' || ${text('levels')} AS x FROM acc_site_levels`,
    ])}`,
  );
}

/** Whether the ledger holds a site this run does not score: its pairs would stay, so all is aligned again. */
async function siteLeftOut(wh: Warehouse): Promise<boolean> {
  const [{ any }] = await wh.all<{ any: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM accuracy_ledger_sites WHERE site_id NOT IN (SELECT site_id FROM acc_site_digest)) AS any',
  );
  return any;
}

/** The chosen sites new to the ledger or whose digest changed, as acc_dirty_sites; returns how many. */
async function markDirtySites(wh: Warehouse): Promise<number> {
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_dirty_sites AS
    SELECT d.site_id FROM acc_site_digest d LEFT JOIN accuracy_ledger_sites l USING (site_id)
    WHERE l.digest IS DISTINCT FROM d.digest`);
  const [{ n }] = await wh.all<{ n: bigint }>('SELECT count(*) AS n FROM acc_dirty_sites');
  return Number(n);
}

async function readState(wh: Warehouse): Promise<LedgerState | null> {
  const [row] = await wh.all<{
    fingerprint: string;
    window_from: Date | null;
    window_to: Date | null;
    actuals_seen_to: Date;
    next_pid: bigint;
  }>('SELECT fingerprint, window_from, window_to, actuals_seen_to, next_pid FROM accuracy_ledger_state');
  if (!row) return null;
  return {
    fingerprint: row.fingerprint,
    from: ms(row.window_from),
    to: ms(row.window_to),
    actualsSeenTo: row.actuals_seen_to.getTime(),
    nextPid: Number(row.next_pid),
  };
}

/** Forecast and model-output points (site_id, issue_time, valid_time) of the sites `sites` in a window. */
function vintagePointsSql(
  options: AlignOptions,
  sites: readonly string[],
  from: number | null | undefined,
  to: number | null | undefined,
): string {
  return `SELECT site_id, update_time AS issue_time, valid_time FROM forecasts
      WHERE site_id IN (${sqlList(sites)}) AND ${inWindowSql('valid_time', from, to)}
    UNION ALL
    SELECT o.site_id, o.as_of, o.valid_time FROM model_outputs o JOIN models m USING (site_id, model_id)
      WHERE o.site_id IN (${sqlList(sites)}) AND ${inWindowSql('o.valid_time', from, to)} AND ${modelFilterSql(options)}`;
}

/**
 * Sites one statement keyed by site and issue time (or valid time) takes: its hash table holds a
 * row per site and vintage (or changed hour) of the window, so one statement for every site would
 * grow with the sites and the window.
 */
const SITES_PER_STATEMENT = 100;

/**
 * Runs `work` on the chosen sites (acc_site) in id order, SITES_PER_STATEMENT at a time, each
 * chunk split in halves while it runs out of memory: for work that is one statement per chunk
 * and keyed by site, so that the chunks' results add up to the whole.
 */
async function forSiteChunks(wh: Warehouse, work: (sites: readonly string[]) => Promise<unknown>): Promise<void> {
  const sites = (await wh.all<{ site_id: string }>('SELECT site_id FROM acc_site ORDER BY site_id')).map(
    (row) => row.site_id,
  );
  for (let i = 0; i < sites.length; i += SITES_PER_STATEMENT)
    await runInHalves(sites.slice(i, i + SITES_PER_STATEMENT), work);
}

/** The window spanning both (open where either is). */
function spanning(a: number | null | undefined, b: number | null | undefined, pick: (x: number, y: number) => number) {
  return a === null || a === undefined || b === null || b === undefined ? null : pick(a, b);
}

/**
 * Where the days after the ledger's window that this run's window holds start (null: none): an
 * incremental run aligns them as a full alignment does, day group after day group, each saved
 * as it completes (alignTail). The window a stopped full alignment saved ends at the day group
 * it had done; each night's window ends a day after the last.
 */
function tailFrom(options: AlignOptions, old: LedgerState): number | null {
  if (old.to === null || (options.to !== undefined && options.to <= old.to)) return null;
  return options.from === undefined ? old.to : Math.max(old.to, options.from);
}

/**
 * Per site and issue time, the points with a valid time in the ledger's window then (`old`), in
 * this run's window (`points`), in this run's only (`new_points`), and in the days after the old
 * window this run aligns day group by day group (`tail_points`, tailFrom), and the first and last
 * valid time of any of them (`first_valid`, `last_valid`), in one pass over both windows.
 */
async function countVintages(wh: Warehouse, options: AlignOptions, old: LedgerState | null): Promise<void> {
  const from = old ? spanning(old.from, options.from, Math.min) : options.from;
  const to = old ? spanning(old.to, options.to, Math.max) : options.to;
  const inOld = old ? inWindowSql('valid_time', old.from, old.to) : 'FALSE';
  const inNew = inWindowSql('valid_time', options.from, options.to);
  const tail = old && tailFrom(options, old);
  const inTail = tail === null || tail === undefined ? 'FALSE' : `(${inNew}) AND valid_time >= ${sqlInstant(tail)}`;
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_vintages (site_id VARCHAR, issue_time TIMESTAMPTZ,
    old_points BIGINT, points BIGINT, new_points BIGINT, tail_points BIGINT, first_valid TIMESTAMPTZ,
    last_valid TIMESTAMPTZ)`);
  await forSiteChunks(wh, (part) =>
    wh.run(`INSERT INTO acc_vintages
      SELECT site_id, issue_time, count(*) FILTER (WHERE ${inOld}) AS old_points,
        count(*) FILTER (WHERE ${inNew}) AS points,
        count(*) FILTER (WHERE (${inNew}) AND NOT (${inOld})) AS new_points,
        count(*) FILTER (WHERE ${inTail}) AS tail_points, min(valid_time) AS first_valid,
        max(valid_time) AS last_valid
      FROM (${vintagePointsSql(options, part, from, to)}) GROUP BY site_id, issue_time`),
  );
  // What the counts read leaves the pool, so the comparisons with the ledger's state and the
  // batches' plan that follow do not build on it.
  await handBackPool(wh);
}

/**
 * The flags a pair of the ledger's window then or of this run's can read, as a condition on
 * valid_time: from the earliest valid time or issue time of either window, less the longest
 * reference period (a reference lies at most one period before the issue time, or before the
 * valid time) and the margin markChanges gives a changed actual. Only these flags are compared
 * with the ledger's snapshot and kept in it, so that neither grows with the history; TRUE when
 * either window is open at its start.
 */
async function flagsReachSql(wh: Warehouse, options: AlignOptions, old: LedgerState | null): Promise<string> {
  const from = old ? spanning(old.from, options.from, Math.min) : options.from;
  if (from === null || from === undefined) return 'TRUE';
  const [{ reach }] = await wh.all<{ reach: bigint | null }>(`
    SELECT least(${from * 1000}, (SELECT min(epoch_us(issue_time)) FROM acc_vintages))
      - (SELECT coalesce(max(ref_period), 0) + coalesce(max(f_len), 0) + coalesce(max(a_len), 0) FROM acc_site)
      - ${2 * HOUR_US} AS reach`);
  return reach === null ? 'TRUE' : `valid_time >= make_timestamptz(${reach})`;
}

/**
 * What changed since the ledger was written, as temp tables, each a statement per chunk of sites
 * (forSiteChunks):
 *   acc_dirty_issues (site_id, issue_time): vintages whose points inside the old window changed
 *     in number (forecast rows are only ever added; the tables have no arrival time);
 *   acc_dirty_hours (site_id, hour): UTC hours (epoch hours) whose resampled actual may differ:
 *     around every actual first seen or revised since the last run, and every actual whose flags
 *     were set, changed or cleared, by one forecast plus one actual interval either side.
 */
async function markChanges(wh: Warehouse, old: LedgerState, reach: string): Promise<Changes> {
  const seen = sqlInstant(old.actualsSeenTo);
  const chosen = (part: readonly string[]) => `site_id IN (${sqlList(part)})`;
  await wh.run(
    'CREATE OR REPLACE TEMP TABLE acc_dirty_issues (site_id VARCHAR, issue_time TIMESTAMPTZ, first_valid TIMESTAMPTZ)',
  );
  await forSiteChunks(wh, (part) =>
    wh.run(`INSERT INTO acc_dirty_issues
      SELECT coalesce(n.site_id, v.site_id), coalesce(n.issue_time, v.issue_time), n.first_valid
      FROM (SELECT * FROM acc_vintages WHERE ${chosen(part)} AND old_points > 0) n
      FULL JOIN (SELECT * FROM accuracy_ledger_vintages WHERE ${chosen(part)}) v
        ON v.site_id = n.site_id AND v.issue_time = n.issue_time
      WHERE coalesce(n.old_points, 0) <> coalesce(v.points, 0)`),
  );
  // the actuals in one pass (a filter holds no rows); a time both seen and flagged anew is
  // listed twice, which the hours' DISTINCT takes out
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_changed_actuals AS
    SELECT site_id, valid_time FROM actuals
    WHERE site_id IN (SELECT site_id FROM acc_site) AND (first_seen_at > ${seen} OR revised_at > ${seen})`);
  await forSiteChunks(wh, (part) =>
    wh.run(`INSERT INTO acc_changed_actuals
      SELECT coalesce(f.site_id, l.site_id), coalesce(f.valid_time, l.valid_time)
      FROM (SELECT * FROM actual_flags WHERE ${chosen(part)} AND ${reach}) f
      FULL JOIN (SELECT * FROM accuracy_ledger_flags WHERE ${chosen(part)} AND ${reach}) l
        ON l.site_id = f.site_id AND l.valid_time = f.valid_time
      WHERE f.flags IS DISTINCT FROM l.flags`),
  );
  // An actual lies in the forecast interval that starts up to one forecast interval before it
  // (or after it, labelled interval-ending) and may itself be one actual interval long: the
  // margin covers both, and a spare hour covers the instant label's boundary rule.
  await wh.run('CREATE OR REPLACE TEMP TABLE acc_dirty_hours (site_id VARCHAR, hour BIGINT)');
  await forSiteChunks(wh, (part) =>
    wh.run(`INSERT INTO acc_dirty_hours
      WITH margin AS (SELECT coalesce(max(f_len), 0) + coalesce(max(a_len), 0) + ${HOUR_US} AS us FROM acc_site)
      SELECT DISTINCT site_id, unnest(range((epoch_us(valid_time) - us) // ${HOUR_US}, (epoch_us(valid_time) + us) // ${HOUR_US} + 1)) AS hour
      FROM (SELECT * FROM acc_changed_actuals WHERE ${chosen(part)}), margin`),
  );
  const [{ first }] = await wh.all<{ first: bigint | null }>('SELECT min(hour) AS first FROM acc_dirty_hours');
  const dirtyFromUs = first === null ? null : Number(first) * HOUR_US;
  return { ...old, dirtyFromUs, staleFromUs: await staleFrom(wh, dirtyFromUs) };
}

/**
 * The earliest valid time of a changed hour or of a changed vintage's points: no row of the old
 * window before it is stale but through its site ('all' when a vintage's points are gone, so
 * that its first valid time is not known).
 */
async function staleFrom(wh: Warehouse, dirtyFromUs: number | null): Promise<number | null | 'all'> {
  const [{ unknown, first }] = await wh.all<{ unknown: boolean; first: bigint | null }>(
    `SELECT coalesce(bool_or(first_valid IS NULL), false) AS unknown, min(epoch_us(first_valid)) AS first FROM acc_dirty_issues`,
  );
  if (unknown) return 'all';
  const firsts = [dirtyFromUs, first === null ? null : Number(first)].filter((v) => v !== null);
  return firsts.length ? Math.min(...firsts) : null;
}

/**
 * A condition on the valid time that every row changedRowsSql keeps meets, but those of a changed
 * site: outside the old window or from staleFromUs on. Put inside the rows' own query, DuckDB
 * pushes it into the scans, so that a night reads the ledger's and the series' last days and the
 * day leaving the window rather than the whole window once per batch (the window's days are
 * Parquet files of one day each, whose statistics it skips by).
 */
function mayChangeSql(column: string, changes: Changes): string {
  if (changes.staleFromUs === 'all') return 'TRUE';
  const moved = outOfWindowSql(column, changes.from, changes.to);
  return changes.staleFromUs === null ? moved : `(${moved} OR ${column} >= make_timestamptz(${changes.staleFromUs}))`;
}

/**
 * The rows of `rows` (a query of points or ledger pairs: site_id, issue_time, valid_time) that
 * must be aligned anew: of a changed site (acc_dirty_sites), outside the old window, of a changed
 * vintage, or with their actual or their reference actual in a changed hour. Left joins with a hit flag rather than EXISTS
 * conditions: DuckDB ran the three ORed EXISTS 5-7 times slower than these hash joins (each
 * right side is unique on its key, so no row is repeated). A reference lies before its valid
 * time, so a row whose valid time is before the first changed hour can only be stale through
 * its vintage or the window: the hours are computed and joined for the rows from that hour on
 * (the last days of a month's window after a nightly sync), not for the whole window.
 */
function changedRowsSql(rows: string, changes: Changes): string {
  const hour = (t: string) => `epoch_us(${t}) // ${HOUR_US}`;
  // each of the batch's sites alone: built over every site's, the joins' hash tables hold every
  // site's changed hours and vintages, all of a month's at a catch-up, whatever the batch
  const hit = (table: string, key: string) =>
    `(SELECT site_id, ${key}, true AS hit FROM ${table} WHERE site_id IN (SELECT site_id FROM acc_batch))`;
  const moved = (t: string) => outOfWindowSql(t, changes.from, changes.to);
  const late = changes.dirtyFromUs === null ? 'FALSE' : `x.valid_time >= make_timestamptz(${changes.dirtyFromUs})`;
  return `SELECT p.* EXCLUDE (valid_hour, reference_hour, issue_hit) FROM (
      SELECT x.*, ${hour('x.valid_time')} AS valid_hour,
        ${hour(referenceTimeSql('x.valid_time', 'x.issue_time', 's.ref_period'))} AS reference_hour,
        i.hit OR d.hit AS issue_hit
      FROM (SELECT * FROM (${rows}) WHERE ${mayChangeSql('valid_time', changes)}) x JOIN acc_batch s USING (site_id)
      LEFT JOIN ${hit('acc_dirty_issues', 'issue_time')} i ON i.site_id = x.site_id AND i.issue_time = x.issue_time
      LEFT JOIN (SELECT site_id, true AS hit FROM acc_dirty_sites) d ON d.site_id = x.site_id
      WHERE ${moved('x.valid_time')} OR i.hit OR d.hit OR ${late}) p
    LEFT JOIN ${hit('acc_dirty_hours', 'hour')} v ON v.site_id = p.site_id AND v.hour = p.valid_hour
    LEFT JOIN ${hit('acc_dirty_hours', 'hour')} r ON r.site_id = p.site_id AND r.hour = p.reference_hour
    WHERE ${moved('p.valid_time')} OR p.issue_hit OR v.hit OR r.hit`;
}

/**
 * The batch's ledger pairs that give way to an incremental run, as acc_stale (their rows, for the
 * statistics to take out): those outside this run's window and those inside it that
 * changedRowsSql says are stale. The two are disjoint, so nothing removes duplicates: a UNION
 * would hash every whole row, a window's worth of pairs at a catch-up.
 */
async function markStale(
  wh: Warehouse,
  options: AlignOptions,
  old: Changes,
  reads: StaleReads,
  range: string,
  slice: ValidSlice,
): Promise<void> {
  const inSlice = inWindowSql('valid_time', slice.from, slice.to);
  const ofBatch = `${range} AND ${inSlice} AND site_id IN (SELECT site_id FROM acc_batch)`;
  const inWindow = inWindowSql('valid_time', options.from, options.to);
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_stale AS
    SELECT * FROM ${reads.leaving} WHERE ${ofBatch} AND ${outOfWindowSql('valid_time', options.from, options.to)}
    UNION ALL SELECT * FROM (${changedRowsSql(`SELECT * FROM ${reads.changing} WHERE ${range} AND ${inSlice} AND ${inWindow}`, old)})`);
}

/**
 * The relations a batch's stale reads go through: the ledger's pairs that may leave the window,
 * those that may be stale inside it, and the forecast rows of the points that may be (they lie
 * where those pairs do), each with the cold files of staleDays' days alone.
 */
interface StaleReads {
  leaving: string;
  changing: string;
  sources: PointSources;
}

async function staleReads(wh: Warehouse, options: AlignOptions, changes: Changes): Promise<StaleReads> {
  const days = staleDays(options, changes);
  const ledger = (span: DaySpan | 'all') =>
    span === 'all' ? LEDGER_PAIRS : wh.cold.between(LEDGER_PAIRS, span.from, span.to);
  return {
    leaving: await ledger(days.leaving),
    changing: await ledger(days.changing),
    sources: await sourcesBetween(wh, days.changing),
  };
}

/** Valid times [from, to) in ms, either end open when null. */
interface DaySpan {
  from: number | null;
  to: number | null;
}

/**
 * The valid times markStale's two reads of the ledger can find rows in, so that each reads the
 * cold files of those days alone (ColdStore.between; 'all': every file): the pairs leaving lie in
 * the old window and before this one's start (a window that also ends earlier reads all); the
 * pairs that may be stale inside this window lie before the old window's start, or from the
 * old window's end or staleFromUs on (mayChangeSql). Bounds only: the statement's own
 * conditions still choose the rows.
 */
export function staleDays(
  window: { from?: number; to?: number },
  old: Changes,
): { leaving: DaySpan | 'all'; changing: DaySpan } {
  const endsLater = window.to === undefined || (old.to !== null && old.to <= window.to);
  const leaving = !endsLater ? 'all' : window.from === undefined ? EMPTY_SPAN : { from: old.from, to: window.from };
  const startsEarlier = window.from === undefined || (old.from !== null && window.from < old.from);
  const stale =
    old.staleFromUs === 'all' ? (window.from ?? null) : old.staleFromUs === null ? null : old.staleFromUs / 1000;
  const firsts = [old.to, stale].filter((v): v is number => v !== null);
  const from =
    startsEarlier || old.staleFromUs === 'all' ? (window.from ?? null) : firsts.length ? Math.min(...firsts) : null;
  const none = !startsEarlier && old.staleFromUs !== 'all' && firsts.length === 0;
  return { leaving, changing: none ? EMPTY_SPAN : { from, to: window.to ?? null } };
}

/** A span no day is in: its relation is the hot rows alone. */
const EMPTY_SPAN: DaySpan = { from: 0, to: 0 };

/**
 * The batch's sites as a range of ids (a batch is consecutive sites in id order), a condition on
 * site_id: a constant range lets DuckDB skip the ledger's row groups of other sites by their
 * min/max, where a semi-join reads every row group. Without it each batch read the whole ledger
 * three times, so that an incremental score cost batches × ledger: quadratic in the sites.
 */
async function batchRangeSql(wh: Warehouse): Promise<string> {
  const [{ lo, hi }] = await wh.all<{ lo: string | null; hi: string | null }>(
    'SELECT min(site_id) AS lo, max(site_id) AS hi FROM acc_batch',
  );
  return lo === null || hi === null ? 'FALSE' : `site_id BETWEEN ${quoteLiteral(lo)} AND ${quoteLiteral(hi)}`;
}

/** Whether the batch holds a changed site (acc_dirty_sites), all of whose rows are stale. */
async function batchChangesSites(wh: Warehouse): Promise<boolean> {
  const [{ any }] = await wh.all<{ any: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM acc_batch WHERE site_id IN (SELECT site_id FROM acc_dirty_sites)) AS any',
  );
  return any;
}

/**
 * What a refresh does before its first batch, in one transaction: the ledger's state goes (a run
 * killed before the last transaction leaves a ledger the next run aligns in full), the listener
 * starts, and a full alignment empties the hot tables (its cold days go whole right after), so a
 * full alignment leaves no pair but those it aligns, of whichever sites.
 */
async function startLedger(wh: Warehouse, meta: { listener?: LedgerListener; full: boolean }): Promise<void> {
  await wh.run('DELETE FROM accuracy_ledger_state');
  await meta.listener?.starting(meta.full);
  if (meta.full) {
    await wh.cold.emptyHot(LEDGER_QUANTILES);
    await wh.cold.emptyHot(LEDGER_PAIRS);
  }
}

/**
 * Replaces the batch's stale ledger pairs with its aligned ones (acc_pairs, acc_quantiles; pids
 * from `base`) in one transaction, telling `listener`; returns how many were aligned. An
 * incremental run's stale pairs (acc_stale) are deleted, those of closed days set aside in
 * acc_cold_stale for removeColdStale to take out of their cold files once every batch is in. A
 * full alignment replaces every pair: the hot tables were emptied and every cold day dropped
 * before its first batch (startLedger, which also took away the ledger's state, so that a run
 * killed between batches leaves a ledger the next run knows to align again in full).
 */
async function applyBatch(
  wh: Warehouse,
  range: string,
  base: number,
  meta: { listener?: LedgerListener; now: number; full: boolean; spool?: LedgerSpool },
): Promise<number> {
  if (meta.full && meta.spool) return spoolBatch(wh, meta.spool, base);
  const pairs = await wh.cold.hotTable(LEDGER_PAIRS);
  const quantiles = await wh.cold.hotTable(LEDGER_QUANTILES);
  return wh.transaction(async () => {
    if (!meta.full) {
      await meta.listener?.removing();
      await wh.run(`INSERT INTO ${COLD_STALE}
        SELECT pid, ${dayOf('valid_time')} AS day FROM acc_stale
        WHERE ${dayOf('valid_time')} IN (${coldDaysSql()}) AND pid NOT IN (SELECT pid FROM ${pairs} WHERE ${range})`);
      await wh.run(`DELETE FROM ${quantiles} WHERE pid IN (SELECT pid FROM acc_stale)`);
      await wh.run(`DELETE FROM ${pairs} WHERE ${range} AND pid IN (SELECT pid FROM acc_stale)`);
    }
    await wh.run(`INSERT INTO ${pairs} SELECT ${pairColumnsSql({ pid: `pid + ${base}` })} FROM ${PAIRS_TABLE}`);
    await wh.run(`INSERT INTO ${quantiles} (pid, level, q, valid_time)
      SELECT q.pid + ${base}, q.level, q.q, p.valid_time FROM ${QUANTILES_TABLE} q JOIN ${PAIRS_TABLE} p USING (pid)`);
    const [{ n }] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${PAIRS_TABLE}`);
    return Number(n);
  });
}

/**
 * Where a full alignment's batches write a day group whose every day lies before the hot window
 * (Warehouse.coldCutoff): spools of the ledger's pairs and quantile sets, whose days go straight
 * to their cold files once the group is in (writeSpooledDays). Written to the hot tables instead,
 * those pairs would go through the WAL, the checkpoints that write it, and the move that reads
 * and sorts them again, for nothing (docs/benchmarks.md, session 54).
 */
interface LedgerSpool {
  pairs: Spool;
  quantiles: Spool;
}

async function ledgerSpool(wh: Warehouse): Promise<LedgerSpool> {
  const shape = async (table: string) => `FROM ${await wh.cold.hotTable(table)}`;
  const pairs = await Spool.create(wh, 'ledger-pairs', await shape(LEDGER_PAIRS));
  try {
    return { pairs, quantiles: await Spool.create(wh, 'ledger-quantiles', await shape(LEDGER_QUANTILES)) };
  } catch (error) {
    pairs.drop();
    throw error;
  }
}

/**
 * The batch's pairs and quantile sets (pids from `base`) added to the spool in their cold files'
 * order: batches come in site order, so the files of a day read in turn are sorted as a move
 * sorts them. Returns how many pairs were aligned.
 */
async function spoolBatch(wh: Warehouse, spool: LedgerSpool, base: number): Promise<number> {
  const order = (table: string) => coldOrder(table).map(quoteIdentifier).join(', ');
  await spool.pairs.add(
    `SELECT ${pairColumnsSql({ pid: `pid + ${base}` })} FROM ${PAIRS_TABLE} ORDER BY ${order(LEDGER_PAIRS)}`,
  );
  try {
    await spool.quantiles.add(`SELECT q.pid + ${base} AS pid, q.level, q.q, p.valid_time
      FROM ${QUANTILES_TABLE} q JOIN ${PAIRS_TABLE} p USING (pid) ORDER BY ${order(LEDGER_QUANTILES)}`);
  } catch (error) {
    // the batch goes again (in halves, if it ran out of memory): its pairs must not be there twice
    spool.pairs.removeLast();
    throw error;
  }
  const [{ n }] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${PAIRS_TABLE}`);
  return Number(n);
}

/** `group` when it is whole UTC days inside `window`, all before the hot window; else null. */
function wholeDaysToCold(wh: Warehouse, window: AlignOptions, group: DayGroup): Required<DayGroup> | null {
  const { from, to } = group;
  const cutoff = wh.coldCutoff();
  if (from === undefined || to === undefined || cutoff === null || to > cutoff) return null;
  if (from % DAY !== 0 || to % DAY !== 0) return null;
  if ((window.from !== undefined && from < window.from) || (window.to !== undefined && to > window.to)) return null;
  return { from, to };
}

/** The spooled days of `group` written to the ledger's cold files, quantile sets first, as rewriteLedgerDay does. */
async function writeSpooledDays(wh: Warehouse, spool: LedgerSpool, group: Required<DayGroup>): Promise<MovedDay[]> {
  const days = Array.from({ length: (group.to - group.from) / DAY }, (_, i) => group.from + i * DAY);
  const ofDay = (relation: string) => (dayMs: number) =>
    `(SELECT * FROM ${relation} WHERE ${inWindowSql('valid_time', dayMs, dayMs + DAY)})`;
  await wh.writeColdDays(LEDGER_QUANTILES, days, ofDay(spool.quantiles.relation()));
  return wh.writeColdDays(LEDGER_PAIRS, days, ofDay(spool.pairs.relation()));
}

/**
 * The stale ledger pairs of closed days (pid, day), gathered over a run's batches, so that each
 * cold day is rewritten once per run: each batch rewriting the cold days it touched would rewrite
 * every day of the window once per batch.
 */
const COLD_STALE = 'acc_cold_stale';

/** The UTC day (DATE) of a TIMESTAMPTZ column: the day of the cold file that holds its row. */
const dayOf = (column: string) => dateOfEpochDay(epochDayOf(column));

/** The closed days of the ledger, those with a current cold file: `columns` of their cold_files rows. */
const coldDaysSql = (columns = 'day') =>
  `SELECT ${columns} FROM cold_files WHERE table_name = ${quoteLiteral(LEDGER_PAIRS)} AND ${CURRENT} AND file IS NOT NULL`;

/**
 * The whole UTC days of the ledger's window then that this run's window starts after (each night,
 * the day leaving a rolling window), taken out before the first batch, in one pass: the listener
 * takes their pairs' bins away, then their hot rows go and their cold files are dropped whole,
 * unread. A run killed part way has no ledger state (startLedger): the next aligns in full. Left
 * to the batches, each batch would copy its sites' pairs of those days into acc_stale, every
 * column, and set their pids aside for removeColdStale to count, a cost that grows with the
 * ledger's depth. A day the window starts inside of stays with the batches.
 */
async function retireDays(
  wh: Warehouse,
  old: Changes,
  options: AlignOptions,
  meta: { listener?: LedgerListener; now: number },
): Promise<void> {
  if (old.from === null || options.from === undefined) return;
  const first = Math.ceil(old.from / DAY);
  const end = Math.floor(Math.min(options.from, old.to ?? options.from) / DAY);
  if (end <= first) return;
  const range = inWindowSql('valid_time', first * DAY, end * DAY);
  // from an empty pool, so the bins' first slice does not build on what the comparisons with the
  // ledger's state left
  await handBackPool(wh);
  await meta.listener?.retiring(`(SELECT * FROM ${LEDGER_PAIRS} WHERE ${range})`);
  await dropLedgerRange(wh, first * DAY, end * DAY, meta.now);
}

/**
 * Takes the ledger's pairs with a valid time in [from, to) (open when null) out unread: their hot
 * rows deleted in one transaction, then the cold days the range holds whole dropped one by one.
 */
async function dropLedgerRange(wh: Warehouse, from: number, to: number | null, now: number): Promise<void> {
  const range = inWindowSql('valid_time', from, to);
  const pairs = await wh.cold.hotTable(LEDGER_PAIRS);
  const quantiles = await wh.cold.hotTable(LEDGER_QUANTILES);
  await wh.transaction(async () => {
    await wh.run(`DELETE FROM ${quantiles} WHERE ${range}`);
    await wh.run(`DELETE FROM ${pairs} WHERE ${range}`);
  });
  const date = (epochDay: number) => dateOfEpochDay(String(epochDay));
  const before = to === null ? '' : ` AND day < ${date(Math.floor(to / DAY))}`;
  const days = await wh.all<{ day: string }>(
    `${coldDaysSql("strftime(day, '%Y-%m-%d') AS day")} AND day >= ${date(Math.ceil(from / DAY))}${before} ORDER BY day`,
  );
  for (const { day } of days) await rewriteLedgerDay(wh, day, null, now);
  await handBackPool(wh);
}

/** A cold day of the ledger rewritten keeping `keep` (null: dropped whole): its quantiles, then its pairs. */
async function rewriteLedgerDay(wh: Warehouse, day: string, keep: string | null, now: number): Promise<void> {
  await wh.cold.rewritePartition(LEDGER_QUANTILES, day, keep, now);
  await wh.cold.rewritePartition(LEDGER_PAIRS, day, keep, now);
}

/**
 * Takes the stale pairs out of the cold days, once per run (each day's quantiles, then its pairs,
 * each a new generation of its own): with `full`, every cold pair (a full alignment replaces them
 * all, before its first batch), else those of acc_cold_stale once every batch is in. A day all of
 * whose pairs are stale (one that left the window, or a full alignment's) is dropped whole,
 * without reading it: only a day losing some of its pairs is rewritten, against that day's stale
 * pids alone. A run killed part way has no ledger state (startLedger took it away): the next
 * aligns in full and drops every cold day.
 * acc_cold_stale is read, never deleted from: deletes from a temp table hold their versions
 * until it is dropped.
 */
async function removeColdStale(wh: Warehouse, now: number, full: boolean): Promise<void> {
  const days = await wh.all<{ day: string; whole: boolean }>(
    full
      ? `${coldDaysSql("strftime(day, '%Y-%m-%d') AS day, true AS whole")} ORDER BY day`
      : `SELECT strftime(s.day, '%Y-%m-%d') AS day, count(*) >= any_value(f.row_count) AS whole
     FROM ${COLD_STALE} s JOIN (${coldDaysSql('day, row_count')}) f USING (day)
     GROUP BY s.day ORDER BY s.day`,
  );
  for (const { day, whole } of days) {
    const keep = whole ? null : `pid NOT IN (SELECT pid FROM ${COLD_STALE} WHERE day = DATE '${day}')`;
    await rewriteLedgerDay(wh, day, keep, now);
    await handBackPool(wh);
  }
}

/**
 * Numbers the chosen sites of an incremental run into batches of about `batchPoints` points
 * each, in site order, as acc_site_batch; returns the batch numbers. It counts the points of
 * this run's window (acc_vintages) before the days alignTail takes: every one for a changed site
 * (acc_dirty_sites); for the other sites the points it may align: those new to the window,
 * those of a changed vintage, and for each changed hour (acc_dirty_hours) the site's points of an
 * hour (a pair whose reference hour changed is mostly one whose valid hour did too: counted
 * twice, the batches would be too many). So a nightly run
 * that changes a day of a month's window is one batch or a few, not one per month of points: each
 * batch reads the window's forecast rows and ledger pairs of its sites once more. A site with more
 * points than that is a batch of its own; without `batchPoints`, every site is in one batch.
 * Every statement of an alignment holds at most one batch of the points it aligns (its temp
 * tables and the build sides of its joins), so the memory of aligning does not grow with the
 * warehouse. A full alignment plans by days too (day-plan.ts).
 */
async function planBatches(wh: Warehouse, options: AlignOptions): Promise<number[]> {
  const { batchPoints } = options;
  const running = batchPoints === undefined ? '0' : `(sum(points) OVER (ORDER BY site_id) - points) // ${batchPoints}`;
  const weight = `CASE WHEN s.site_id IN (SELECT site_id FROM acc_dirty_sites) THEN sum(v.points - v.tail_points)
    ELSE CAST(sum(v.new_points - v.tail_points) + coalesce(sum(v.points - v.tail_points) FILTER (WHERE d.site_id IS NOT NULL), 0)
      + ceil(coalesce(any_value(h.hours), 0) * sum(v.points) / ${heldHoursSql(options.from, options.to)}) AS BIGINT) END`;
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_site_batch AS
    SELECT site_id, ${running} AS batch FROM (
      SELECT s.site_id, coalesce(${weight}, 0) AS points
      FROM acc_site s LEFT JOIN acc_vintages v USING (site_id)
      LEFT JOIN acc_dirty_issues d ON d.site_id = v.site_id AND d.issue_time = v.issue_time
      LEFT JOIN (SELECT site_id, count(*) AS hours FROM acc_dirty_hours GROUP BY site_id) h ON h.site_id = s.site_id
      GROUP BY s.site_id)`);
  const rows = await wh.all<{ batch: bigint }>('SELECT DISTINCT batch FROM acc_site_batch ORDER BY batch');
  return rows.map((r) => Number(r.batch));
}

/**
 * The hours of the window [from, to) a site's points span, at least one, in a query grouped by
 * site over acc_vintages (v): from its first valid time when that is later than the window's
 * start (or the window has none), to its last when the window has no end. A warehouse younger
 * than the window holds a few days of a month's window: its points divided by the month's hours
 * would make a changed hour cost a fraction of its points, and a night plan batches that much
 * larger than batch_points.
 */
function heldHoursSql(from: number | undefined, to: number | undefined): string {
  const first = 'epoch_us(min(v.first_valid))';
  const start = from === undefined ? first : `greatest(${from * 1000}, ${first})`;
  const end = to === undefined ? `epoch_us(max(v.last_valid)) + ${HOUR_US}` : `${to * 1000}`;
  return `greatest(1, (${end} - ${start}) / ${HOUR_US})`;
}

/** Where the batches of a refresh stand: pids are numbered from base. */
interface BatchProgress {
  base: number;
  aligned: number;
  batches: number;
  /** Ledger pairs deleted since the last checkpoint (settleBatch). */
  deleted: number;
  /** The first UTC day of the ledger the run wrote to the cold store (null: none). */
  coldFromMs: number | null;
}

/**
 * Ledger pairs an incremental run deletes between checkpoints, per point of accuracy.batch_points
 * (thirty batches' worth: 3,000,000 by default). DuckDB keeps what a delete marks in memory,
 * outside its memory limit, until a checkpoint writes it, so the deletes between checkpoints are
 * bounded (a full alignment empties the tables instead). A checkpoint takes memory of its own, so
 * a nightly run, which deletes few, has none; a catch-up has some.
 */
const DELETES_PER_BATCH_POINT = 30;

/**
 * The WAL a refresh lets grow before it checkpoints between batches (the accuracy step raises
 * DuckDB's own threshold, so that DuckDB does not checkpoint at a batch's commit, its temp tables
 * still held: accuracyStepSettings, src/warehouse/settings.ts). A checkpoint's memory grows with
 * the WAL it writes, so at half DuckDB's own threshold (16 MB) each takes less, in no more time.
 */
const LEDGER_WAL_BYTES = 8 * 2 ** 20;

/**
 * After a batch, its temp tables evicted from DuckDB's pool: checkpoints once the WAL passed
 * LEDGER_WAL_BYTES or, in an incremental run, thirty batches' worth of ledger pairs were deleted
 * since the last checkpoint.
 */
async function settleBatch(wh: Warehouse, run: BatchRun): Promise<void> {
  const { options, progress } = run;
  if (run.incremental && options.batchPoints !== undefined) {
    const [{ n }] = await wh.all<{ n: bigint }>('SELECT count(*) AS n FROM acc_stale');
    progress.deleted += Number(n);
  }
  const deletes =
    options.batchPoints !== undefined && progress.deleted >= options.batchPoints * DELETES_PER_BATCH_POINT;
  if (!deletes && wh.walBytes() < LEDGER_WAL_BYTES) return;
  await wh.checkpoint();
  progress.deleted = 0;
}

/** What every batch of a refresh shares. */
interface BatchRun {
  options: AlignOptions;
  incremental: Changes | null;
  progress: BatchProgress;
  meta: { listener?: LedgerListener; now: number; signal?: AbortSignal; spool?: LedgerSpool };
  /** Saves the ledger's state with its window ending at `to`: every pair before it is in. */
  saveUpTo: (to: number) => Promise<void>;
  /**
   * The stale reads of a batch without a changed site and of one with (every row of its sites
   * stale), made at the first batch of each kind: the cold files do not change while batches run.
   */
  reads: Partial<Record<'kept' | 'changedSite', Promise<StaleReads>>>;
}

/** Valid times [from, to) a batch aligns, either end open when absent: a part of its sites' pairs. */
interface ValidSlice {
  from?: number;
  to?: number;
}

/** A part of a batch: its sites (a query of site ids) and the valid times of theirs it aligns. */
interface BatchPart {
  sites: string;
  slice: ValidSlice;
}

/**
 * Aligns the sites `sites` (a query of site ids), their valid times in `slice`, as one batch,
 * split by the executor while it runs out of DuckDB's memory (its transaction rolled back): after
 * a checkpoint (which frees the pool of what was written since the last one), into halves of its
 * sites, and a site alone into halves of its valid times, down to an hour, whose one more try
 * failing fails the step. So the run goes on with smaller statements rather than failing,
 * whatever the history, the ledger and a site's models hold. Each part that went through is
 * settled before the next one starts.
 */
async function alignBatch(wh: Warehouse, run: BatchRun, sites: string, slice: ValidSlice): Promise<void> {
  await runSplitting({ sites, slice }, (part) => alignPart(wh, run, part), {
    halves: (part) => batchHalves(wh, run.options, part),
    // a checkpoint that fails leaves the halves to fail and say why
    handBack: () => wh.checkpoint().catch(() => undefined),
    warehouse: wh,
    settle: () => settlePart(wh, run),
  });
}

/**
 * Aligns a part of a batch as acc_batch, what markStale and alignPoints work on, those of its
 * valid times in `part.slice`, and applies it in one transaction.
 */
async function alignPart(wh: Warehouse, run: BatchRun, { sites, slice }: BatchPart): Promise<void> {
  const { options, incremental, progress } = run;
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_batch AS SELECT * FROM acc_site WHERE site_id IN (${sites})`);
  const range = await batchRangeSql(wh);
  if (!incremental) {
    const window = sliced(options, slice);
    await alignPoints(wh, window, undefined, await pointSources(wh, window));
  } else {
    const kind = (await batchChangesSites(wh)) ? 'changedSite' : 'kept';
    const changes = kind === 'changedSite' ? { ...incremental, staleFromUs: 'all' as const } : incremental;
    run.reads[kind] ??= staleReads(wh, options, changes);
    const reads = await run.reads[kind];
    await withJoinsBuiltOnTheRight(wh, () => markStale(wh, options, changes, reads, range, slice));
    await alignPoints(wh, sliced(options, slice), (points) => changedRowsSql(points, changes), reads.sources);
  }
  // The temp tables the batch was aligned in leave DuckDB's pool before the transaction that
  // writes it: held, they set the commit's peak. A spooled batch has no transaction, and its
  // pairs read back from disk took its spool's write three times as long.
  if (!run.meta.spool) await handBackPool(wh);
  progress.aligned += await applyBatch(wh, range, progress.base + progress.aligned, {
    ...run.meta,
    full: incremental === null,
  });
  progress.batches++;
}

/** The forecast rows and model outputs of the days of `window` alone (every day: the tables). */
async function pointSources(wh: Warehouse, window: ValidSlice): Promise<PointSources | undefined> {
  if (window.from === undefined && window.to === undefined) return undefined;
  return sourcesBetween(wh, { from: window.from ?? null, to: window.to ?? null });
}

/** The forecast rows and model outputs, hot and of the cold files of the days of `span` alone (ColdStore.between). */
async function sourcesBetween(wh: Warehouse, { from, to }: DaySpan): Promise<PointSources> {
  return {
    forecasts: await wh.cold.between('forecasts', from, to),
    modelOutputs: await wh.cold.between('model_outputs', from, to),
  };
}

/** The halves of a part: of its sites, or for a site alone of its valid times (null: an hour). */
async function batchHalves(
  wh: Warehouse,
  options: AlignOptions,
  part: BatchPart,
): Promise<[BatchPart, BatchPart] | null> {
  const ids = (
    await wh.all<{ site_id: string }>(`SELECT site_id FROM acc_site WHERE site_id IN (${part.sites}) ORDER BY site_id`)
  ).map((row) => row.site_id);
  const sites = halvesOf(ids);
  if (sites)
    return [
      { ...part, sites: sqlList(sites[0]) },
      { ...part, sites: sqlList(sites[1]) },
    ];
  const slices = await validTimeHalves(wh, part.slice, options);
  return (
    slices && [
      { ...part, slice: slices[0] },
      { ...part, slice: slices[1] },
    ]
  );
}

/**
 * After a part went through: what it read and wrote leaves DuckDB's pool (each part then grows
 * from the same base instead of from the last one's high-water mark), and the batch is settled.
 */
async function settlePart(wh: Warehouse, run: BatchRun): Promise<void> {
  await handBackPool(wh);
  await settleBatch(wh, run);
  await run.meta.listener?.settled();
  faultPoint('accuracy-batch');
}

/** The window of `options` inside `slice`: the points a slice of a batch aligns. */
function sliced(options: AlignOptions, slice: ValidSlice): AlignOptions {
  const pick = (a: number | undefined, b: number | undefined, f: (x: number, y: number) => number) =>
    a === undefined ? b : b === undefined ? a : f(a, b);
  return { ...options, from: pick(options.from, slice.from, Math.max), to: pick(options.to, slice.to, Math.min) };
}

/**
 * The two halves of `slice` at the hour nearest the middle of the valid times the batch aligns in
 * it: those of its window and of its ledger pairs (the pairs leaving the window lie before it),
 * or null when they span an hour or less.
 */
async function validTimeHalves(
  wh: Warehouse,
  slice: ValidSlice,
  options: AlignOptions,
): Promise<[ValidSlice, ValidSlice] | null> {
  const window = sliced(options, slice);
  const [pairs] = await wh.all<{ first: number | null; last: number | null }>(
    `SELECT epoch_ms(min(valid_time))::DOUBLE AS first, epoch_ms(max(valid_time))::DOUBLE AS last FROM ${LEDGER_PAIRS}
     WHERE site_id IN (SELECT site_id FROM acc_batch) AND ${inWindowSql('valid_time', slice.from, slice.to)}`,
  );
  const ends = (values: (number | null | undefined)[], pick: (...v: number[]) => number) => {
    const known = values.filter((v): v is number => v !== null && v !== undefined);
    return known.length ? pick(...known) : null;
  };
  const from = ends([window.from, pairs.first], Math.min);
  const to = ends([window.to, pairs.last === null ? null : pairs.last + 1], Math.max);
  if (from === null || to === null || to - from <= HOUR) return null;
  const middle = Math.floor((from + (to - from) / 2) / HOUR) * HOUR;
  return [
    { from: slice.from, to: middle },
    { from: middle, to: slice.to },
  ];
}

/**
 * The vintages with points on both sides of `upTo` (where a ledger saved part way ends,
 * alignDayGroups), as STRADDLING: their points of the window before it, counted from the forecast
 * rows of the days they span alone, so that the next run compares them as it compares the others.
 */
async function countStraddling(wh: Warehouse, options: AlignOptions, upTo: number): Promise<void> {
  const at = sqlInstant(upTo);
  const straddles = `points > 0 AND first_valid < ${at} AND last_valid >= ${at}`;
  await wh.run(`CREATE OR REPLACE TEMP TABLE ${STRADDLING} (site_id VARCHAR, issue_time TIMESTAMPTZ, points BIGINT)`);
  const [{ first }] = await wh.all<{ first: number | null }>(
    `SELECT epoch_ms(min(first_valid))::DOUBLE AS first FROM acc_vintages WHERE ${straddles}`,
  );
  if (first === null) return;
  const from = options.from === undefined ? first : Math.max(first, options.from);
  await forSiteChunks(wh, (part) =>
    wh.run(`INSERT INTO ${STRADDLING}
      SELECT p.site_id, p.issue_time, count(*) FROM (${vintagePointsSql(options, part, from, upTo)}) p
      SEMI JOIN (SELECT site_id, issue_time FROM acc_vintages WHERE site_id IN (${sqlList(part)}) AND ${straddles}) s
        ON s.site_id = p.site_id AND s.issue_time = p.issue_time
      GROUP BY p.site_id, p.issue_time`),
  );
}

const STRADDLING = 'acc_straddling';

/**
 * The snapshots the next run compares with, and the state row (`nextPid`: above every pid added).
 * Saved part way (`upTo`, the window's end, alignDayGroups), the vintages are counted up to it:
 * those ending before it as counted, those going on past it as countStraddling counted them.
 */
async function saveState(
  wh: Warehouse,
  options: AlignOptions,
  fingerprint: string,
  meta: { runId: string; now: number; nextPid: number; upTo?: number },
  reach: string,
): Promise<void> {
  await wh.run('DELETE FROM accuracy_ledger_vintages');
  if (meta.upTo === undefined)
    await wh.run(
      'INSERT INTO accuracy_ledger_vintages SELECT site_id, issue_time, points FROM acc_vintages WHERE points > 0',
    );
  else
    await wh.run(`INSERT INTO accuracy_ledger_vintages
      SELECT site_id, issue_time, points FROM acc_vintages WHERE points > 0 AND last_valid < ${sqlInstant(meta.upTo)}
      UNION ALL SELECT site_id, issue_time, points FROM ${STRADDLING}`);
  await wh.run('DELETE FROM accuracy_ledger_sites');
  await wh.run('INSERT INTO accuracy_ledger_sites SELECT site_id, digest FROM acc_site_digest');
  await wh.run('DELETE FROM accuracy_ledger_flags');
  await wh.run(`INSERT INTO accuracy_ledger_flags SELECT site_id, valid_time, flags FROM actual_flags
    WHERE site_id IN (SELECT site_id FROM acc_site) AND ${reach}`);
  await wh.run('DELETE FROM accuracy_ledger_state');
  // The newest stamp seen: a sync stamps first_seen_at and revised_at with its own start time,
  // later than that of any sync before it (docs/accuracy.md, Incremental scoring).
  await wh.run(
    `INSERT INTO accuracy_ledger_state
     SELECT $1, ${sqlInstant(options.from)}, ${sqlInstant(options.to)},
       coalesce((SELECT max(greatest(first_seen_at, coalesce(revised_at, first_seen_at))) FROM actuals), 'epoch'::TIMESTAMPTZ),
       ${meta.nextPid}, $2, ${sqlInstant(meta.now)}`,
    [fingerprint, meta.runId],
  );
}

/**
 * The pid after every pair of the ledger, given `from`, its state's next_pid (else 0): the pids at
 * or above it (those of a run stopped after its state was saved) are read here. The pids
 * under it go unread (DuckDB skips row groups and cold files by their statistics): read whole,
 * every pid of the window would be read each night and left in the pool.
 */
async function pidAfter(wh: Warehouse, from: number): Promise<number> {
  const [{ next }] = await wh.all<{ next: bigint }>(
    `SELECT coalesce(max(pid) + 1, ${from}) AS next FROM ${LEDGER_PAIRS} WHERE pid >= ${from}`,
  );
  return Number(next);
}

/** Aligns batch after batch of the plan in acc_site_batch, each of the valid times in `slice`. */
async function alignBatches(wh: Warehouse, run: BatchRun, batches: number[], slice: ValidSlice): Promise<void> {
  for (const batch of batches) {
    run.meta.signal?.throwIfAborted();
    await alignBatch(wh, run, `SELECT site_id FROM acc_site_batch WHERE batch = ${batch}`, slice);
  }
}

/**
 * An incremental run's batches: the days that left the window go first, and the pairs past the
 * ledger's window a stopped run left; the changes before the days after the ledger's window
 * (tailFrom) are aligned in batches of sites, their stale pairs of closed days taken out of their
 * cold files once every batch is in; then those days, as a full alignment aligns its own.
 */
async function alignChanges(wh: Warehouse, run: BatchRun, incremental: Changes): Promise<void> {
  const tail = tailFrom(run.options, incremental);
  try {
    await retireDays(wh, incremental, run.options, run.meta);
    await retireTail(wh, incremental, run.meta.now);
    await alignBatches(wh, run, await planBatches(wh, run.options), tail === null ? {} : { to: tail });
  } catch (error) {
    // What the batches before the failed one replaced leaves the cold days before the publish.
    // Should that fail as well, the next run aligns in full (the ledger has no state) and finds
    // those pairs stale again.
    await removeColdStale(wh, run.meta.now, false).catch(() => undefined);
    throw error;
  }
  await removeColdStale(wh, run.meta.now, false);
  if (tail === null) return;
  // the groups are of whole days, the first of them aligned from the tail's start alone
  const days = { ...run.options, from: tail };
  const groups =
    days.batchPoints === undefined ? [{ from: tail, to: days.to }] : await planDayGroups(wh, days, 'tail_points');
  await alignDayGroups(wh, { ...run, options: days }, groups);
}

/**
 * A full alignment: every cold day of the ledger goes, then its days in order (day-plan.ts,
 * alignDayGroups).
 */
async function alignEveryDay(wh: Warehouse, run: BatchRun): Promise<void> {
  await removeColdStale(wh, run.meta.now, true);
  await alignDayGroups(wh, run, await planDayGroups(wh, run.options));
}

/**
 * Aligns `groups` of days in order, each in batches of sites (every pair of them new to the
 * ledger) and then moved to the cold store when closed, so that the hot tables hold a group and
 * the hot window at most, whatever the window's depth. After each group but the last, the
 * ledger's state is saved with its window ending where the group does (BatchRun.saveUpTo): a run
 * stopped later (its timeout, a kill) leaves the next one a ledger of those days to refresh
 * incrementally and the rest to align, rather than everything again.
 */
async function alignDayGroups(wh: Warehouse, run: BatchRun, groups: readonly DayGroup[]): Promise<void> {
  for (const [i, group] of groups.entries()) {
    const spooled = await alignDayGroup(wh, run, group);
    if (group.to === undefined) continue;
    if (i < groups.length - 1) {
      await run.saveUpTo(group.to);
      faultPoint('accuracy-group');
    }
    if (!spooled) {
      const moved = await wh.moveClosedDays({ tables: [LEDGER_PAIRS, LEDGER_QUANTILES], before: group.to });
      noteColdDays(run.progress, moved);
    }
    await handBackPool(wh);
  }
}

/**
 * A day group's batches, every pair new to the ledger: into a spool whose days then go straight to
 * their cold files (true) when the group is whole days of the run's window, before the hot
 * window (days the ledger holds no pair of: a full alignment dropped its cold days, a tail's
 * were dropped past the ledger's window), else into the hot tables.
 */
async function alignDayGroup(wh: Warehouse, run: BatchRun, group: DayGroup): Promise<boolean> {
  const batches = await planGroupBatches(wh, run.options, group);
  const everyPairNew: BatchRun = { ...run, incremental: null };
  const days = wholeDaysToCold(wh, run.options, group);
  if (days === null) {
    await alignBatches(wh, everyPairNew, batches, group);
    return false;
  }
  const spool = await ledgerSpool(wh);
  try {
    await alignBatches(wh, { ...everyPairNew, meta: { ...run.meta, spool } }, batches, group);
    noteColdDays(run.progress, await writeSpooledDays(wh, spool, days));
  } finally {
    spool.pairs.drop();
    spool.quantiles.drop();
  }
  return true;
}

/** Keeps the first day of the ledger's pairs a run wrote to the cold store, where its statistics find them. */
function noteColdDays(progress: BatchProgress, written: readonly MovedDay[]): void {
  for (const { table, day } of written) {
    const dayMs = parseDay(day);
    if (table === LEDGER_PAIRS && (progress.coldFromMs === null || dayMs < progress.coldFromMs))
      progress.coldFromMs = dayMs;
  }
}

/**
 * The ledger's pairs from the end of its window on, before the first batch: those a run stopped
 * after saving a day group had aligned of the next (alignDayGroups). They never were in the
 * statistics, whose state that run had removed before its first batch: their hot rows are
 * deleted and their cold days (whole days past the window) dropped unread. None on other nights.
 */
async function retireTail(wh: Warehouse, old: Changes, now: number): Promise<void> {
  if (old.to === null) return;
  const [{ any }] = await wh.all<{ any: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${LEDGER_PAIRS} WHERE valid_time >= ${sqlInstant(old.to)}) AS any`,
  );
  if (any) await dropLedgerRange(wh, old.to, null, now);
}

/**
 * Brings the ledger up to date with the warehouse for `options`: incrementally when its state
 * was written with the same fingerprint, else (or when `full`) by aligning every pair again.
 * The pairs are aligned and written a batch of sites at a time, each batch in a transaction of
 * its own, so that no statement or transaction holds more than a batch of pairs (inside one
 * transaction DuckDB keeps every replaced temp table and every deleted row's version until the
 * commit, so a delete spread over the whole ledger would hold it all). A transaction before
 * the first batch removes the ledger's state and the last transaction writes it anew: a run killed in between
 * leaves a ledger that the next run aligns in full. The listener is done after that, so a run
 * stopped in the statistics leaves the next one a ledger to refresh incrementally.
 */
export async function refreshLedger(
  wh: Warehouse,
  options: AlignOptions,
  meta: { runId: string; now: number; full?: boolean; listener?: LedgerListener; signal?: AbortSignal },
): Promise<LedgerRefresh> {
  await chooseSites(wh, options);
  const skipped = await unusableSites(wh, options);
  await siteLevels(wh, options);
  const fingerprint = fingerprintOf(options);
  await siteDigests(wh);
  const old = await readState(wh);
  const reason = meta.full
    ? '--full'
    : old === null
      ? (await ledgerHasPairs(wh))
        ? 'the last run did not finish'
        : 'no ledger yet'
      : old.fingerprint !== fingerprint
        ? 'settings changed'
        : (await siteLeftOut(wh))
          ? 'a site left the score'
          : null;
  const kept = reason === null ? old : null;
  await countVintages(wh, options, kept);
  const reach = await flagsReachSql(wh, options, kept);
  const sitesChanged = kept ? await markDirtySites(wh) : 0;
  const incremental = kept ? await markChanges(wh, kept, reach) : null;
  // pids stay unique while old and new pairs sit side by side between batches
  const base = await pidAfter(wh, old?.nextPid ?? 0);
  const progress: BatchProgress = { base, aligned: 0, batches: 0, deleted: 0, coldFromMs: null };
  // A batch numbers its pairs from 1 past the pids before it (applyBatch), so every pid the run
  // added lies at or below base + aligned: known here, where a read of them would open every
  // cold file the run has written so far, once per day group.
  const nextPid = () => progress.base + progress.aligned + 1;
  await wh.run(`CREATE OR REPLACE TEMP TABLE ${COLD_STALE} (pid BIGINT, day DATE)`);
  await wh.transaction(() => startLedger(wh, { ...meta, full: incremental === null }));
  const saveUpTo = async (to: number) => {
    await countStraddling(wh, options, to);
    await wh.transaction(async () =>
      saveState(wh, { ...options, to }, fingerprint, { ...meta, nextPid: nextPid(), upTo: to }, reach),
    );
  };
  const run: BatchRun = { options, incremental, progress, meta, reads: {}, saveUpTo };
  if (incremental) await alignChanges(wh, run, incremental);
  else await alignEveryDay(wh, run);
  const pairsAligned = progress.aligned;
  // The pairs the last batches wrote stay in DuckDB's pool until a checkpoint, which no purge
  // frees: left there, they would take the memory the statistics need.
  await wh.checkpoint();
  const refresh = await wh.transaction(async (): Promise<LedgerRefresh> => {
    await saveState(wh, options, fingerprint, { ...meta, nextPid: nextPid() }, reach);
    const [{ pairs, quantiles }] = await wh.all<{ pairs: bigint; quantiles: boolean }>(
      `SELECT (SELECT count(*) FROM ${LEDGER_PAIRS}) AS pairs, EXISTS (SELECT 1 FROM ${LEDGER_QUANTILES}) AS quantiles`,
    );
    return {
      mode: reason === null ? 'incremental' : 'full',
      reason,
      sitesChanged,
      pairsAligned,
      batches: progress.batches,
      pairs: Number(pairs),
      quantiles,
      skipped,
    };
  });
  await meta.listener?.done({ fromPid: base, coldFromMs: progress.coldFromMs });
  return refresh;
}

async function ledgerHasPairs(wh: Warehouse): Promise<boolean> {
  const [{ any }] = await wh.all<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${LEDGER_PAIRS}) AS any`);
  return any;
}

/** Drops the temp tables of a refresh (the alignment's are dropped by dropAlignment). */
export async function dropRefresh(wh: Warehouse): Promise<void> {
  for (const table of [
    'acc_vintages',
    STRADDLING,
    'acc_site_digest',
    'acc_dirty_sites',
    'acc_dirty_issues',
    'acc_changed_actuals',
    'acc_dirty_hours',
    'acc_stale',
    COLD_STALE,
    'acc_site_batch',
  ]) {
    await wh.run(`DROP TABLE IF EXISTS ${table}`);
  }
  await dropDayPlan(wh);
}

/**
 * `pairs: incremental, 1234 aligned, 56789 scored; statistics: incremental, 2 of 7 days read` (or
 * `full (--full), ...`, and `, in SQL` where the native functions are missing): what the command
 * and the job report.
 */
export function ledgerLine(ledger: LedgerRefresh): string {
  const changed = ledger.sitesChanged
    ? ` (${ledger.sitesChanged} site${ledger.sitesChanged === 1 ? '' : 's'} new or changed)`
    : '';
  const mode = ledger.mode === 'full' ? `full (${ledger.reason})` : `incremental${changed}`;
  const inSql = ledger.stats?.engine === 'sql' ? ', in SQL (native functions not loaded: docs/accuracy.md#speed)' : '';
  const stats = ledger.stats
    ? `; statistics: ${ledger.stats.mode}, ${ledger.stats.days} of ${ledger.stats.of} days read${inSql}`
    : '';
  return `pairs: ${mode}, ${ledger.pairsAligned} aligned, ${ledger.pairs} scored${stats}`;
}
