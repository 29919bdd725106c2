// The rows of a snapshot as one DuckDB query: `read_parquet` of the active files, each data
// column cast to the schema's type (a column no file holds yet reads as null), and each partition
// column from the file's `partitionValues`, cast from its text. Runs on a connection whose time
// zone is UTC (src/warehouse/duckdb.ts): Spark's INT96 timestamps read as UTC.
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeltaTableError } from '../../errors.js';
import { quoteIdentifier, quoteLiteral } from '../../warehouse/sql.js';
import { decodePath, type AddFile } from './actions.js';
import type { Snapshot } from './snapshot.js';
import { duckdbType, type DeltaField } from './types.js';

/** The column `read_parquet` names each row's file in (a name no table of efsync or Spark's golden tables uses). */
const FILE_COLUMN = '__efsync_delta_file';

/** The file system path of an active file: relative paths from the table root, `file:` URIs; other schemes are refused. */
export function filePath(table: string, add: Pick<AddFile, 'path'>): string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(add.path);
  if (scheme && !isAbsolute(add.path)) {
    if (scheme[1].toLowerCase() === 'file') return fileURLToPath(add.path);
    throw new DeltaTableError('unsupported', `${table}: file ${add.path} is not on this file system`);
  }
  return join(table, decodePath(add.path));
}

/** SELECT of the snapshot's rows, columns in schema order, partition columns included. */
export function snapshotSql(snapshot: Snapshot): string {
  const partitions = snapshot.metadata.partitionColumns;
  const fields = snapshot.schema.fields;
  const data = fields.filter((f) => !partitions.includes(f.name));
  const typed = (f: DeltaField) => duckdbType(snapshot.table, f.type);
  const files = [...snapshot.files.values()];
  // A typed empty row set under the files' rows: a column no file holds yet (a schema that
  // gained it) is null, and a table without files reads as empty with its columns.
  const base = `SELECT ${[...data.map((f) => `NULL::${typed(f)} AS ${quoteIdentifier(f.name)}`), `NULL::VARCHAR AS ${FILE_COLUMN}`].join(', ')} WHERE false`;
  const select = fields.map((f) =>
    partitions.includes(f.name)
      ? `${partitionValueSql(`p.${quoteIdentifier(f.name)}`, typed(f))} AS ${quoteIdentifier(f.name)}`
      : `CAST(d.${quoteIdentifier(f.name)} AS ${typed(f)}) AS ${quoteIdentifier(f.name)}`,
  );
  if (files.length === 0)
    return `SELECT ${fields.map((f) => `NULL::${typed(f)} AS ${quoteIdentifier(f.name)}`).join(', ')} WHERE false`;
  const paths = files.map((f) => filePath(snapshot.table, f));
  const values = files.map(
    (file, i) =>
      `(${[paths[i], ...partitions.map((c) => file.partitionValues[c] ?? null)].map((v) => (v === null ? 'NULL' : quoteLiteral(v))).join(', ')})`,
  );
  const partitionColumns = [FILE_COLUMN, ...partitions].map(quoteIdentifier).join(', ');
  const read = `read_parquet([${paths.map(quoteLiteral).join(', ')}], filename = ${quoteLiteral(FILE_COLUMN)}, union_by_name = true, hive_partitioning = false)`;
  return `SELECT ${select.join(', ')}
FROM (${base} UNION ALL BY NAME SELECT * FROM ${read}) d
JOIN (VALUES ${values.join(', ')}) p(${partitionColumns}) ON d.${FILE_COLUMN} = p.${FILE_COLUMN}`;
}

/**
 * A partition value's text as its column's type (PROTOCOL.md "Partition Value Serialization"):
 * an empty string is null; a timestamp without a zone (`2021-09-08 11:11:11`) is read as UTC,
 * like Delta Kernel (the protocol says "the writer's zone", which the table does not record),
 * and one with a zone (`2024-01-01T10:00:00.000000Z`) as the instant it names.
 */
function partitionValueSql(text: string, type: string): string {
  const value = `NULLIF(${text}, '')`;
  if (type === 'TIMESTAMPTZ')
    return `CASE WHEN regexp_matches(${value}, '(Z|[+-]\\d\\d(:?\\d\\d)?)$') THEN CAST(${value} AS TIMESTAMPTZ) ELSE timezone('UTC', CAST(${value} AS TIMESTAMP)) END`;
  return `CAST(${value} AS ${type})`;
}
