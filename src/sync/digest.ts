// What an actuals read found, kept with its sync state so that the next run can tell whether its
// own read found anything new: the service has no "changed since" filter (docs/sync.md), so every
// run re-reads its lookback, and without this merged it into the warehouse to find nothing.
import { createHash } from 'node:crypto';
import type { ActualColumns } from '../warehouse/rows.js';

/**
 * A digest of `from` and of the rows of `columns` (valid time and value, in the order read) whose
 * valid time is at or after it: two reads that start at the same instant and find the same rows
 * have the same digest, and any other value, row or start gives another. SHA-256 of the numbers
 * as float64; a gap (null) is NaN, which no JSON body carries.
 */
export function actualsDigest(from: number, columns: ActualColumns): string {
  const { valid_time: times, value: values } = columns;
  const packed = new Float64Array(1 + 2 * times.length);
  packed[0] = from;
  let end = 1;
  for (let row = 0; row < times.length; row++) {
    if (times[row] < from) continue;
    packed[end++] = times[row];
    packed[end++] = values[row] ?? Number.NaN;
  }
  return createHash('sha256').update(packed.subarray(0, end)).digest('base64url');
}
