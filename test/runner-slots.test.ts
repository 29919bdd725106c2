// Schedule slots in a time zone: the next slot, the slots in a window, the newest missed ones,
// for schedules from every minute to once a year; and which expressions the config accepts.
import { describe, expect, it } from 'vitest';
import { cronProblem, lastSlots, nextSlot, nextSlots } from '../src/runner/slots.js';
import { formatInstant, formatInZone } from '../src/time.js';

const T = Date.UTC(2026, 10, 21, 5, 44, 5); // 2026-11-21T05:44:05Z, a Saturday
const iso = (slots: number[]) => slots.map(formatInstant);

describe('nextSlot', () => {
  it.each([
    ['* * * * *', 'UTC', '2026-11-21T05:45:00Z'],
    ['*/30 * * * *', 'UTC', '2026-11-21T06:00:00Z'],
    ['0 2 * * *', 'UTC', '2026-11-22T02:00:00Z'],
    ['0 2 * * *', 'Europe/Stockholm', '2026-11-22T01:00:00Z'],
    ['0 2 * * 1', 'America/New_York', '2026-11-23T07:00:00Z'],
    ['0 0 1 * *', 'UTC', '2026-12-01T00:00:00Z'],
    ['0 0 1 1 *', 'UTC', '2027-01-01T00:00:00Z'],
    ['0 0 29 2 *', 'UTC', '2028-02-29T00:00:00Z'],
  ])('%s in %s → %s', (expr, tz, expected) => {
    expect(formatInstant(nextSlot(expr, tz, T))).toBe(expected);
  });

  it('is strictly after the given instant', () => {
    expect(formatInstant(nextSlot('0 2 * * *', 'UTC', Date.UTC(2026, 10, 21, 2)))).toBe('2026-11-22T02:00:00Z');
  });
});

describe('nextSlots and lastSlots', () => {
  it('the slots in (from, to], in order', () => {
    expect(iso(nextSlots('*/20 * * * *', 'UTC', Date.UTC(2026, 10, 21, 5), Date.UTC(2026, 10, 21, 6)))).toEqual([
      '2026-11-21T05:20:00Z',
      '2026-11-21T05:40:00Z',
      '2026-11-21T06:00:00Z',
    ]);
  });

  it('the newest slots of a long window, oldest first, for frequent and rare schedules', () => {
    const year = 366 * 86_400_000;
    expect(iso(lastSlots('* * * * *', 'UTC', T - year, T, 3))).toEqual([
      '2026-11-21T05:42:00Z',
      '2026-11-21T05:43:00Z',
      '2026-11-21T05:44:00Z',
    ]);
    expect(iso(lastSlots('0 0 1 1 *', 'UTC', T - 3 * year, T, 2))).toEqual([
      '2025-01-01T00:00:00Z',
      '2026-01-01T00:00:00Z',
    ]);
    expect(iso(lastSlots('0 2 * * *', 'UTC', T - 2 * 86_400_000, T, 5))).toEqual([
      '2026-11-20T02:00:00Z',
      '2026-11-21T02:00:00Z',
    ]);
  });

  it('in a zone, wall-clock slots', () => {
    expect(
      nextSlots('0 2 * * *', 'Asia/Kolkata', Date.UTC(2026, 10, 20), Date.UTC(2026, 10, 22)).map((ms) =>
        formatInZone(ms, 'Asia/Kolkata'),
      ),
    ).toEqual(['2026-11-21T02:00:00+05:30', '2026-11-22T02:00:00+05:30']);
  });
});

describe('cronProblem', () => {
  it('accepts five-field expressions and names what is wrong with others', () => {
    expect(cronProblem('0 2 * * *')).toBeNull();
    expect(cronProblem('*/30 * * * mon-fri')).toBeNull();
    expect(cronProblem('0 2 * *')).toBe(
      '"0 2 * *" has 4 fields; use five (minute hour day-of-month month day-of-week)',
    );
    expect(cronProblem('0 0 2 * * *')).toContain('has 6 fields');
    expect(cronProblem('0 25 * * *')).toContain('"0 25 * * *" is not a cron expression');
  });
});
