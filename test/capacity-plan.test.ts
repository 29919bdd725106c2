// Reading the service's capacity_kw_array back as points, in both shapes it comes in: with
// dateStart (the emulator) and with dateEnd only (the real service, per interface-decisions.md).
import { describe, expect, it } from 'vitest';
import { diffPoints, servicePoints, splitAt } from '../src/capacity/plan.js';
import { parseInstant } from '../src/time.js';

const at = (text: string) => parseInstant(text);

describe('the service timeline as points', () => {
  it('starts a segment without dateStart where the one before it ends; the open base is no point', () => {
    const segments = [
      { value: 1000, dateEnd: at('2026-12-01T00:00Z') },
      { value: 800, dateEnd: at('2026-12-02T00:00Z') },
      { value: 1000, dateEnd: null },
    ];
    expect(servicePoints(segments)).toEqual([
      { time: at('2026-12-01T00:00Z'), valueKw: 800 },
      { time: at('2026-12-02T00:00Z'), valueKw: 1000 },
    ]);
  });

  it('compares from the file\'s first point on, keeping earlier points and ignoring repeats after it', () => {
    const service = servicePoints([
      { value: 1000, dateStart: at('2026-11-01T00:00Z'), dateEnd: at('2026-12-01T00:00Z') },
      { value: 1000, dateStart: at('2026-12-01T00:00Z'), dateEnd: at('2026-12-03T00:00Z') },
      { value: 1000, dateStart: at('2026-12-03T00:00Z'), dateEnd: at('2026-12-05T00:00Z') },
      { value: 500, dateStart: at('2026-12-05T00:00Z'), dateEnd: null },
    ]);
    const { compared, kept } = splitAt(service, at('2026-12-01T00:00Z'));
    expect(kept).toEqual([{ time: at('2026-11-01T00:00Z'), valueKw: 1000 }]);
    const file = [{ time: at('2026-12-01T00:00Z'), valueKw: 1000 }, { time: at('2026-12-04T00:00Z'), valueKw: 500 }];
    expect(diffPoints(compared, file)).toEqual([
      { time: at('2026-12-04T00:00Z'), change: 'added', beforeKw: null, afterKw: 500 },
      { time: at('2026-12-05T00:00Z'), change: 'removed', beforeKw: 500, afterKw: null },
    ]);
  });
});
