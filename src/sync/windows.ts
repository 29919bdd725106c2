// Which windows and vintages a sync reads, from how far each site and resource has synced.
// Pure functions of the clock, the sync state and config.sync, so the plan is testable alone.
import { DAY } from '../time.js';

export interface WindowSettings {
  /** Re-read this much before the last synced point (late and revised data). */
  lookback: number;
  /** How far back the first sync of a site reaches. */
  initialHistory: number;
  /** How far past an as_of (and past now) forecasts are read. */
  horizon: number;
  /** One past vintage per step, on a grid from 00:00 UTC. */
  vintageStep: number;
}

/** How far one site and resource has synced (a row of sync_state). */
export interface SyncMark {
  syncedTo: number;
  lastAsOf: number | null;
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

function ceilTo(ms: number, step: number): number {
  return Math.ceil(ms / step) * step;
}

/** Start of the incremental window: the last synced point minus the lookback, or the start of history. */
function incrementalStart(now: number, mark: SyncMark | null, settings: WindowSettings): number {
  return mark ? mark.syncedTo - settings.lookback : now - settings.initialHistory;
}

/** Actuals: one window, [synced_to - lookback, now], or the backfill window. */
export function planActuals(now: number, mark: SyncMark | null, settings: WindowSettings, backfill?: Backfill): { window: Window; mark: SyncMark | null } {
  if (backfill) return { window: { start: backfill.from, end: backfill.to }, mark: null };
  return { window: { start: incrementalStart(now, mark, settings), end: now }, mark: { syncedTo: now, lastAsOf: null } };
}

/**
 * Forecasts and model outputs: one past vintage per step on the 00:00 UTC grid, from the
 * step after the last as_of read (or the start of history) up to now, each read over
 * [as_of, as_of + horizon]; then the current one over [synced_to - lookback, now + horizon].
 * A backfill reads one as_of per UTC day of its window (the day-ahead vintages) and no
 * current forecast, and leaves the sync state where it is.
 */
export function planVintages(now: number, mark: SyncMark | null, settings: WindowSettings, backfill?: Backfill): VintagePlan {
  if (backfill) {
    const asOfs = grid(ceilTo(backfill.from, DAY), Math.min(backfill.to, now), DAY);
    return { reads: asOfs.map((asOf) => ({ asOf, start: asOf, end: asOf + settings.horizon })), mark: null };
  }
  const first = mark?.lastAsOf != null
    ? mark.lastAsOf + settings.vintageStep
    : ceilTo(now - settings.initialHistory, settings.vintageStep);
  const asOfs = grid(first, now, settings.vintageStep);
  const past = asOfs.map((asOf) => ({ asOf, start: asOf, end: asOf + settings.horizon }));
  const current = { asOf: null, start: incrementalStart(now, mark, settings), end: now + settings.horizon };
  const lastAsOf = asOfs.at(-1) ?? mark?.lastAsOf ?? null;
  return { reads: [...past, current], mark: { syncedTo: now, lastAsOf } };
}

/**
 * The site forecast, from the service's list of issue times (Get Site Forecast Updates): every
 * issued vintage not read yet, each read as of its issue time over [issue, issue + horizon].
 * Incremental: only issue times after the last one read (or, on a first sync, from the start of
 * history), none after now; a rerun at the same clock reads nothing. A backfill reads the issue
 * times of its window and leaves the sync state where it is.
 */
export function planForecastUpdates(now: number, mark: SyncMark | null, settings: WindowSettings, updates: readonly number[],
  backfill?: Backfill): VintagePlan {
  const [from, to] = backfill
    ? [backfill.from, Math.min(backfill.to, now)]
    : [mark?.lastAsOf != null ? mark.lastAsOf + 1 : now - settings.initialHistory, now];
  const issues = [...new Set(updates)].filter((issue) => issue >= from && issue <= to).sort((a, b) => a - b);
  const reads = issues.map((asOf) => ({ asOf, start: asOf, end: asOf + settings.horizon }));
  if (backfill) return { reads, mark: null };
  return { reads, mark: { syncedTo: now, lastAsOf: issues.at(-1) ?? mark?.lastAsOf ?? null } };
}

/** Multiples of `step` from `first` (already on the grid) up to and including `last`. */
function grid(first: number, last: number, step: number): number[] {
  const points: number[] = [];
  for (let t = first; t <= last; t += step) points.push(t);
  return points;
}
