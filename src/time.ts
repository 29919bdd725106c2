// Instants are epoch milliseconds in UTC everywhere inside efsync; text only at the edges.
// An instant may carry a fraction of a millisecond: the service lists issue times to the
// microsecond (`2024-09-13T13:49:14.448761Z`) and efsync asks for a vintage with the exact time it
// was listed with. A double holds epoch ms to well under a microsecond (2^-12 ms near 2026), so
// microseconds round-trip through parseInstant and formatExactInstant, and into DuckDB (instant()).

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses the timestamps the service sends: `Z`, `+0000`, `+00:00` and `+00` offsets, fractional
 * seconds, `YYYY-MM-DD HH:MM` and a bare date. Text without an offset is taken as UTC.
 */
export function parseInstant(text: string): number {
  const canonical = parseCanonical(text);
  if (canonical !== undefined) return canonical;
  const m = INSTANT.exec(text);
  if (!m) throw new RangeError(`not a timestamp: ${JSON.stringify(text)}`);
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac, offset] = m;
  const year = Number(y),
    month = Number(mo),
    day = Number(d);
  const hour = Number(h),
    minute = Number(mi),
    second = Number(s);
  const local = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(local);
  if (
    check.getUTCFullYear() !== year ||
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    throw new RangeError(`not a valid date or time: ${JSON.stringify(text)}`);
  }
  return local + fractionMs(frac) - offsetMinutes(offset) * 60_000;
}

/** The milliseconds of a fraction of a second (`448761`: 448.761), to the microsecond. */
function fractionMs(digits: string | undefined): number {
  if (!digits) return 0;
  return Math.round(Number(digits.slice(0, 6).padEnd(6, '0')) + Number(`0.${digits.slice(6) || '0'}`)) / 1000;
}

/**
 * The fast path for `YYYY-MM-DDTHH:MM:SSZ`, the form nearly every timestamp arrives in (a sync
 * parses millions): digits read by char code, about 6x faster than the regex. Anything else,
 * including an invalid date in this form, goes to the general parser (which names the problem).
 */
function parseCanonical(text: string): number | undefined {
  if (
    text.length !== 20 ||
    text.charCodeAt(19) !== 90 /* Z */ ||
    text.charCodeAt(10) !== 84 /* T */ ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58
  ) {
    return undefined;
  }
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2);
  const month = twoDigits(text, 5),
    day = twoDigits(text, 8);
  const hour = twoDigits(text, 11),
    minute = twoDigits(text, 14),
    second = twoDigits(text, 17);
  const valid =
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59; // NaN (a non-digit) fails every comparison
  return valid ? utcMs(year, month, day, hour, minute, second) : undefined;
}

/**
 * Epoch ms of a valid UTC date and time in the proleptic Gregorian calendar, by arithmetic (days
 * from the civil date, after H. Hinnant): Date.UTC's result for a year of 100 on, without a call
 * the JIT cannot inline, nor its reading of years 0-99 as 1900-1999.
 */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1; // from March 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  const days = era * 146_097 + dayOfEra - 719_468;
  return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000;
}

function twoDigits(text: string, at: number): number {
  const hi = text.charCodeAt(at) - 48,
    lo = text.charCodeAt(at + 1) - 48;
  return hi >= 0 && hi <= 9 && lo >= 0 && lo <= 9 ? hi * 10 + lo : NaN;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function offsetMinutes(offset: string | undefined): number {
  if (!offset || offset === 'Z') return 0;
  const sign = offset[0] === '-' ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  return sign * (hours * 60 + minutes);
}

/** `YYYY-MM-DDTHH:MM:SSZ`, the form the service sends, to the whole second (a fraction is dropped). */
export function formatInstant(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/**
 * `YYYY-MM-DDTHH:MM:SSZ` with as many fraction digits as the instant needs, to the microsecond
 * (`...:03.448761Z`, `...:03.5Z`): an issue time the service listed goes back exactly as listed.
 */
export function formatExactInstant(ms: number): string {
  const [second, fraction] = splitSecond(ms);
  return `${new Date(second).toISOString().slice(0, 19)}${fraction}Z`;
}

/** `ms` rounded to the microsecond, as its whole second (epoch ms) and the fraction's text (`.448761`, '' for none). */
function splitSecond(ms: number): [number, string] {
  const micros = Math.round(ms * 1000);
  const second = Math.floor(micros / 1_000_000) * 1000;
  const rest = micros - second * 1000;
  return [second, rest === 0 ? '' : `.${String(rest).padStart(6, '0').replace(/0+$/, '')}`];
}

/** Two instants equal to the microsecond (the finest precision the service gives). */
export function sameInstant(a: number, b: number): boolean {
  return Math.round(a * 1000) === Math.round(b * 1000);
}

/** `YYYY-MM-DDTHH:MMZ`, the minute precision that capacity uploads require. */
export function formatMinute(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16)}Z`;
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

/** The UTC offset of `timeZone` at instant `ms`, in minutes (Europe/Stockholm in summer: 120). */
export function zoneOffsetMinutes(ms: number, timeZone: string): number {
  let fmt = offsetFormatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    offsetFormatters.set(timeZone, fmt);
  }
  const parts: Record<string, number> = {};
  for (const p of fmt.formatToParts(ms)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000);
}

/**
 * `YYYY-MM-DDTHH:MM:SS+HH:MM` in `timeZone`, as the service answers when asked for a `tz`; `exact`:
 * with the fraction of a second to the microsecond (formatExactInstant), else to the whole second.
 */
export function formatInZone(ms: number, timeZone: string, exact = false): string {
  if (timeZone === 'UTC') return exact ? formatExactInstant(ms) : formatInstant(ms);
  const offset = zoneOffsetMinutes(ms, timeZone);
  const [second, fraction] = exact ? splitSecond(ms) : [Math.floor(ms / 1000) * 1000, ''];
  const local = new Date(second + offset * 60_000).toISOString().slice(0, 19) + fraction;
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${local}${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/** Zone names isTimeZone has accepted: a listing of thousands of sites names a few zones, and each check builds a formatter (~0.1 ms). */
const knownZones = new Set<string>();

/** True when `timeZone` is a zone name the runtime knows (`UTC`, `Europe/Stockholm`, ...). */
export function isTimeZone(timeZone: string): boolean {
  if (knownZones.has(timeZone)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    return false;
  }
  knownZones.add(timeZone);
  return true;
}

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * Parses a duration written as `90s`, `15m`, `6h`, `7d`, `2w`, or ISO 8601 `PT6H`, `P7D`, `P1DT12H`.
 * Durations are explicit so that a config file says what it means.
 */
export function parseDuration(text: string): number {
  const short = /^(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d|w)$/.exec(text.trim());
  if (short) return Number(short[1]) * DURATION_UNITS[short[2]];
  const iso = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text.trim());
  if (iso && text.trim() !== 'P' && !text.trim().endsWith('T')) {
    const [, w = '0', d = '0', h = '0', m = '0', s = '0'] = iso;
    return ((Number(w) * 7 + Number(d)) * 24 * 3600 + Number(h) * 3600 + Number(m) * 60 + Number(s)) * 1000;
  }
  throw new RangeError(`not a duration: ${JSON.stringify(text)} (use e.g. 15m, 6h, 7d or PT6H)`);
}

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** The start of the UTC day holding `ms`. */
export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY) * DAY;
}
