// Grouping of scored pairs: total, lead-time buckets, hour, weekday, month, date, site, model.
// Each group is a SQL expression over the pairs relation (its columns: ../input/relation.ts) giving
// a text key and a number to sort the keys by. Calendar groups read `group_time`, which is the
// valid time moved inside the interval it labels, so an interval-ending value falls into the
// interval it closes (14:00 ending -> hour 13), in the report's time zone.
import type { IntervalLabel } from '../../warehouse/rows.js';
import { quoteLiteral } from '../../warehouse/sql.js';
import { HOUR } from '../../time.js';

export const GROUPS = ['total', 'lead', 'hour', 'weekday', 'month', 'season', 'year', 'date', 'site', 'model'] as const;
export type Group = (typeof GROUPS)[number];

export const INTERVAL_LABELS: readonly IntervalLabel[] = ['beginning', 'ending', 'instant'];

export interface GroupOptions {
  /** IANA zone of hour, weekday, month and date groups. */
  tz: string;
  /** Upper bounds of the lead-time buckets in ms, ascending (e.g. 6h, 12h, 24h). */
  leadBuckets: number[];
}

export interface GroupSql {
  group: Group;
  key: string;
  /** The key's sort number; a constant where keyFromOrder is absent (total, site, model). */
  order: string;
  /**
   * The key from the sort number, where one gives the other: scoring groups by the number and
   * names the few result rows, because building the key text for every row costs more than
   * all of a group's metrics.
   */
  keyFromOrder?: (order: string) => string;
}

/** Parses `total,lead,hour` (the --by option): every name a known group; order kept, duplicates removed. */
export function parseGroups(text: string): Group[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new Error(`name at least one group (${GROUPS.join(', ')})`);
  for (const name of names) {
    if (!(GROUPS as readonly string[]).includes(name)) {
      throw new Error(`unknown group "${name}" (use ${GROUPS.join(', ')})`);
    }
  }
  return [...new Set(names as Group[])];
}

/**
 * The instant used for calendar grouping and capacity look-up: an interval-ending value at t
 * describes (t - length, t], so one microsecond before t lies inside it, as the Solar Forecast
 * Arbiter does by shifting ending labels back by a nanosecond before grouping.
 */
export function groupTimeSql(validTime: string, label: IntervalLabel): string {
  // from the epoch, not `- INTERVAL 1 MICROSECOND`, which DuckDB does by calendar: 2.3x the CPU
  return label === 'ending' ? `make_timestamptz(epoch_us(${validTime}) - 1)` : validTime;
}

/** `0-6h`, `6-12h`, ..., `72h+`; leads before the issue time (hindcasts) are `<0h`. */
export function leadBucketLabels(bounds: number[]): string[] {
  const hours = bounds.map((b) => formatHours(b));
  const labels = ['<0h'];
  let lower = '0';
  for (const h of hours) {
    labels.push(`${lower}-${h}h`);
    lower = h;
  }
  labels.push(`${lower}h+`);
  return labels;
}

function formatHours(ms: number): string {
  return String(Number((ms / HOUR).toFixed(3)));
}

function leadSql(bounds: number[]): GroupSql {
  const labels = leadBucketLabels(bounds);
  const leadUs = '(epoch_us(valid_time) - epoch_us(issue_time))';
  const whens = bounds.map((b, i) => `WHEN ${leadUs} < ${b * 1000} THEN ${i + 1}`).join(' ');
  const index = `CASE WHEN issue_time IS NULL THEN NULL WHEN ${leadUs} < 0 THEN 0 ${whens} ELSE ${bounds.length + 1} END`;
  const keyFromOrder = (order: string) => `(${listLiteral(labels)})[(${order}) + 1]`;
  return { group: 'lead', key: keyFromOrder(index), order: index, keyFromOrder };
}

/** strftime's %a and %b, indexed by isodow and month (1-based, as SQL lists are). */
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Meteorological seasons of the northern hemisphere's names, by (month % 12) // 3 + 1. */
const SEASONS = ['DJF', 'MAM', 'JJA', 'SON'];

const listLiteral = (values: string[]) => `[${values.map(quoteLiteral).join(', ')}]`;

/**
 * Wall-clock time in `tz` as a TIMESTAMP. In UTC that is the epoch itself, which DuckDB's core
 * functions read several times faster than a time-zone conversion through ICU.
 */
function localTimeSql(instant: string, tz: string): string {
  return tz === 'UTC' ? `make_timestamp(epoch_us(${instant}))` : `(${instant} AT TIME ZONE ${quoteLiteral(tz)})`;
}

/** The key and sort expressions of one group; rows whose key is NULL do not join that group. */
export function groupSql(group: Group, options: GroupOptions): GroupSql {
  const local = localTimeSql('group_time', options.tz);
  switch (group) {
    case 'total':
      return { group, key: `'all'`, order: '0' };
    case 'lead':
      return leadSql(options.leadBuckets);
    case 'hour':
      return {
        group,
        key: `lpad(CAST(hour(${local}) AS VARCHAR), 2, '0')`,
        order: `hour(${local})`,
        keyFromOrder: (order) => `lpad(CAST(${order} AS VARCHAR), 2, '0')`,
      };
    case 'weekday':
      return {
        group,
        key: `strftime(${local}, '%a')`,
        order: `isodow(${local})`,
        keyFromOrder: (order) => `(${listLiteral(WEEKDAYS)})[${order}]`,
      };
    case 'month':
      return {
        group,
        key: `strftime(${local}, '%b')`,
        order: `month(${local})`,
        keyFromOrder: (order) => `(${listLiteral(MONTHS)})[${order}]`,
      };
    case 'season':
      // meteorological seasons, as SFA groups them: December's season is that of the next January
      return {
        group,
        key: `(${listLiteral(SEASONS)})[month(${local}) % 12 // 3 + 1]`,
        order: `month(${local}) % 12 // 3 + 1`,
        keyFromOrder: (order) => `(${listLiteral(SEASONS)})[${order}]`,
      };
    case 'year':
      return {
        group,
        key: `CAST(year(${local}) AS VARCHAR)`,
        order: `year(${local})`,
        keyFromOrder: (order) => `CAST(${order} AS VARCHAR)`,
      };
    case 'date':
      return {
        group,
        key: `strftime(${local}, '%Y-%m-%d')`,
        order: `epoch(CAST(${local} AS DATE)) / 86400`,
        keyFromOrder: (order) => `CAST(DATE '1970-01-01' + CAST(${order} AS INTEGER) AS VARCHAR)`,
      };
    case 'site':
      return { group, key: 'site_id', order: '0' };
    case 'model':
      return { group, key: 'served_model', order: '0' };
  }
}
