// The clock of a run. `EFSYNC_NOW` (an ISO 8601 instant) sets it, for tests and benchmarks only:
// the history bench moves efsync a day ahead before each nightly run, with the emulator's
// `--now`. The clock then starts at that instant when the process starts and runs at the wall
// clock's pace, so durations in the run ledger stay true. Read here and nowhere else; what is not a
// run's notion of "now" (the writer lock's staleness, the daemon's timers) keeps the wall clock.
import { parseInstant } from '../time.js';
import { UsageError } from './boundary.js';

export const CLOCK_VARIABLE = 'EFSYNC_NOW';

/** The run clock: the wall clock, or the one `EFSYNC_NOW` sets. */
export function runClock(env: NodeJS.ProcessEnv = process.env): () => number {
  const start = clockOverride(env);
  if (start === null) return Date.now;
  const offset = start - Date.now();
  return () => Date.now() + offset;
}

/** The instant `EFSYNC_NOW` holds, null when unset; a clear error naming it when it is not one. */
export function clockOverride(env: NodeJS.ProcessEnv = process.env): number | null {
  const text = env[CLOCK_VARIABLE];
  if (text === undefined || text === '') return null;
  try {
    return parseInstant(text);
  } catch {
    throw new UsageError(
      `${CLOCK_VARIABLE}: not a timestamp: ${JSON.stringify(text)} (use ISO 8601, e.g. 2026-03-01T02:00:00Z)`,
    );
  }
}
