// Results as the user sees them: JSON rows (non-finite numbers as strings), a table for the
// terminal, and the short headline table that `npm start` and the nightly chain print.
import { orderedNames, type AccuracyRow } from '../compute/metrics.js';

export type JsonValue = number | string;
export type JsonRow = Record<string, string | number | null>;

/** JSON has no NaN or Infinity: they travel as the strings "NaN", "Infinity", "-Infinity". */
export function jsonNumber(value: number): JsonValue {
  return Number.isFinite(value) ? value : String(value);
}

/** One flat object per row: subject, model, group, key, n, then one lower-case field per metric. */
export function toJsonRows(rows: AccuracyRow[]): JsonRow[] {
  return rows.map((r) => {
    const out: JsonRow = { subject: r.subject, model: r.model, group: r.group, key: r.key, n: r.n };
    for (const name of orderedNames(r.values)) out[name] = jsonNumber(r.values[name]);
    return out;
  });
}

/** What a row scores, in words: the site forecast, a model by name, the quantile set, a file. */
export function subjectLabel(row: Pick<AccuracyRow, 'subject' | 'model'>): string {
  if (row.subject === 'forecast') return 'site forecast';
  if (row.subject === 'quantiles') return 'quantile models';
  return row.model ?? row.subject;
}

function formatValue(value: number | undefined): string {
  if (value === undefined) return '';
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'inf' : '-inf';
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e6 || abs < 1e-3)) return value.toExponential(2);
  return value.toFixed(abs >= 100 ? 1 : 3);
}

interface Column {
  title: string;
  value: (row: AccuracyRow) => string;
}

const metricColumn = (title: string, name: string): Column => ({ title, value: (r) => formatValue(r.values[name]) });

const TABLE_COLUMNS: Column[] = [
  { title: 'subject', value: subjectLabel },
  { title: 'group', value: (r) => r.group },
  { title: 'key', value: (r) => r.key },
  { title: 'n', value: (r) => String(r.n) },
  { title: 'dropped', value: (r) => String(r.values.dropped ?? 0) },
  // of those, for a flagged actual (the warehouse's flags, or a pairs file's flags column)
  { title: 'flagged', value: (r) => String(r.values.dropped_flagged ?? 0) },
  metricColumn('MAE', 'mae'),
  metricColumn('MBE', 'mbe'),
  metricColumn('RMSE', 'rmse'),
  metricColumn('nMAE%', 'nmae'),
  metricColumn('nRMSE%', 'nrmse'),
  metricColumn('MAPE%', 'mape'),
  metricColumn('skill', 'skill'),
  metricColumn('r', 'r'),
  metricColumn('KSI', 'ksi'),
  metricColumn('CRPS', 'crps'),
  metricColumn('cover%', 'coverage'),
];

function renderTable(rows: AccuracyRow[], columns: Column[]): string {
  const used = columns.filter((c) => rows.some((r) => c.value(r) !== ''));
  const cells = rows.map((r) => used.map((c) => c.value(r)));
  const widths = used.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i].length)));
  const textual = used.map((c) => ['subject', 'group', 'key'].includes(c.title));
  const line = (values: string[]) =>
    values
      .map((v, i) => (textual[i] ? v.padEnd(widths[i]) : v.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(used.map((c) => c.title)), ...cells.map(line)].join('\n');
}

/** The full results as a table (every `--json` field is there too). */
export function resultsTable(rows: AccuracyRow[]): string {
  return rows.length ? renderTable(rows, TABLE_COLUMNS) : 'No forecast points to score in the window.';
}

/** Group total only, one line per subject: the table that answers "which forecast is best". */
export function headlineTable(rows: AccuracyRow[]): string {
  const totals = rows.filter((r) => r.group === 'total');
  if (!totals.length) return 'No forecast points to score.';
  const columns = TABLE_COLUMNS.filter((c) => !['group', 'key'].includes(c.title));
  return renderTable(totals, columns);
}
