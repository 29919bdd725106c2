// Bring your own forecast: a CSV of pairs (`valid_time`, `actual`, and any of `forecast`,
// `reference`, `capacity`, `q<percent>`; optionally `issue_time`, `site`, `model`, `flags`) is checked
// line by line, then loaded with DuckDB's CSV reader into an in-memory database and exposed as
// the pairs relation the metric SQL scores.
import { quoteLiteral } from '../../warehouse/sql.js';
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseInstant } from '../../time.js';
import { InputFileError } from '../../yaml.js';
import type { IntervalLabel } from '../../warehouse/rows.js';
import { FLAGS, type FlagName } from '../../warehouse/flags.js';
import { groupTimeSql } from '../compute/groups.js';
import type { SqlRunner } from '../compute/metrics.js';
import type { FlagCount } from './quality.js';

export interface PairsColumns {
  /** Column names in the file's order. */
  names: string[];
  forecast: boolean;
  reference: boolean;
  capacity: boolean;
  issueTime: boolean;
  site: boolean;
  model: boolean;
  /** A data-quality bitmask of the actual (efsync's bits, or any non-zero integer): non-zero drops the pair as flagged. */
  flags: boolean;
  /** Quantile columns with their levels in (0,1), ascending. */
  quantiles: { column: string; level: number }[];
}

const KNOWN = ['valid_time', 'actual', 'forecast', 'reference', 'capacity', 'issue_time', 'site', 'model', 'flags'];
const QUANTILE_COLUMN = /^q(\d+(?:\.\d+)?)$/;
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
/**
 * The largest magnitude a value may have. Scoring squares errors (f − o, up to twice this) and
 * sums the squares over every pair: beyond about 1e144 that overflows a double and DuckDB stops
 * with "out of range", naming no line. No power or energy figure comes near this bound.
 */
export const LARGEST_VALUE = 1e100;
/** Cells read as missing values: empty, and the NaN that pandas and numpy write. */
const MISSING = ['', 'NaN', 'nan', 'NA'];

/** Splits one CSV line; fields may be double-quoted ("" inside quotes is a quote). */
function splitCsvLine(line: string): { value: string; column: number }[] {
  const fields: { value: string; column: number }[] = [];
  let i = 0;
  for (;;) {
    const column = i + 1;
    let value = '';
    if (line[i] === '"') {
      i++;
      while (i < line.length && !(line[i] === '"' && line[i + 1] !== '"')) {
        value += line[i];
        i += line[i] === '"' ? 2 : 1;
      }
      i++;
      const end = line.indexOf(',', i);
      i = end === -1 ? line.length : end;
    } else {
      const end = line.indexOf(',', i);
      value = line.slice(i, end === -1 ? line.length : end);
      i = end === -1 ? line.length : end;
    }
    fields.push({ value: value.trim(), column });
    if (i >= line.length) return fields;
    i++;
  }
}

function readHeader(file: string, line: string): PairsColumns {
  const fields = splitCsvLine(line.replace(/^\uFEFF/, ''));
  const names = fields.map((f) => f.value);
  const fail = (column: number, rule: string) => new InputFileError(file, 1, column, rule);
  const quantiles: PairsColumns['quantiles'] = [];
  const seen = new Set<string>();
  for (const { value: name, column } of fields) {
    if (seen.has(name)) throw fail(column, `column "${name}" appears twice`);
    seen.add(name);
    const q = QUANTILE_COLUMN.exec(name);
    if (q) {
      const level = Number(q[1]) / 100;
      if (!(level > 0 && level < 1))
        throw fail(column, `quantile column "${name}": the percent must lie between 0 and 100`);
      quantiles.push({ column: name, level });
    } else if (!KNOWN.includes(name)) {
      throw fail(column, `unknown column "${name}" (expected ${KNOWN.join(', ')} or q<percent> such as q10)`);
    }
  }
  for (const required of ['valid_time', 'actual']) {
    if (!seen.has(required)) throw fail(1, `the header has no "${required}" column`);
  }
  if (!seen.has('forecast') && quantiles.length === 0) {
    throw fail(1, 'the header names nothing to score: add a "forecast" column or quantile columns such as q10, q90');
  }
  quantiles.sort((a, b) => a.level - b.level);
  return {
    names,
    quantiles,
    forecast: seen.has('forecast'),
    reference: seen.has('reference'),
    capacity: seen.has('capacity'),
    issueTime: seen.has('issue_time'),
    site: seen.has('site'),
    model: seen.has('model'),
    flags: seen.has('flags'),
  };
}

