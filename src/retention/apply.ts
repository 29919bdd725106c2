// Applies retention to the warehouse (rules.ts says what goes): one UTC day of valid times and
// whole sites of up to the budget's `rows.retentionSlice` rows to a transaction, each leaving a warehouse every view
// and score reads as before; a day done is recorded in retention_days (migration 022) with the
// rows it kept, in its last slice's transaction. A run killed between slices leaves a day whose count differs from
// its record, or that has none, and the next run reads it again: deciding is idempotent (a kept
// vintage stays the one kept once the others are gone), so the next run completes the day.
import type { Config } from '../config.js';
import { faultPoint } from '../fault.js';
import { DAY, formatInstant, HOUR } from '../time.js';
import {
  dateOfEpochDay,
  epochDayOf,
  instantLiteral,
  quoteIdentifier,
  quoteLiteral,
  sqlList,
} from '../warehouse/sql.js';
import { CURRENT } from '../warehouse/cold.js';
import { runInHalves } from '../warehouse/executor.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import {
  cutoffOf,
  keptVintagesSql,
  LEDGER_QUANTILES,
  RETAINED_TABLES,
  vintageGoesSql,
  type KeptVintage,
  type RetainedTable,
  type RetentionPolicy,
} from './rules.js';

const KEPT = 'retention_kept';

/** Rows per table. */
type Counts = Record<string, number>;

export interface RetentionRequest {
  runId: string;
  now: number;
  /** Count what would go, remove nothing. */
  dryRun: boolean;
  /** Aborted: stop before the next day. */
  signal?: AbortSignal;
}

export interface RetentionResult {
  /** Rows removed (dry: that would go) per table. */
  removed: Counts;
  /** Per table reached, the instant before which it loses rows (null: none) and the days read. */
  tables: { table: string; before: number | null; days: number }[];
  /** Stopped by the signal before every day was read. */
  stopped: boolean;
}

export function retentionPolicy(config: Config['retention']): RetentionPolicy {
  return { allVintagesMs: config.all_vintages, keep: config.keep, actualRevisionsMs: config.actual_revisions };
}

export async function applyRetention(
  wh: Warehouse,
  policy: RetentionPolicy,
  request: RetentionRequest,
): Promise<RetentionResult> {
  const ledgerFrom = await ledgerWindowFrom(wh);
  const ending = await forecastsEnding(wh);
  const removed: Counts = {};
  const tables: RetentionResult['tables'] = [];
  let uncheckpointed = 0;
  for (const table of RETAINED_TABLES) {
    const before = cutoffOf(table, policy, request.now, ledgerFrom);
    const rule = ruleOf(table, policy.keep, ending);
    const days = before === null ? [] : await daysToRead(wh, table.table, before, rule);
    tables.push({ table: table.table, before, days: days.length });
    for (const day of days) {
      if (request.signal?.aborted) return { removed, tables, stopped: true };
      const context = { policy, ending, rule, request, uncheckpointed };
      addCounts(removed, await retainDay(wh, table, day, context));
      uncheckpointed = context.uncheckpointed;
    }
  }
  return { removed, tables, stopped: false };
}

/** The summary lines of a run: per table, what went (or would) and from before when. */
export function describeRetention(result: RetentionResult, policy: RetentionPolicy, dryRun: boolean): string[] {
  const verb = dryRun ? 'would go' : 'removed';
  const lines = result.tables.map(({ table, before, days }) => {
    if (before === null)
      return `${table}: nothing to remove (the accuracy ledger's window, or its absence, keeps it whole)`;
    const quantiles = table === 'accuracy_pairs' ? `, ${result.removed[LEDGER_QUANTILES] ?? 0} quantiles` : '';
    return `${table}: ${result.removed[table] ?? 0} rows ${verb}${quantiles} (valid times before ${formatInstant(before)}, ${days} day${days === 1 ? '' : 's'} read)`;
  });
  lines.push(`kept after ${policy.allVintagesMs / DAY} days: ${policy.keep.map(keptName).join(', ')}`);
  if (result.stopped) lines.push('stopped before every day was read: the next run goes on');
  return lines;
}

