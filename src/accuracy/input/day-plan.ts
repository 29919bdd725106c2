// The plan of a full alignment (src/accuracy/input/incremental.ts, refreshLedger): UTC days in
// order, consecutive days together up to a batch of points, and within them batches of sites.
// A day's pairs are all in once its group is, so the ledger's closed days go to the cold store
// group after group and its hot tables never hold more than a group and the hot window: DuckDB
// keeps metadata of every row group of a table, and a checkpoint's memory grows with the table,
// both outside its memory limit (docs/benchmarks.md, session 30).
import { DAY } from '../../time.js';
import { chunksOf } from '../../warehouse/executor.js';
import { epochDayOf } from '../../warehouse/sql.js';
import type { Warehouse } from '../../warehouse/warehouse.js';
import type { AlignOptions } from './align.js';

/** Valid times [from, to) in ms of consecutive whole UTC days, both ends open for a plan of one group. */
export interface DayGroup {
  from?: number;
  to?: number;
}

/** Per site of acc_vintages: its first and last UTC day of points in the window, and its points per day. */
const SITE_DAYS = 'acc_site_days';

/**
 * The day groups of a full alignment of `options`' window, in order: consecutive days whose
 * points (each site's points of the window spread evenly over the days it has points on) add up
 * to at most `batchPoints`, a day with more alone. Without `batchPoints`, one group of every day.
 * Reads acc_vintages (countVintages, with last_valid): its `points`, or for the days after
 * the ledger's window its `tail_points`.
 */
export async function planDayGroups(
  wh: Warehouse,
  options: AlignOptions,
  points: 'points' | 'tail_points' = 'points',
): Promise<DayGroup[]> {
  const { batchPoints } = options;
  if (batchPoints === undefined) return [{}];
  const clip = (day: string, bound: number | undefined, pick: string, edge: number) =>
    bound === undefined ? day : `${pick}(${day}, ${Math.floor((bound - edge) / DAY)})`;
  await wh.run(`CREATE OR REPLACE TEMP TABLE ${SITE_DAYS} AS
    SELECT site_id, first, last, points / (last - first + 1) AS per_day FROM (
      SELECT site_id, ${clip(epochDayOf('min(first_valid)'), options.from, 'greatest', 0)} AS first,
        ${clip(epochDayOf('max(last_valid)'), options.to, 'least', 1)} AS last, sum(${points}) AS points
      FROM acc_vintages WHERE ${points} > 0 GROUP BY site_id)
    WHERE last >= first`);
  const sites = await wh.all<{ first: bigint; last: bigint; per_day: number }>(
    `SELECT first, last, per_day FROM ${SITE_DAYS}`,
  );
  return groupDays(dayTotals(sites), batchPoints);
}

/** Points per day (epoch day → points) of sites spread evenly over their days, by a running sum of where each starts and stops. */
function dayTotals(sites: { first: bigint; last: bigint; per_day: number }[]): Map<number, number> {
  const change = new Map<number, number>();
  for (const site of sites) {
    const first = Number(site.first);
    const after = Number(site.last) + 1;
    change.set(first, (change.get(first) ?? 0) + site.per_day);
    change.set(after, (change.get(after) ?? 0) - site.per_day);
  }
  const totals = new Map<number, number>();
  const days = [...change.keys()].sort((a, b) => a - b);
  let running = 0;
  for (let i = 0; i < days.length - 1; i++) {
    running += change.get(days[i])!;
    for (let day = days[i]; day < days[i + 1]; day++) if (running > 0.5) totals.set(day, running);
  }
  return totals;
}

/** Consecutive days with points grouped while their points stay within `limit` (a day with more alone). */
function groupDays(totals: Map<number, number>, limit: number): DayGroup[] {
  const runs: { key: number; rows: number }[][] = [];
  for (const day of [...totals.keys()].sort((a, b) => a - b)) {
    const run = runs.at(-1);
    const item = { key: day, rows: totals.get(day)! };
    if (run && run.at(-1)!.key === day - 1) run.push(item);
    else runs.push([item]);
  }
  return runs.flatMap((run) =>
    chunksOf(run, limit).map(({ keys }) => ({ from: keys[0] * DAY, to: (keys.at(-1)! + 1) * DAY })),
  );
}

/**
 * Numbers the sites with points in `group` into batches of about `batchPoints` of their points
 * there each, in site order, as acc_site_batch; returns the batch numbers. A site with more is a
 * batch of its own; a group of every day (no `batchPoints`) is one batch of every site.
 */
export async function planGroupBatches(wh: Warehouse, options: AlignOptions, group: DayGroup): Promise<number[]> {
  const { batchPoints } = options;
  if (batchPoints === undefined || group.from === undefined || group.to === undefined) {
    await wh.run('CREATE OR REPLACE TEMP TABLE acc_site_batch AS SELECT site_id, 0 AS batch FROM acc_site');
    return [0];
  }
  const first = group.from / DAY;
  const last = group.to / DAY - 1;
  await wh.run(`CREATE OR REPLACE TEMP TABLE acc_site_batch AS
    SELECT site_id, (sum(points) OVER (ORDER BY site_id) - points) // ${batchPoints} AS batch FROM (
      SELECT site_id, CAST(ceil(per_day * (least(last, ${last}) - greatest(first, ${first}) + 1)) AS BIGINT) AS points
      FROM ${SITE_DAYS} WHERE first <= ${last} AND last >= ${first})`);
  const rows = await wh.all<{ batch: bigint }>('SELECT DISTINCT batch FROM acc_site_batch ORDER BY batch');
  return rows.map((r) => Number(r.batch));
}

/** Drops what the plan made. */
export async function dropDayPlan(wh: Warehouse): Promise<void> {
  await wh.run(`DROP TABLE IF EXISTS ${SITE_DAYS}`);
}