function checkCell(file: string, lineNo: number, name: string, cell: { value: string; column: number }): void {
  const fail = (rule: string) => new InputFileError(file, lineNo, cell.column, `column "${name}": ${rule}`);
  if (name === 'valid_time' || name === 'issue_time') {
    if (cell.value === '') {
      if (name === 'valid_time') throw fail('empty; every row needs a valid_time');
      return;
    }
    try {
      parseInstant(cell.value);
    } catch {
      throw fail(`not a timestamp: "${cell.value}" (use e.g. 2026-01-31T14:00:00Z)`);
    }
  } else if (name === 'flags') {
    if (cell.value !== '' && !/^\d{1,15}$/.test(cell.value))
      throw fail(`not a flag bitmask: "${cell.value}" (an integer, 0 or empty for none)`);
  } else if (name !== 'site' && name !== 'model') {
    if (MISSING.includes(cell.value)) return;
    if (!NUMBER.test(cell.value)) throw fail(`not a number: "${cell.value}"`);
    if (!(Math.abs(Number(cell.value)) <= LARGEST_VALUE)) {
      throw fail(
        `${cell.value} is too large to score: values must lie within ±${LARGEST_VALUE} (their squares are summed)`,
      );
    }
  }
}

/** Checks the whole file, naming the line and column of the first problem. */
export async function validatePairsCsv(file: string): Promise<PairsColumns> {
  if (!existsSync(file)) throw new InputFileError(file, 1, 1, 'no such file');
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let header: PairsColumns | undefined;
  let lineNo = 0;
  let rows = 0;
  for await (const line of lines) {
    lineNo++;
    if (!header) {
      header = readHeader(file, line);
      continue;
    }
    if (line.trim() === '') continue;
    const cells = splitCsvLine(line);
    if (cells.length !== header.names.length) {
      throw new InputFileError(file, lineNo, 1, `${cells.length} fields where the header has ${header.names.length}`);
    }
    header.names.forEach((name, i) => {
      checkCell(file, lineNo, name, cells[i]);
    });
    rows++;
  }
  if (!header)
    throw new InputFileError(file, 1, 1, 'the file is empty; expected a header line with valid_time, actual, forecast');
  if (rows === 0) throw new InputFileError(file, 2, 1, 'no rows after the header');
  return header;
}

/** Text timestamps as DuckDB reads them: `2026-01-31T14:00Z` gains its seconds first. */
function timestampSql(column: string): string {
  return `CAST(regexp_replace(${column}, '^(\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2})(Z|[+-].*)?$', '\\1:00\\2') AS TIMESTAMPTZ)`;
}

/** Loads a validated CSV into table `table` with DuckDB's reader. */
export async function loadPairsCsv(sql: SqlRunner, file: string, columns: PairsColumns, table: string): Promise<void> {
  const text = new Set(['valid_time', 'issue_time', 'site', 'model']);
  const type = (n: string) => (text.has(n) ? 'VARCHAR' : n === 'flags' ? 'BIGINT' : 'DOUBLE');
  const types = `{${columns.names.map((n) => `${quoteLiteral(n)}: '${type(n)}'`).join(', ')}}`;
  await sql.run(`CREATE OR REPLACE TEMP TABLE ${table}_raw AS SELECT * FROM read_csv(${quoteLiteral(file)},
    header = true, auto_detect = false, delim = ',', quote = '"', columns = ${types},
    nullstr = [${MISSING.map(quoteLiteral).join(', ')}])`);
  const select = columns.names.map((n) =>
    n === 'valid_time' || n === 'issue_time' ? `${timestampSql(n)} AS ${n}` : `"${n}"`,
  );
  await sql.run(`CREATE OR REPLACE TEMP TABLE ${table} AS SELECT ${select.join(', ')} FROM ${table}_raw`);
  await sql.run(`DROP TABLE ${table}_raw`);
}

