// `efsync sql "SELECT ..."`: a query over the published warehouse, read-only, as an aligned table
// (or CSV, or JSON), so the README's queries run from a fresh clone with nothing else installed.
// Instants print as ISO 8601 UTC (`2026-11-21T07:00:00Z`), as they are stored.
import { existsSync } from 'node:fs';
import type { DuckDBResultReader } from '@duckdb/node-api';
import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import type { Outcome } from '../outcome.js';
import { Warehouse } from '../warehouse/warehouse.js';
import { command, UsageError } from './boundary.js';
import { CONFIG_OPTION, configWithDb, DB_OPTION, MEMORY_OPTION, type CommonFlags } from './runner.js';

interface SqlFlags extends CommonFlags {
  csv?: boolean;
  json?: boolean;
}

export function registerSqlCommands(program: Command): void {
  program
    .command('sql')
    .description('Run a query on the published warehouse, read-only: an aligned table, or --csv, or --json')
    .argument('<query>', 'one SQL query, e.g. "SELECT * FROM site_freshness"')
    .option('--csv', 'print CSV with a header line')
    .option('--json', 'print a JSON array of objects, one per row')
    .option(...DB_OPTION)
    .option(...MEMORY_OPTION)
    .option(...CONFIG_OPTION)
    .action(command<[string], SqlFlags>(sqlCommand));
}

/**
 * The published snapshot, read-only (never a WAL beside it): a missing file is a config error
 * naming it, not DuckDB's "database does not exist".
 */
export async function openPublished(path: string): Promise<Warehouse> {
  if (!existsSync(path)) {
    throw new ConfigError(
      `no warehouse at ${path}`,
      'run `efsync sync` (or `npm start`) first, or name it with --db or EFSYNC_DB',
    );
  }
  return Warehouse.open({ path, readOnly: true });
}

/**
 * Runs the user's query on an opened warehouse: what fails now is the query (a typo, an unknown
 * table, a write on a read-only file), a usage error naming `what` (the flag or argument).
 */
export async function userQuery(warehouse: Warehouse, query: string, what: string): Promise<DuckDBResultReader> {
  return warehouse
    .exclusive(() => warehouse.connection.runAndReadAll(query))
    .catch((error: Error) => {
      throw new UsageError(
        `${what}: ${error.message.split('\n')[0]}`,
        'the tables and views: efsync sql "SELECT table_name, comment FROM duckdb_tables() UNION ALL SELECT view_name, comment FROM duckdb_views() WHERE NOT internal"',
      );
    });
}

async function sqlCommand(query: string, flags: SqlFlags): Promise<Outcome> {
  if (flags.csv && flags.json) throw new UsageError('--csv and --json: give one of them');
  const config = configWithDb(flags);
  const warehouse = await openPublished(config.warehouse.path);
  try {
    const result = await userQuery(warehouse, query, 'the query failed');
    const table = cells(result);
    process.stdout.write(flags.json ? toJson(table) : flags.csv ? toCsv(table) : toAligned(table));
    return 'ok';
  } finally {
    await warehouse.close();
  }
}

interface Cells {
  names: string[];
  /** Per column, whether its values are numbers (right-aligned). */
  numeric: boolean[];
  /** Values for JSON (numbers, strings, booleans, null, lists and objects). */
  json: unknown[][];
  /** Values as text ('' for null). */
  text: string[][];
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|DECIMAL)/;

function cells(result: DuckDBResultReader): Cells {
  const names = result.columnNames();
  const types = result.columnTypes().map(String);
  const js = result.getRowsJS();
  const duck = result.getRows();
  const jsonish = result.getRowsJson();
  const json: unknown[][] = [];
  const text: string[][] = [];
  js.forEach((row, r) => {
    json.push(row.map((value, c) => jsonValue(value, jsonish[r][c], types[c])));
    text.push(row.map((value, c) => textValue(value, duck[r][c], types[c])));
  });
  return { names, numeric: types.map((t) => NUMERIC.test(t)), json, text };
}

/** `2026-11-21T07:00:00Z`: milliseconds only when there are some. */
function isoInstant(value: Date): string {
  return value.toISOString().replace('.000Z', 'Z');
}

function jsonValue(value: unknown, jsonish: unknown, type: string): unknown {
  if (value === null) return null;
  if (type === 'TIMESTAMP WITH TIME ZONE' && value instanceof Date) return isoInstant(value);
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  return jsonish;
}

function textValue(value: unknown, duck: unknown, type: string): string {
  if (value === null) return '';
  if (type === 'TIMESTAMP WITH TIME ZONE' && value instanceof Date) return isoInstant(value);
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return String(duck); // DuckDB's own text: dates, intervals, decimals, lists, structs
}

function toJson(table: Cells): string {
  const rows = table.json.map((row) => Object.fromEntries(row.map((value, c) => [table.names[c], value])));
  return `${JSON.stringify(rows)}\n`;
}

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function toCsv(table: Cells): string {
  return [table.names, ...table.text].map((row) => `${row.map(csvField).join(',')}\n`).join('');
}

function toAligned(table: Cells): string {
  const widths = table.names.map((name, c) => Math.max(name.length, ...table.text.map((row) => row[c].length)));
  const line = (row: string[]) =>
    row
      .map((cell, c) => (table.numeric[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const count = `(${table.text.length} row${table.text.length === 1 ? '' : 's'})`;
  return `${[line(table.names), rule, ...table.text.map(line), count].join('\n')}\n`;
}