function keptName(kept: KeptVintage): string {
  return typeof kept === 'number' ? `${kept / HOUR}h lead` : kept;
}

/** What decides which rows of `table` stay: a day kept by another rule is read again. */
function ruleOf(table: RetainedTable, keep: readonly KeptVintage[], ending: boolean): string {
  if (table.rule !== 'vintages') return table.rule;
  return `${keep.map((k) => (typeof k === 'number' ? `${k}ms` : k)).join(',')} (${ending ? 'ending' : 'beginning'})`;
}

async function ledgerWindowFrom(wh: Warehouse): Promise<number | null> {
  const [row] = await wh.all<{ window_from: Date | null }>('SELECT window_from FROM accuracy_ledger_state');
  // A ledger with an open start covers every valid time: nothing before it.
  if (row) return row.window_from?.getTime() ?? Number.NEGATIVE_INFINITY;
  return null;
}

async function forecastsEnding(wh: Warehouse): Promise<boolean> {
  const rows = await wh.all<{ label: string }>("SELECT label FROM interval_labels WHERE resource = 'forecasts'");
  return rows[0]?.label === 'ending';
}

/**
 * The UTC days (epoch days) of `table` before `before` whose rows, hot and cold, differ in number
 * from those retention left there, or that it kept by another rule or never read: a scan of one
 * column of the hot table grouped by day, and the cold files' row counts, so its memory does not
 * grow with the history. A cold day thinned once matches its record and is not read again; a
 * night missed leaves days unrecorded, which the next run reads.
 */
async function daysToRead(wh: Warehouse, table: string, before: number, rule: string): Promise<number[]> {
  const rows = await wh.all<{ day: bigint }>(
    `SELECT d.day FROM (
       SELECT day, sum(n) AS n FROM (
         SELECT ${epochDayOf('valid_time')} AS day, count(*) AS n FROM ${quoteIdentifier(table)}
         WHERE valid_time < ${instantLiteral(before)} GROUP BY day
         UNION ALL
         SELECT (day - DATE '1970-01-01') AS day, row_count AS n FROM cold_files
         WHERE table_name = ${quoteLiteral(table)} AND ${CURRENT} AND day < ${dateOfEpochDay(String(Math.floor(before / DAY)))})
       GROUP BY day) d
     LEFT JOIN retention_days r ON r.table_name = ${quoteLiteral(table)} AND r.day = ${dateOfEpochDay('d.day')}
     WHERE r.rows_kept IS DISTINCT FROM d.n OR r.rule IS DISTINCT FROM ${quoteLiteral(rule)}
     ORDER BY d.day`,
  );
  return rows.map((r) => Number(r.day));
}

interface DayContext {
  policy: RetentionPolicy;
  ending: boolean;
  rule: string;
  request: RetentionRequest;
  /** Rows deleted since the last checkpoint. */
  uncheckpointed: number;
}

function addCounts(into: Counts, from: Counts): Counts {
  for (const [table, count] of Object.entries(from)) into[table] = (into[table] ?? 0) + count;
  return into;
}

/**
 * Consecutive sites (in site order) holding about `maxRows` rows of the day together; a site with
 * more is a slice of its own.
 */
function slicesOf(sites: { site_id: string; n: bigint }[], maxRows: number): string[][] {
  const slices: string[][] = [];
  let rows = 0;
  for (const { site_id, n } of sites) {
    if (slices.length === 0 || rows + Number(n) > maxRows) {
      slices.push([]);
      rows = 0;
    }
    slices[slices.length - 1].push(site_id);
    rows += Number(n);
  }
  return slices;
}

