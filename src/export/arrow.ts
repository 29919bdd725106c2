// Arrow IPC files (Feather v2) of any warehouse query, for pandas (`read_feather`), polars
// (`read_ipc`) and R (`arrow::read_feather`). @duckdb/node-api has no Arrow interface, so the
// result is streamed chunk by chunk into Arrow record batches: memory holds one chunk at a time.
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import type { DuckDBConnection, DuckDBType } from '@duckdb/node-api';
import { JSDuckDBValueConverter } from '../warehouse/duckdb-api.js';
import {
  Bool,
  DateDay,
  Float64,
  Int32,
  Int64,
  RecordBatch,
  RecordBatchFileWriter,
  Table,
  TimestampMillisecond,
  Utf8,
  vectorFromArray,
  type DataType,
} from 'apache-arrow';
import { quoteIdentifier } from '../warehouse/sql.js';

/** DuckDB types with an Arrow counterpart; every other type (JSON, lists, decimals) travels as text. */
const ARROW_TYPES: Record<string, () => DataType> = {
  VARCHAR: () => new Utf8(),
  DOUBLE: () => new Float64(),
  FLOAT: () => new Float64(),
  INTEGER: () => new Int32(),
  SMALLINT: () => new Int32(),
  TINYINT: () => new Int32(),
  BIGINT: () => new Int64(),
  BOOLEAN: () => new Bool(),
  DATE: () => new DateDay(),
  'TIMESTAMP WITH TIME ZONE': () => new TimestampMillisecond('UTC'),
};

/** The query with every column Arrow cannot take as it is cast to VARCHAR. */
async function arrowReadyQuery(connection: DuckDBConnection, query: string): Promise<string> {
  const probe = await connection.run(`SELECT * FROM (${query}) LIMIT 0`);
  const names = probe.columnNames();
  const types = probe.columnTypes();
  const projection = names.map((name, i) =>
    String(types[i]) in ARROW_TYPES
      ? quoteIdentifier(name)
      : `CAST(${quoteIdentifier(name)} AS VARCHAR) AS ${quoteIdentifier(name)}`,
  );
  return `SELECT ${projection.join(', ')} FROM (${query})`;
}

function arrowType(type: DuckDBType): DataType {
  return ARROW_TYPES[String(type)]();
}

/**
 * Writes the rows of `query` to `path` as an Arrow IPC file; the file appears whole (written
 * beside it, then renamed) or not at all. Returns the number of rows written.
 */
export async function exportArrow(connection: DuckDBConnection, query: string, path: string): Promise<number> {
  const result = await connection.stream(await arrowReadyQuery(connection, query));
  const names = result.columnNames();
  const types = result.columnTypes().map(arrowType);
  const temporary = `${path}.tmp-${process.pid}`;
  const file = createWriteStream(temporary);
  // An unwritable path fails here, before any row is read.
  await once(file, 'open');
  const writer = new RecordBatchFileWriter();
  const written = pipeline(writer.toNodeStream(), file);
  // A write that fails later (a full disk) rejects this while rows are still being read; the
  // `await written` below reports it, and the process must not die of an unhandled rejection first.
  written.catch(() => {});
  let rows = 0;
  try {
    for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) {
      const columns = chunk.convertColumns(JSDuckDBValueConverter);
      const vectors = Object.fromEntries(names.map((name, i) => [name, vectorFromArray(columns[i], types[i])]));
      for (const batch of new Table(vectors).batches) writer.write(batch as RecordBatch);
      rows += chunk.rowCount;
    }
    if (rows === 0) writer.write(emptyBatch(names, types));
    writer.finish();
    await written;
    renameSync(temporary, path);
    return rows;
  } catch (error) {
    writer.abort();
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** A file with no rows still carries the schema, so readers see the columns. */
function emptyBatch(names: string[], types: DataType[]): RecordBatch {
  const vectors = Object.fromEntries(names.map((name, i) => [name, vectorFromArray([], types[i])]));
  return new Table(vectors).batches[0] ?? new RecordBatch(new Table(vectors).schema);
}
