// Ages as the operator reads them in a check's line, a probe's answer or an alert.
import { DAY, HOUR, MINUTE } from '../time.js';

/** An age for a person: `45s`, `17m`, `5.2h`, `3.0d`. */
export function formatAge(ms: number): string {
  if (ms < 2 * MINUTE) return `${Math.round(ms / 1000)}s`;
  if (ms < 2 * HOUR) return `${Math.round(ms / MINUTE)}m`;
  if (ms < 2 * DAY) return `${(ms / HOUR).toFixed(1)}h`;
  return `${(ms / DAY).toFixed(1)}d`;
}
