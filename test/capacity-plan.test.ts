// The diff a plan is made of: point by point, what turns one timeline into another. The plan
// compares the service's whole timeline with the file's (vs service), the last push with the file
// (vs last push) and the last push with the service (drift); capacity-apply.test.ts runs them all
// against the emulator.
import { describe, expect, it } from 'vitest';
import { diffPoints, valueAt } from '../src/capacity/plan.js';
import { parseInstant } from '../src/time.js';

const at = (text: string) => parseInstant(text);
const point = (time: string, valueKw: number) => ({ time: at(time), valueKw });

describe('diffPoints', () => {
  it('names every point added, changed and removed, in time order, and nothing else', () => {
    const service = [
      point('2026-11-01T00:00Z', 1000),
      point('2026-12-01T00:00Z', 800),
      point('2026-12-05T00:00Z', 500),
    ];
    const file = [point('2026-11-01T00:00Z', 1000), point('2026-12-01T00:00Z', 900), point('2026-12-04T00:00Z', 500)];
    expect(diffPoints(service, file)).toEqual([
      { time: at('2026-12-01T00:00Z'), change: 'changed', beforeKw: 800, afterKw: 900 },
      { time: at('2026-12-04T00:00Z'), change: 'added', beforeKw: null, afterKw: 500 },
      { time: at('2026-12-05T00:00Z'), change: 'removed', beforeKw: 500, afterKw: null },
    ]);
  });

  it('sees a point that repeats the value before it as a point: equal timelines are equal point for point', () => {
    const service = [point('2026-11-01T00:00Z', 1000), point('2026-12-01T00:00Z', 1000)];
    expect(diffPoints(service, [point('2026-11-01T00:00Z', 1000)])).toEqual([
      { time: at('2026-12-01T00:00Z'), change: 'removed', beforeKw: 1000, afterKw: null },
    ]);
    expect(diffPoints(service, service)).toEqual([]);
  });
});

describe('valueAt', () => {
  it('holds each point forward; nothing before the first', () => {
    const timeline = [point('2026-11-01T00:00Z', 1000), point('2026-12-01T00:00Z', 0)];
    expect(valueAt(timeline, at('2026-10-31T00:00Z'))).toBeNull();
    expect(valueAt(timeline, at('2026-11-15T00:00Z'))).toBe(1000);
    expect(valueAt(timeline, at('2026-12-01T00:00Z'))).toBe(0);
  });
});
