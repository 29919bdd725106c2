/**
 * Schedule slots: the instants a cron expression names in a time zone, with one rule for the
 * days the clocks change, so that a nightly run is neither skipped nor doubled:
 *
 * - a wall-clock time that does not exist (spring forward, e.g. 02:30 in Europe/Stockholm on
 *   2026-03-29) runs at the first valid instant after the gap (03:00 local); several such times
 *   of one gap run once;
 * - a wall-clock time that exists twice (fall back, e.g. 02:30 on 2026-10-25) runs once, at its
 *   first occurrence (02:30 CEST).
 *
 * cron-parser walks the expression over wall-clock time (as if the zone were UTC) and each wall
 * time is then placed in the zone by that rule. Instants are epoch ms.
 */
import { CronExpressionParser } from 'cron-parser';
import { DAY, HOUR, MINUTE, zoneOffsetMinutes } from '../time.js';

/** Wall-clock shifts are at most 2 hours (a few historical zones); 3 h covers every real zone. */
const SHIFT_MARGIN = 3 * HOUR;

/** Null when `expr` is a five-field cron expression cron-parser accepts, else the problem. */
export function cronProblem(expr: string): string | null {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 && !expr.trim().startsWith('@')) {
    return `"${expr}" has ${fields.length} fields; use five (minute hour day-of-month month day-of-week)`;
  }
  try {
    CronExpressionParser.parse(expr, { tz: 'UTC' });
    return null;
  } catch (error) {
    return `"${expr}" is not a cron expression: ${(error as Error).message}`;
  }
}

/** The slots of `expr` in `tz` with `from < slot <= to`, in order. */
export function nextSlots(expr: string, tz: string, from: number, to: number): number[] {
  if (to <= from) return [];
  const walls = wallTimes(expr, toWall(from, tz) - SHIFT_MARGIN, toWall(to, tz) + SHIFT_MARGIN);
  return placeAll(walls, tz).filter((slot) => slot > from && slot <= to);
}

/** Windows to look in, growing, so a minutely and a yearly schedule are both found quickly. */
const WINDOWS = [HOUR, DAY, 32 * DAY, 367 * DAY, 5 * 367 * DAY];

/** The first slot after `after`. */
export function nextSlot(expr: string, tz: string, after: number): number {
  for (const window of WINDOWS) {
    const slot = nextSlots(expr, tz, after, after + window)[0];
    if (slot !== undefined) return slot;
  }
  throw new Error(`no slot of "${expr}" in the five years after ${new Date(after).toISOString()}`);
}

/** The newest `count` slots with `from < slot <= to`, oldest first, without walking the whole range. */
export function lastSlots(expr: string, tz: string, from: number, to: number, count: number): number[] {
  if (to <= from || count <= 0) return [];
  for (const window of WINDOWS) {
    const start = Math.max(from, to - window);
    const slots = nextSlots(expr, tz, start, to);
    if (slots.length >= count || start === from) return slots.slice(-count);
  }
  return nextSlots(expr, tz, from, to).slice(-count);
}

/** The wall-clock reading of instant `ms` in `tz`, as if that reading were UTC. */
function toWall(ms: number, tz: string): number {
  return ms + zoneOffsetMinutes(ms, tz) * MINUTE;
}

/** Wall times of `expr` after `start`, up to `end`. */
function wallTimes(expr: string, start: number, end: number): number[] {
  const interval = CronExpressionParser.parse(expr, { tz: 'UTC', currentDate: new Date(start) });
  const walls: number[] = [];
  for (let wall = interval.next().getTime(); wall <= end; wall = interval.next().getTime()) walls.push(wall);
  return walls;
}

function placeAll(walls: number[], tz: string): number[] {
  const slots: number[] = [];
  for (const wall of walls) {
    const slot = placeWall(wall, tz);
    if (slots.length === 0 || slot > slots[slots.length - 1]) slots.push(slot);
  }
  return slots;
}

/**
 * The instant of wall-clock time `wall` in `tz`: its first occurrence when it exists (twice in
 * autumn), the end of the gap when it does not (spring).
 */
function placeWall(wall: number, tz: string): number {
  const offsets = new Set([-1, 0, 1].map((day) => zoneOffsetMinutes(wall + day * DAY, tz)));
  const candidates = [...offsets]
    .map((offset) => wall - offset * MINUTE)
    .filter((instant) => toWall(instant, tz) === wall)
    .sort((a, b) => a - b);
  if (candidates.length > 0) return candidates[0];
  return gapEnd(wall, tz, offsets);
}

/** The first instant after the gap that swallowed `wall`: the moment the clocks moved forward. */
function gapEnd(wall: number, tz: string, offsets: Set<number>): number {
  // Read with the larger offset, `wall` lies before the change; with the smaller one, after it.
  let before = wall - Math.max(...offsets) * MINUTE;
  let after = wall - Math.min(...offsets) * MINUTE;
  const offsetAfter = zoneOffsetMinutes(after, tz);
  while (after - before > MINUTE) {
    const middle = before + Math.floor((after - before) / 2 / MINUTE) * MINUTE;
    if (zoneOffsetMinutes(middle, tz) === offsetAfter) after = middle;
    else before = middle;
  }
  return after;
}
