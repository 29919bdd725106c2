// An add action's statistics (PROTOCOL.md "Per-file Statistics"), which engines use to skip
// files: numRecords, and per column minValues, maxValues and nullCount. Timestamps are written
// as ISO 8601 UTC to the millisecond (efsync's instants have no finer part, so the bounds are
// exact); strings only when no value is longer than 32 characters (a cut maximum would no longer
// bound the file); booleans, decimals and nested types get a null count only.
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteIdentifier, quoteLiteral } from '../../warehouse/sql.js';

export interface FileStats {
  numRecords: number;
  minValues: Record<string, unknown>;
  maxValues: Record<string, unknown>;
  nullCount: Record<string, number>;
}

const MAX_STRING = 32;
const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|FLOAT|DOUBLE)$/;

export async function fileStats(db: DuckDBConnection, file: string, columns: readonly string[]): Promise<FileStats> {
  const source = `read_parquet(${quoteLiteral(file)})`;
  const described = (await db.runAndReadAll(`DESCRIBE SELECT * FROM ${source}`)).getRowObjectsJS() as {
    column_name: string;
    column_type: string;
  }[];
  const types = new Map(described.map((d) => [d.column_name, d.column_type]));
  const present = columns.filter((c) => types.has(c));
  const selects = ['count(*)::BIGINT AS n'];
  for (const [i, column] of present.entries()) {
    const c = quoteIdentifier(column);
    selects.push(`(count(*) - count(${c}))::BIGINT AS "null${i}"`);
    const bounds = boundsSql(c, types.get(column) ?? '');
    if (bounds) selects.push(`${bounds.min} AS "min${i}"`, `${bounds.max} AS "max${i}"`);
  }
  const [row] = (await db.runAndReadAll(`SELECT ${selects.join(', ')} FROM ${source}`)).getRowObjectsJS() as Record<
    string,
    unknown
  >[];
  const stats: FileStats = { numRecords: Number(row.n), minValues: {}, maxValues: {}, nullCount: {} };
  for (const [i, column] of present.entries()) {
    stats.nullCount[column] = Number(row[`null${i}`]);
    const [min, max] = [row[`min${i}`], row[`max${i}`]];
    const [low, high] = [jsonValue(min), jsonValue(max)];
    if (low !== null) stats.minValues[column] = low;
    if (high !== null) stats.maxValues[column] = high;
  }
  return stats;
}

function boundsSql(c: string, type: string): { min: string; max: string } | null {
  if (type === 'TIMESTAMP WITH TIME ZONE' || type === 'TIMESTAMP') {
    const iso = (x: string) => `strftime(${x}(${c}), '%Y-%m-%dT%H:%M:%S.%gZ')`;
    return { min: iso('min'), max: iso('max') };
  }
  if (type === 'DATE') return { min: `min(${c})::VARCHAR`, max: `max(${c})::VARCHAR` };
  if (type === 'VARCHAR') {
    const short = `max(length(${c})) <= ${MAX_STRING}`;
    return { min: `CASE WHEN ${short} THEN min(${c}) END`, max: `CASE WHEN ${short} THEN max(${c}) END` };
  }
  if (NUMERIC.test(type)) return { min: `min(${c})`, max: `max(${c})` };
  return null;
}

/** A bound as JSON holds it, or null for none: a BIGINT beyond a double's exact integers has no exact JSON number. */
function jsonValue(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value !== 'bigint') return value;
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : null;
}
