// Which windows and vintages a sync reads, from how far each site and resource has synced.
// Pure functions of the clock, the sync state, config.sync and the service's lists, so the plan
// is testable alone.
import { CronExpressionParser } from 'cron-parser';
import { DAY } from '../time.js';

export interface WindowSettings {
  /** Re-read this much before the last synced point (late and revised data). */
  lookback: number;
  /** How far back the first sync of a site reaches. */
  initialHistory: number;
  /** How far past an as_of (and past now) forecasts are read. */
  horizon: number;
}

/** How far one site and resource has synced (a row of sync_state). */
export interface SyncMark {
  syncedTo: number;
  lastAsOf: number | null;
  /** Actuals: what the last read found from syncedTo - lookback on (src/sync/digest.ts); null or absent: nothing to compare. */
  digest?: string | null;
}

/** A historical window asked for with --from/--to (epoch ms). */
export interface Backfill {
  from: number;
  to: number;
}

export interface Window {
  start: number;
  end: number;
}

/** One read of a forecast or model output: `asOf` null reads the current one. */
export interface VintageRead extends Window {
  asOf: number | null;
}

export interface VintagePlan {
  reads: VintageRead[];
  /** The sync state to record once every read has landed; null leaves it as it is (backfill). */
  mark: SyncMark | null;
}

/** Start of the incremental window: the last synced point minus the lookback, or the start of history. */
function incrementalStart(now: number, mark: SyncMark | null, settings: WindowSettings): number {
  return mark ? mark.syncedTo - settings.lookback : now - settings.initialHistory;
}

/**
 * Actuals: one window, [synced_to - lookback, now], or the backfill window. The mark is synced_to
 * as sync_state will hold it, which never moves back (a clock set back keeps the later one), so
 * that the digest kept with it is of the window the next run reads.
 */
export function planActuals(
  now: number,
  mark: SyncMark | null,
  settings: WindowSettings,
  backfill?: Backfill,
): { window: Window; mark: SyncMark | null } {
  if (backfill) return { window: { start: backfill.from, end: backfill.to }, mark: null };
  return {
    window: { start: incrementalStart(now, mark, settings), end: now },
    mark: { syncedTo: Math.max(now, mark?.syncedTo ?? now), lastAsOf: null },
  };
}

/**
 * The site forecast, from the service's list of issue times (Get Site Forecast Updates): every
 * issued vintage not read yet, each read as of its issue time over [issue, issue + horizon].
 * Incremental: only issue times after the last one read (or, on a first sync, from the start of
 * history), none after now; a rerun at the same clock reads nothing. A backfill reads the issue
 * times of its window and leaves the sync state where it is.
 */
export function planForecastUpdates(
  now: number,
  mark: SyncMark | null,
  settings: WindowSettings,
  updates: readonly number[],
  backfill?: Backfill,
): VintagePlan {
  const [from, to] = updatesWindow(now, mark, settings, backfill);
  // filtered first: the list holds every issue since the site's history began (a year: ~5,600)
  const issues = [...new Set(updates.filter((issue) => issue >= from && issue <= to))].sort((a, b) => a - b);
  const reads = issues.map((asOf) => ({ asOf, start: asOf, end: asOf + settings.horizon }));
  if (backfill) return { reads, mark: null };
  return { reads, mark: { syncedTo: now, lastAsOf: issues.at(-1) ?? mark?.lastAsOf ?? null } };
}

/** The issue times a run reads: after the last one read (first sync: within the initial history), or the backfill's. */
function updatesWindow(
  now: number,
  mark: SyncMark | null,
  settings: WindowSettings,
  backfill?: Backfill,
): [number, number] {
  if (backfill) return [backfill.from, Math.min(backfill.to, now)];
  return [mark?.lastAsOf != null ? mark.lastAsOf + 1 : now - settings.initialHistory, now];
}

/**
 * Where a run's model-output reads start and end: after the last run's clock (a first sync: the
 * initial history) up to now, or the backfill's window. The reads are per model (outputs.ts).
 */
export function planOutputWindow(
  now: number,
  mark: SyncMark | null,
  settings: WindowSettings,
  backfill?: Backfill,
): { from: number; to: number; mark: SyncMark | null } {
  const [from, to] = updatesWindow(now, mark, settings, backfill);
  return { from, to, mark: backfill ? null : { syncedTo: now, lastAsOf: now } };
}

