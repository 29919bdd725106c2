// Log lines for a person at a terminal: `01:08:53 WARN  item failed  siteId=7f3c… resource=forecasts`.
// pino still builds each line (levels, redaction of secrets); this destination turns its JSON into
// one short line and prints it above the progress bar. Every field but the few below stays in the
// JSON form (`--log-format json`, or stderr not a terminal).
import { printAbove } from './progress.js';

/** What a terminal's reader needs of a line, in this order; the rest (run id, request paths, counts) is in the JSON form. */
const SHOWN = [
  'job',
  'step',
  'siteId',
  'resource',
  'item',
  'fieldPath',
  'endpoint',
  'status',
  'attempt',
  'reason',
  'err',
];

const LEVELS: Record<number, { name: string; color: string }> = {
  10: { name: 'TRACE', color: '\x1b[2m' },
  20: { name: 'DEBUG', color: '\x1b[2m' },
  30: { name: 'INFO', color: '\x1b[32m' },
  40: { name: 'WARN', color: '\x1b[33m' },
  50: { name: 'ERROR', color: '\x1b[31m' },
  60: { name: 'FATAL', color: '\x1b[31m' },
};
const RESET = '\x1b[0m';

/** A pino destination writing human lines to `stream` (in colour where the terminal has them). */
export function humanDestination(stream: NodeJS.WriteStream): { write(json: string): void } {
  const colors = stream.isTTY === true && stream.hasColors();
  return {
    write(json) {
      printAbove(stream, humanLine(json, colors));
    },
  };
}

/** One JSON log line as a human line; a line that is not JSON is passed as it is. */
export function humanLine(json: string, colors = false): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json);
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = LEVELS[Number(record.level)] ?? { name: String(record.level), color: '' };
  const name = level.name.padEnd(5);
  const fields = SHOWN.filter((key) => record[key] !== undefined && record[key] !== null).map(
    (key) => `${key}=${fieldText(record[key])}`,
  );
  return [
    timeOfDay(record.time),
    colors && level.color ? `${level.color}${name}${RESET}` : name,
    String(record.msg ?? ''),
    ...(fields.length > 0 ? [` ${fields.join(' ')}`] : []),
  ]
    .join(' ')
    .concat('\n');
}

/** `01:08:53`, the local time of day: a terminal run is read as it happens. */
function timeOfDay(time: unknown): string {
  const date = new Date(typeof time === 'string' || typeof time === 'number' ? time : Number.NaN);
  if (Number.isNaN(date.getTime())) return '--:--:--';
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** An error by its message; text with spaces quoted; anything else as compact JSON. */
function fieldText(value: unknown): string {
  const text =
    typeof value === 'object' && value !== null && 'message' in value
      ? String((value as { message: unknown }).message)
      : typeof value === 'string'
        ? value
        : JSON.stringify(value);
  return /[\s"=]/.test(text) ? JSON.stringify(text) : text;
}
