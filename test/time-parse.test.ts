// parseInstant reads every timestamp form the service may send to the same epoch milliseconds.
import { describe, expect, it } from 'vitest';
import {
  formatExactInstant,
  formatInZone,
  formatInstant,
  formatMinute,
  isTimeZone,
  parseInstant,
} from '../src/time.js';

const NOON = Date.UTC(2026, 5, 15, 12, 0, 0);

describe('parseInstant', () => {
  it.each([
    '2026-06-15T12:00:00Z',
    '2026-06-15T12:00:00+0000',
    '2026-06-15T12:00:00+00:00',
    '2026-06-15T12:00:00+00',
    '2026-06-15T12:00:00-00:00',
    '2026-06-15T12:00Z',
    '2026-06-15 12:00',
    '2026-06-15T12:00:00',
    '2026-06-15T12:00:00.000Z',
    '2026-06-15T14:00:00+02:00',
    '2026-06-15T14:00:00+0200',
    '2026-06-15T06:30:00-05:30',
  ])('reads %s as 12:00 UTC', (text) => {
    expect(parseInstant(text)).toBe(NOON);
  });

  it('keeps fractional seconds to the microsecond', () => {
    expect(parseInstant('2026-06-15T12:00:00.5Z')).toBe(NOON + 500);
    expect(parseInstant('2026-06-15T12:00:00.123+00:00')).toBe(NOON + 123);
    expect(parseInstant('2026-06-15T12:00:00.123456789+0000')).toBe(NOON + 123.457);
    expect(parseInstant('2024-09-13T13:49:14.448761Z')).toBe(Date.UTC(2024, 8, 13, 13, 49, 14) + 448.761);
  });

  it('round-trips a microsecond issue time through formatExactInstant exactly (#29)', () => {
    for (const text of [
      '2024-09-13T13:49:14.448761Z',
      '2026-06-15T06:15:03.000001Z',
      '2026-06-15T06:15:03.999999Z',
      '2026-06-15T06:15:03.5Z',
      '2026-06-15T06:15:03Z',
    ]) {
      expect(formatExactInstant(parseInstant(text))).toBe(text);
    }
    expect(formatExactInstant(NOON + 999.9999999)).toBe('2026-06-15T12:00:01Z');
    expect(formatInZone(parseInstant('2026-06-15T12:00:00.25Z'), 'Europe/Stockholm', true)).toBe(
      '2026-06-15T14:00:00.25+02:00',
    );
  });

  it('reads a bare date as its UTC midnight', () => {
    expect(parseInstant('2026-06-15')).toBe(Date.UTC(2026, 5, 15));
  });

  it('crosses the day with an offset', () => {
    expect(parseInstant('2026-01-01T00:30:00+01:00')).toBe(Date.UTC(2025, 11, 31, 23, 30));
  });

  it('reads leap days in the canonical form, and only in leap years', () => {
    expect(parseInstant('2024-02-29T23:59:59Z')).toBe(Date.UTC(2024, 1, 29, 23, 59, 59));
    expect(parseInstant('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
    expect(() => parseInstant('2026-02-29T00:00:00Z')).toThrow(RangeError);
    expect(() => parseInstant('1900-02-29T00:00:00Z')).toThrow(RangeError);
  });

  it('reads every quarter hour of a year in the canonical form as Date does', () => {
    const start = Date.UTC(2026, 0, 1);
    for (let ms = start; ms < start + 366 * 86_400_000; ms += 900_000) {
      expect(parseInstant(`${new Date(ms).toISOString().slice(0, 19)}Z`)).toBe(ms);
    }
  });

  it('reads any second of the calendar, years 0100 to 9999, in the canonical form as Date does', () => {
    const first = Date.UTC(100, 0, 1);
    const last = Date.UTC(9999, 11, 31, 23, 59, 59);
    let seed = 11;
    for (let k = 0; k < 50_000; k++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const ms = first + Math.floor((seed / 2 ** 31) * ((last - first) / 1000)) * 1000;
      expect(parseInstant(`${new Date(ms).toISOString().slice(0, 19)}Z`)).toBe(ms);
    }
    expect(parseInstant('0050-03-01T00:00:00Z')).toBe(Date.parse('0050-03-01T00:00:00Z'));
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-06-00T00:00:00Z',
    '2026-06-15T24:00:00Z',
    '2026-06-15T12:60:00Z',
    '2026-06-15T12:00:60Z',
    '2026-06-1xT12:00:00Z',
    '2026/06/15T12:00:00Z',
    '15/06/2026',
    '',
    'now',
  ])('rejects %j', (text) => {
    expect(() => parseInstant(text)).toThrow(RangeError);
  });
});

describe('formatting instants for the wire', () => {
  it('sends seconds precision with Z, and reads it back', () => {
    expect(formatInstant(NOON + 999)).toBe('2026-06-15T12:00:00Z');
    expect(parseInstant(formatInstant(NOON))).toBe(NOON);
  });

  it('sends capacity points at minute precision', () => {
    expect(formatMinute(NOON + 59_000)).toBe('2026-06-15T12:00Z');
  });

  it('writes a zone offset that parses back to the same instant, across both DST changes', () => {
    for (const ms of [
      Date.UTC(2026, 2, 29, 0, 30),
      Date.UTC(2026, 2, 29, 1, 30),
      Date.UTC(2026, 9, 25, 0, 30),
      Date.UTC(2026, 9, 25, 1, 30),
    ]) {
      const text = formatInZone(ms, 'Europe/Stockholm');
      expect(text).toMatch(/\+0[12]:00$/);
      expect(parseInstant(text)).toBe(ms);
    }
    expect(formatInZone(Date.UTC(2026, 2, 29, 0, 30), 'Europe/Stockholm')).toBe('2026-03-29T01:30:00+01:00');
    expect(formatInZone(Date.UTC(2026, 2, 29, 1, 30), 'Europe/Stockholm')).toBe('2026-03-29T03:30:00+02:00');
  });
});

describe('isTimeZone', () => {
  it('accepts the zones the runtime knows, again from its memory, and never a name it does not', () => {
    for (let i = 0; i < 2; i++) {
      expect(isTimeZone('UTC')).toBe(true);
      expect(isTimeZone('Europe/Stockholm')).toBe(true);
      expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
      expect(isTimeZone('')).toBe(false);
    }
  });
});