/** A read of a model's output: for a cron fire, or (no readable schedule) at a listed issue time. */
export interface OutputRead extends VintageRead {
  asOf: number;
  /** What names the item: the fire, or the listed issue time. */
  issue: number;
  /** The fire whose vintage is asked for; null for a listed issue time. */
  fire: number | null;
}

/**
 * The reads of a model's output in the window of planOutputWindow: one per cron fire (the model
 * issues on its schedule, UTC), or, without a readable schedule, one per issue time the site lists.
 */
export function planModelOutputs(
  window: { from: number; to: number },
  schedule: string | undefined,
  updates: readonly number[],
  now: number,
  horizon: number,
): OutputRead[] {
  const fires = cronFires(schedule);
  const { from, to } = window;
  if (!fires)
    return [...new Set(updates)]
      .filter((issue) => issue >= from && issue <= to)
      .map((issue) => ({ issue, fire: null, asOf: issue, start: issue, end: issue + horizon }));
  // A day past the window gives the next fire of the last one (memoised: sites share the window).
  const listed = fires(from, to + DAY);
  return listed.flatMap((fire, i) => (fire <= to ? [fireRead(fire, listed[i + 1] ?? null, now, horizon)] : []));
}

/**
 * The read for `issue`: with a schedule, `issue` is a fire (a pending one, from an earlier run),
 * otherwise a listed issue time, read exactly.
 */
export function outputRead(issue: number, schedule: string | undefined, now: number, horizon: number): OutputRead {
  if (!schedule || !cronFires(schedule)) return { issue, fire: null, asOf: issue, start: issue, end: issue + horizon };
  return fireRead(issue, nextFire(schedule, issue), now, horizon);
}

/**
 * A fire read as of just before its next fire (1 µs) or now, whichever is first, so the answer is
 * the vintage published for that fire however late within its period it came out.
 */
function fireRead(fire: number, next: number | null, now: number, horizon: number): OutputRead {
  const asOf = next === null ? now : Math.min(next - 0.001, now);
  return { issue: fire, fire, asOf, start: fire, end: asOf + horizon };
}

/**
 * The first fire of `schedule` (UTC) after `fire`, or null when there is none within a week.
 * Memoised per schedule and fire: every output read asks it, the sites' models share a few
 * schedules and so the same fires, and parsing the cron at every read took a tenth of a first
 * sync's main thread (docs/benchmarks.md, session 20).
 */
function nextFire(schedule: string, fire: number): number | null {
  const key = `${schedule}@${fire}`;
  const known = nextFires.get(key);
  if (known !== undefined) return known;
  const cron = CronExpressionParser.parse(schedule, { currentDate: fire, endDate: fire + WEEK, tz: 'UTC' });
  const next = cron.hasNext() ? cron.next().getTime() : null;
  if (nextFires.size >= NEXT_FIRES_SIZE) nextFires.clear();
  nextFires.set(key, next);
  return next;
}

/** The next fire per `schedule@fire`; bounded (a year of hourly fires of a few schedules fits). */
const nextFires = new Map<string, number | null>();
const NEXT_FIRES_SIZE = 65_536;

const WEEK = 7 * DAY;

/**
 * The fire times of a cron schedule (UTC) in [from, to], or null when there is none or it does not
 * parse. Memoised per schedule and window: every site's models share a few schedules and, in one
 * run, the same window, and walking a cron over a week for every read is not cheap.
 */
export function cronFires(schedule: string | undefined): ((from: number, to: number) => readonly number[]) | null {
  if (!schedule) return null;
  let known = schedules.get(schedule);
  if (known === undefined) {
    known = parses(schedule) ? new Map() : null;
    if (schedules.size >= MEMO_SIZE) schedules.clear();
    schedules.set(schedule, known);
  }
  if (known === null) return null;
  const windows = known;
  return (from, to) => {
    const key = `${from}/${to}`;
    const cached = windows.get(key);
    if (cached) return cached;
    const cron = CronExpressionParser.parse(schedule, { currentDate: from - 1, endDate: to, tz: 'UTC' });
    const fires: number[] = [];
    while (cron.hasNext()) fires.push(cron.next().getTime());
    if (windows.size >= MEMO_SIZE) windows.clear();
    windows.set(key, fires);
    return fires;
  };
}

/** Schedules seen (null: does not parse), each with its fire times per window `from/to`; bounded. */
const schedules = new Map<string, Map<string, readonly number[]> | null>();
const MEMO_SIZE = 256;

function parses(schedule: string): boolean {
  try {
    CronExpressionParser.parse(schedule, { tz: 'UTC' });
    return true;
  } catch {
    return false;
  }
}
