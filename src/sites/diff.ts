// Field by field, what turns one value into another: the plan's per-field lines. Objects are
// compared key by key, lists of objects item by item, anything else (numbers, text, lists of
// numbers) whole. Equality is exact: a file's number and the service's are the same double when
// they were written the same.
import { isDeepStrictEqual } from 'node:util';

/** One field that differs: `before` absent when the field is added, `after` absent when it goes. */
export interface FieldChange {
  /** The dotted path of the field as a file writes it: `settings.model_resolution`, `assets[0].tilt`. */
  field: string;
  before?: unknown;
  after?: unknown;
}

export function diffValue(field: string, before: unknown, after: unknown): FieldChange[] {
  if (isDeepStrictEqual(before, after)) return [];
  if (before === undefined) return [{ field, after }];
  if (after === undefined) return [{ field, before }];
  if (isRecord(before) && isRecord(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return keys.flatMap((key) => diffValue(`${field}.${key}`, before[key], after[key]));
  }
  if (Array.isArray(before) && Array.isArray(after) && [...before, ...after].every(isRecord)) {
    const length = Math.max(before.length, after.length);
    return Array.from({ length }, (_, i) => diffValue(`${field}[${i}]`, before[i], after[i])).flat();
  }
  return [{ field, before, after }];
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON with every object's keys sorted: the same value always gives the same text (for hashes). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    isRecord(item)
      ? Object.fromEntries(
          Object.keys(item)
            .sort()
            .map((key) => [key, item[key]]),
        )
      : item,
  );
}