/**
 * One day of one table: its hot rows a slice of sites to a transaction, then its cold file, if
 * any, thinned to a new generation; the rows removed (or that would go) per table. The vintages
 * kept are decided over the day's hot and cold rows together, as in a warehouse keeping every day
 * hot. The day is recorded last, in a transaction of its own: a kill before leaves it unrecorded,
 * and deciding again keeps the same rows.
 */
async function retainDay(wh: Warehouse, table: RetainedTable, day: number, context: DayContext): Promise<Counts> {
  const name = quoteIdentifier(table.table);
  const inDay = `valid_time >= ${instantLiteral(day * DAY)} AND valid_time < ${instantLiteral((day + 1) * DAY)}`;
  const sites = await wh.all<{ site_id: string; n: bigint }>(
    `SELECT site_id, count(*) AS n FROM ${name} WHERE ${inDay} GROUP BY site_id ORDER BY site_id`,
  );
  const removed: Counts = {};
  const source = await dayRowsSql(wh, table, day, inDay);
  for (const slice of slicesOf(sites, wh.rows.retentionSlice)) {
    const ofSlice = `${inDay} AND site_id IN (${sqlList(slice)})`;
    const gone = context.request.dryRun
      ? await sliceRows(wh, table, ofSlice, source, context, false)
      : await removeOrSplit(wh, table, { day, inDay, sites: slice, source }, context);
    addCounts(removed, gone);
  }
  addCounts(removed, await retainColdDay(wh, table, day, inDay, context));
  if (!context.request.dryRun) await recordDay(wh, table.table, day, inDay, context);
  return removed;
}

/**
 * The relation retention decides a day on: the hot table, or, when the day has a cold file, the
 * day's hot rows together with it.
 */
async function dayRowsSql(wh: Warehouse, table: RetainedTable, day: number, inDay: string): Promise<string> {
  const name = quoteIdentifier(table.table);
  const cold = table.rule === 'ledger' ? null : await wh.cold.dayRows(table.table, day * DAY);
  if (cold === null) return name;
  return `(SELECT * FROM ${name} WHERE ${inDay} UNION ALL BY NAME SELECT * FROM ${cold}) AS ${name}`;
}

/**
 * Thins the day's cold file (cold.rewritePartition: a new generation written, fsynced and switched
 * to in one transaction, so a kill leaves the old one current), or counts what would go. A day of
 * the ledger goes whole, its quantiles' file with it.
 */
async function retainColdDay(
  wh: Warehouse,
  table: RetainedTable,
  day: number,
  inDay: string,
  context: DayContext,
): Promise<Counts> {
  const counts: Counts = {};
  const name = quoteIdentifier(table.table);
  for (const cold of table.rule === 'ledger' ? [LEDGER_QUANTILES, table.table] : [table.table]) {
    const rows = await wh.cold.dayRows(cold, day * DAY);
    if (rows === null) continue;
    const source = await dayRowsSql(wh, table, day, inDay);
    // the kept vintages of each slice of the day's sites, as the rewrite reaches it
    const prepare =
      table.rule === 'vintages' ? (ofSlice: string) => markKept(wh, table, ofSlice, source, context) : undefined;
    // a revisions' or the ledger's day goes whole (null: its file is not read)
    const keep = table.rule === 'vintages' ? `NOT (${vintageGoesSql(table, name, KEPT)})` : null;
    if (context.request.dryRun) {
      await prepare?.('TRUE');
      const [{ n }] = await wh.all<{ n: bigint }>(
        `WITH ${quoteIdentifier(cold)} AS (SELECT * FROM ${rows}) SELECT count(*) FILTER (WHERE NOT (${keep ?? 'FALSE'})) AS n FROM ${quoteIdentifier(cold)}`,
      );
      counts[cold] = Number(n);
      continue;
    }
    const dayText = new Date(day * DAY).toISOString().slice(0, 10);
    counts[cold] = (await wh.cold.rewritePartition(cold, dayText, keep, context.request.now, prepare)).removed;
    faultPoint('retention-slice');
  }
  return counts;
}

