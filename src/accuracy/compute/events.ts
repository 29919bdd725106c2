// Event metrics (SFA's metrics/event.py): each configured event (a threshold crossed, or a ramp)
// turns every scored pair into a forecast yes/no and an observed yes/no; per group the 2×2
// contingency table (TP, FP, TN, FN) is counted in SQL and POD, FAR, POFD, CSI, event bias and
// event accuracy are ratios of its four counts, so they add up across groups and runs.
import type { EventDefinition } from '../../config.js';
import { EventDefinition as EventSchema } from '../../config.js';
import { quoteLiteral } from '../../warehouse/sql.js';

export type { EventDefinition };

/** The contingency counts, then the metrics, in output order; a field is `<metric>_<event name>`. */
export const EVENT_COUNTS = ['tp', 'fp', 'tn', 'fn'] as const;
export const EVENT_METRICS = ['pod', 'far', 'pofd', 'csi', 'ebias', 'ea'] as const;
export const EVENT_FIELDS = [...EVENT_COUNTS, ...EVENT_METRICS] as const;

export interface Contingency {
  tp: number;
  fp: number;
  tn: number;
  fn: number;
}

/**
 * The six metrics of one contingency table, as SFA defines them: a ratio whose denominator is 0
 * is 0 (SFA returns 0.0 there, e.g. POD when no event was observed); a table with no pairs at
 * all (an empty group) has every metric NaN, as the mean of nothing is.
 */
export function eventMetrics({ tp, fp, tn, fn }: Contingency): Record<(typeof EVENT_METRICS)[number], number> {
  const n = tp + fp + tn + fn;
  const ratio = (num: number, den: number) => (n === 0 ? NaN : den === 0 ? 0 : num / den);
  return {
    pod: ratio(tp, tp + fn),
    far: ratio(fp, tp + fp),
    pofd: ratio(fp, fp + tn),
    csi: ratio(tp, tp + fp + fn),
    ebias: ratio(tp + fp, tp + fn),
    ea: ratio(tp + tn, n),
  };
}

/** `<metric>_<event>` fields of one contingency table: the four counts and the six metrics. */
export function eventFields(name: string, counts: Contingency): Record<string, number> {
  const values: Record<string, number> = {};
  for (const c of EVENT_COUNTS) values[`${c}_${name}`] = counts[c];
  for (const [m, v] of Object.entries(eventMetrics(counts))) values[`${m}_${name}`] = v;
  return values;
}

/**
 * `--event name=high,kind=threshold,threshold=80,unit=pct`: the config's fields as key=value
 * pairs, checked by the same rules (a wrong field is named).
 */
export function parseEventOption(text: string): EventDefinition {
  const raw: Record<string, string | number> = {};
  for (const part of text.split(',')) {
    const at = part.indexOf('=');
    if (at < 1) throw new Error(`"${part}" is not field=value (e.g. name=high,kind=threshold,threshold=80)`);
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    raw[key] = key === 'threshold' && value !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  }
  const parsed = EventSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${issue.path.length ? `field ${issue.path.join('.')}: ` : ''}${issue.message}`);
  }
  return parsed.data;
}

const double = (x: number) => `CAST(${x} AS DOUBLE)`;

/** The event's threshold in kW at a pair: fixed, or a share of the capacity (NULL without one). */
function thresholdSql(e: EventDefinition, capacity: string): string {
  return e.unit === 'kw'
    ? double(e.threshold)
    : `(CASE WHEN ${capacity} > 0 THEN ${double(e.threshold / 100)} * ${capacity} END)`;
}

/** Whether `x` (a value, or a change for a ramp) is the event, given the threshold `t` in kW. */
function isEventSql(e: EventDefinition, x: string, t: string): string {
  if (e.kind === 'threshold') return e.direction === 'up' ? `(${x} >= ${t})` : `(${x} <= ${t})`;
  if (e.direction === 'up') return `(${x} >= ${t})`;
  if (e.direction === 'down') return `(${x} <= -${t})`;
  return `(abs(${x}) >= ${t})`;
}

/**
 * One row per scored pair of a single-value forecast and event: (pid, event, fe, oe), forecast
 * and observed yes/no. A ramp compares a pair with the pair `span` earlier of the same forecast
 * (subject, model, site, issue time); a pair without one, or without a capacity for a threshold
 * in %, has no row.
 */
export function eventPairsSql(pairs: string, events: EventDefinition[]): string {
  const scored = (alias: string) => `${alias}.drop_reason IS NULL AND ${alias}.forecast IS NOT NULL`;
  return events
    .map((e) => {
      const t = thresholdSql(e, 'p.capacity');
      const name = quoteLiteral(e.name);
      if (e.kind === 'threshold') {
        return `SELECT p.pid, ${name} AS event, ${isEventSql(e, 'p.forecast', t)} AS fe, ${isEventSql(e, 'p.actual', t)} AS oe
        FROM ${pairs} p WHERE ${scored('p')} AND ${t} IS NOT NULL`;
      }
      const same = ['subject', 'model', 'site_id', 'issue_time'].map((c) => `b.${c} IS NOT DISTINCT FROM p.${c}`);
      return `SELECT p.pid, ${name} AS event, ${isEventSql(e, 'p.forecast - b.forecast', t)} AS fe,
          ${isEventSql(e, 'p.actual - b.actual', t)} AS oe
        FROM ${pairs} p JOIN ${pairs} b
          ON b.valid_time = p.valid_time - to_microseconds(CAST(${e.span * 1000} AS BIGINT)) AND ${same.join(' AND ')}
        WHERE ${scored('p')} AND ${scored('b')} AND ${t} IS NOT NULL`;
    })
    .join('\nUNION ALL\n');
}