/**
 * The pairs relation over a flat table of pairs (a loaded CSV, or the bench table): one row per
 * table row (its rowid is the pid); a value missing in any series drops the row, and so does a
 * flagged actual unless `includeFlagged`.
 */
export function flatPairsSql(
  table: string,
  columns: PairsColumns,
  label: IntervalLabel,
  includeFlagged = false,
): string {
  const or = (flag: boolean, expr: string, type: string) => (flag ? expr : `CAST(NULL AS ${type})`);
  const missingQuantile = columns.quantiles.map((q) => `"${q.column}" IS NULL`).join(' OR ');
  const reasons = [
    `WHEN actual IS NULL THEN 'actual'`,
    columns.flags && !includeFlagged ? `WHEN coalesce(flags, 0) <> 0 THEN 'flagged'` : '',
    columns.forecast ? `WHEN forecast IS NULL THEN 'forecast'` : '',
    columns.reference ? `WHEN reference IS NULL THEN 'reference'` : '',
    missingQuantile ? `WHEN ${missingQuantile} THEN 'quantiles'` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `(SELECT rowid AS pid, 'pairs' AS subject,
    ${or(columns.model, 'model', 'VARCHAR')} AS model,
    ${or(columns.site, 'site', 'VARCHAR')} AS site_id,
    CAST(NULL AS VARCHAR) AS served_model,
    ${or(columns.issueTime, 'issue_time', 'TIMESTAMPTZ')} AS issue_time,
    valid_time, ${groupTimeSql('valid_time', label)} AS group_time,
    ${or(columns.forecast, 'forecast', 'DOUBLE')} AS forecast, actual,
    ${or(columns.reference, 'reference', 'DOUBLE')} AS reference,
    ${or(columns.capacity, 'capacity', 'DOUBLE')} AS capacity,
    CASE ${reasons} END AS drop_reason
  FROM ${table})`;
}

/**
 * Actuals of a flat table flagged with each of efsync's bits, per site (`all` without a site
 * column): each (site, valid time) once, however many models it was paired with. Bits of the
 * user's own are not named, so not counted.
 */
export async function flatFlagCounts(sql: SqlRunner, table: string, columns: PairsColumns): Promise<FlagCount[]> {
  if (!columns.flags) return [];
  const bits = Object.entries(FLAGS)
    .map(([name, bit]) => `(${bit}, ${quoteLiteral(name)})`)
    .join(', ');
  const rows = await sql.all<{ site: string; flag: FlagName; n: bigint }>(`
    WITH flagged AS (
      SELECT DISTINCT ${columns.site ? "coalesce(site, 'all')" : "'all'"} AS site, valid_time, flags
      FROM ${table} WHERE coalesce(flags, 0) <> 0
    )
    SELECT f.site, q.name AS flag, count(*) AS n
    FROM flagged f JOIN (VALUES ${bits}) q(bit, name) ON f.flags & q.bit <> 0
    GROUP BY f.site, q.name, q.bit ORDER BY f.site, q.bit`);
  return rows.map((r) => ({ site: r.site, flag: r.flag, count: Number(r.n) }));
}

/** The quantile relation (pid, level, q) of a flat table, or null when it has no quantile columns. */
export function flatQuantilesSql(table: string, columns: PairsColumns): string | null {
  if (columns.quantiles.length === 0) return null;
  return `(${columns.quantiles
    .map((q) => `SELECT rowid AS pid, CAST(${q.level} AS DOUBLE) AS level, "${q.column}" AS q FROM ${table}`)
    .join(' UNION ALL ')})`;
}