interface Slice {
  day: number;
  inDay: string;
  sites: string[];
  /** The relation the kept vintages are decided on (dayRowsSql). */
  source: string;
}

/**
 * Removes a slice in a transaction of its own, then checkpoints once the budget's
 * `rows.retentionCheckpointAfter` rows went since the last checkpoint. The executor splits a
 * slice that runs out of DuckDB's memory: after a checkpoint into halves of its sites, and a site
 * alone gets one more try, as the sync's merge does.
 */
async function removeOrSplit(wh: Warehouse, table: RetainedTable, slice: Slice, context: DayContext): Promise<Counts> {
  const removed = await runInHalves(
    slice.sites,
    (sites) =>
      wh.transaction(() =>
        sliceRows(wh, table, `${slice.inDay} AND site_id IN (${sqlList(sites)})`, slice.source, context, true),
      ),
    {
      handBack: async () => {
        await wh.checkpoint();
        context.uncheckpointed = 0;
      },
      warehouse: wh,
      settle: (_sites, counts) => checkpointPast(wh, counts, context),
    },
  );
  return removed.reduce(addCounts, {});
}

/** Counts a slice's removed rows, and checkpoints once `rows.retentionCheckpointAfter` went since the last. */
async function checkpointPast(wh: Warehouse, counts: Counts, context: DayContext): Promise<void> {
  faultPoint('retention-slice');
  context.uncheckpointed += Object.values(counts).reduce((sum, n) => sum + n, 0);
  if (context.uncheckpointed >= wh.rows.retentionCheckpointAfter) {
    await wh.checkpoint();
    context.uncheckpointed = 0;
  }
}

/** The kept vintages of the rows of `source` matching `where`, as the temp table KEPT. */
async function markKept(
  wh: Warehouse,
  table: Extract<RetainedTable, { rule: 'vintages' }>,
  where: string,
  source: string,
  context: DayContext,
): Promise<void> {
  const kept = keptVintagesSql(table, context.policy.keep, source, where, context.ending);
  await wh.run(`CREATE OR REPLACE TEMP TABLE ${KEPT} AS ${kept}`);
}

/** The rows of a slice that go, as a condition on the table's own rows (after markKept for vintages). */
function goesSql(table: RetainedTable, where: string): string {
  if (table.rule !== 'vintages') return where;
  return `${where} AND ${vintageGoesSql(table, quoteIdentifier(table.table), KEPT)}`;
}

/** What a slice removes, per table; with `remove` false (a dry run), what it would remove. */
async function sliceRows(
  wh: Warehouse,
  table: RetainedTable,
  where: string,
  source: string,
  context: DayContext,
  remove: boolean,
): Promise<Counts> {
  const name = quoteIdentifier(table.table);
  if (table.rule === 'vintages') await markKept(wh, table, where, source, context);
  const rows = async (from: string, condition: string) =>
    remove
      ? wh.changed(`DELETE FROM ${from} WHERE ${condition}`)
      : Number((await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${from} WHERE ${condition}`))[0].n);
  const counts: Counts = {};
  if (table.rule === 'ledger')
    counts[LEDGER_QUANTILES] = await rows(LEDGER_QUANTILES, `pid IN (SELECT pid FROM ${name} WHERE ${where})`);
  counts[table.table] = await rows(name, goesSql(table, where));
  return counts;
}

/** The day's rows left, hot and cold (daysToRead counts them so), recorded with the rule. */
async function recordDay(wh: Warehouse, table: string, day: number, inDay: string, context: DayContext): Promise<void> {
  await wh.run(
    `INSERT OR REPLACE INTO retention_days
     SELECT $1, ${dateOfEpochDay(String(day))}, (SELECT count(*) FROM ${quoteIdentifier(table)} WHERE ${inDay})
       + coalesce((SELECT sum(row_count) FROM cold_files
         WHERE table_name = $1 AND day = ${dateOfEpochDay(String(day))} AND ${CURRENT}), 0), $2, $3`,
    [table, context.rule, context.request.runId],
  );
}
