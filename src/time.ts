// Instants are epoch milliseconds in UTC everywhere inside efsync; text only at the edges.

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * Parses the timestamps the service sends: `Z`, `+0000`, `+00:00` and `+00` offsets, fractional
 * seconds, `YYYY-MM-DD HH:MM` and a bare date. Text without an offset is taken as UTC.
 */
export function parseInstant(text: string): number {
  const m = INSTANT.exec(text);
  if (!m) throw new RangeError(`not a timestamp: ${JSON.stringify(text)}`);
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac, offset] = m;
  const year = Number(y), month = Number(mo), day = Number(d);
  const hour = Number(h), minute = Number(mi), second = Number(s);
  const ms = frac ? Math.round(Number(`0.${frac}`) * 1000) : 0;
  const local = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const check = new Date(local);
  if (
    check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day ||
    hour > 23 || minute > 59 || second > 59
  ) {
    throw new RangeError(`not a valid date or time: ${JSON.stringify(text)}`);
  }
  return local - offsetMinutes(offset) * 60_000;
}

function offsetMinutes(offset: string | undefined): number {
  if (!offset || offset === 'Z') return 0;
  const sign = offset[0] === '-' ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  return sign * (hours * 60 + minutes);
}

/** `YYYY-MM-DDTHH:MM:SSZ`, the form the service sends and efsync always sends back. */
export function formatInstant(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
}

/** `YYYY-MM-DDTHH:MMZ`, the minute precision that capacity uploads require. */
export function formatMinute(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16) + 'Z';
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

/** The UTC offset of `timeZone` at instant `ms`, in minutes (Europe/Stockholm in summer: 120). */
export function zoneOffsetMinutes(ms: number, timeZone: string): number {
  let fmt = offsetFormatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    offsetFormatters.set(timeZone, fmt);
  }
  const parts: Record<string, number> = {};
  for (const p of fmt.formatToParts(ms)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000);
}

/** `YYYY-MM-DDTHH:MM:SS+HH:MM` in `timeZone`, as the service answers when asked for a `tz`. */
export function formatInZone(ms: number, timeZone: string): string {
  if (timeZone === 'UTC') return formatInstant(ms);
  const offset = zoneOffsetMinutes(ms, timeZone);
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 19);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${local}${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/** True when `timeZone` is a zone name the runtime knows (`UTC`, `Europe/Stockholm`, ...). */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

const DURATION_UNITS: Record<string, number> = {
  ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000,
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

/** `ms` rounded down to a multiple of `step` (from the epoch). */
export function floorTo(ms: number, step: number): number {
  return Math.floor(ms / step) * step;
}
