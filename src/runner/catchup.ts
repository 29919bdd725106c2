// Catch-up after downtime: which slots of a job the daemon missed while it was down, computed
// from the ledger (the newest run that covered the job) and the schedule in its time zone.
import { formatInZone } from '../time.js';
import { lastSlots, nextSlot } from './slots.js';

export type CatchUpMode = 'skip' | 'once' | 'each';

export interface CatchUpPlan {
  /** Slots to run now, oldest first (trigger catch-up). */
  run: number[];
  /** With `skip`: the newest missed slot, recorded as skipped so that the ledger shows the gap. */
  skip: { slot: number; reason: string } | null;
  /** For the log: the missed slots that are not run. */
  note: string | null;
}

const NOTHING: CatchUpPlan = { run: [], skip: null, note: null };

/**
 * `coveredUntil`: the start (or slot) of the job's newest run that was not interrupted or crashed; undefined
 * when the ledger has none, e.g. the first start on a new warehouse, which makes no catch-up.
 * `skip` runs no missed slot; `once` runs the newest missed slot once; `each` runs every missed
 * slot, the newest `limit` of them.
 */
export function planCatchUp(
  schedule: { expr: string; tz: string },
  coveredUntil: number | undefined,
  now: number,
  mode: CatchUpMode,
  limit: number,
): CatchUpPlan {
  if (coveredUntil === undefined) return NOTHING;
  const wanted = mode === 'each' ? limit : 1;
  const missed = lastSlots(schedule.expr, schedule.tz, coveredUntil, now, wanted);
  if (missed.length === 0) return NOTHING;
  const first = nextSlot(schedule.expr, schedule.tz, coveredUntil);
  const latest = missed[missed.length - 1];
  const span = (from: number, to: number) =>
    from === to
      ? formatInZone(from, schedule.tz)
      : `${formatInZone(from, schedule.tz)} to ${formatInZone(to, schedule.tz)}`;
  if (mode === 'skip') {
    const reason = `missed while the daemon was down (${span(first, latest)}); catch_up: skip`;
    return { run: [], skip: { slot: latest, reason }, note: reason };
  }
  const older = first < missed[0] ? `missed slots not caught up: ${span(first, nextBefore(missed[0]))}` : null;
  return { run: missed, skip: null, note: older };

  function nextBefore(slot: number): number {
    return lastSlots(schedule.expr, schedule.tz, first - 1, slot - 1, 1)[0] ?? first;
  }
}
