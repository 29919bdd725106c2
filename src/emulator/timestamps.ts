// Response timestamps, memoised: every site answers for the same few thousand valid times,
// so formatting each once (per time zone) takes the Date work off the hot path.
import { formatInZone } from '../time.js';

const LIMIT = 200_000;
const caches = new Map<string, Map<number, string>>();

/** `formatInZone(ms, timeZone)` to the microsecond (issue times may carry a fraction), from a bounded memo. */
export function timestamp(ms: number, timeZone: string): string {
  let cache = caches.get(timeZone);
  if (!cache) {
    cache = new Map();
    caches.set(timeZone, cache);
  }
  let text = cache.get(ms);
  if (text === undefined) {
    if (cache.size >= LIMIT) cache.clear();
    text = formatInZone(ms, timeZone, true);
    cache.set(ms, text);
  }
  return text;
}
