// Creating a Delta table and evolving its schema: version 0 holds the protocol (reader 1,
// writer 2: no table features, so every Delta reader reads it) and the metaData (schema as
// Spark's JSON, partition columns, id, format parquet, createdTime); a later metaData commit adds
// columns. Done by one step before writers run (`efsync lake init`), never raced by them: a
// writer that sees the metadata change meanwhile fails with DeltaConflictError.
import type { DuckDBConnection } from '@duckdb/node-api';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { DeltaConflictError, DeltaTableError } from '../../errors.js';
import type { Metadata } from './actions.js';
import { commit } from './commit.js';
import { listLog, logDir } from './log.js';
import { checkWritable, READER_VERSION, readSnapshot, WRITER_VERSION } from './snapshot.js';
import { deltaType, type DeltaField, type DeltaSchema } from './types.js';

export interface ColumnDefinition {
  name: string;
  /** The DuckDB type, as information_schema names it. */
  type: string;
  comment?: string | null;
}

export interface TableDefinition {
  columns: readonly ColumnDefinition[];
  partitionColumns: readonly string[];
  description?: string | null;
}

export type Ensured = { version: number; change: 'created' | 'evolved' | 'none' };

/**
 * Creates the table at `table`, or adds the columns it lacks; refuses a column retyped. Two
 * processes doing it at once (shards starting on a new lake) both end well: the loser of a
 * version sees the winner's metadata as a conflict and looks again.
 */
export async function ensureTable(db: DuckDBConnection, table: string, definition: TableDefinition): Promise<Ensured> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ensureOnce(db, table, definition);
    } catch (error) {
      if (!(error instanceof DeltaConflictError) || attempt >= 5) throw error;
    }
  }
}

async function ensureOnce(db: DuckDBConnection, table: string, definition: TableDefinition): Promise<Ensured> {
  const wanted = schemaOf(definition);
  if (!hasCommits(table)) {
    mkdirSync(logDir(table), { recursive: true });
    try {
      const metaData: Metadata = {
        id: randomUUID(),
        format: { provider: 'parquet', options: {} },
        schemaString: JSON.stringify(wanted),
        partitionColumns: [...definition.partitionColumns],
        configuration: {},
        createdTime: Date.now(),
        ...(definition.description ? { description: definition.description } : {}),
      };
      const created = await commit({
        table,
        readVersion: -1,
        operation: 'CREATE TABLE',
        actions: [{ protocol: { minReaderVersion: READER_VERSION, minWriterVersion: WRITER_VERSION } }, { metaData }],
      });
      return { version: created.version, change: 'created' };
    } catch (error) {
      // Another process created it first: check its schema as any existing table's.
      if (!(error instanceof DeltaConflictError)) throw error;
    }
  }
  const snapshot = await readSnapshot(db, table);
  checkWritable(snapshot);
  const have = new Map(snapshot.schema.fields.map((f) => [f.name, f]));
  for (const field of wanted.fields) {
    const old = have.get(field.name);
    if (old && JSON.stringify(old.type) !== JSON.stringify(field.type))
      throw new DeltaTableError(
        'unsupported',
        `${table}: column ${field.name} is ${JSON.stringify(old.type)} in the table, ${JSON.stringify(field.type)} now`,
      );
  }
  const added = wanted.fields.filter((f) => !have.has(f.name));
  if (added.length === 0) return { version: snapshot.version, change: 'none' };
  const schema: DeltaSchema = { type: 'struct', fields: [...snapshot.schema.fields, ...added] };
  const evolved = await commit({
    table,
    readVersion: snapshot.version,
    operation: 'ADD COLUMNS',
    actions: [{ metaData: { ...snapshot.metadata, schemaString: JSON.stringify(schema) } }],
  });
  return { version: evolved.version, change: 'evolved' };
}

function hasCommits(table: string): boolean {
  return existsSync(logDir(table)) && listLog(table).commits.length > 0;
}

/** Spark's JSON schema of the definition: every column nullable, its comment in the field's metadata. */
export function schemaOf(definition: TableDefinition): DeltaSchema {
  const fields: DeltaField[] = definition.columns.map((c) => ({
    name: c.name,
    type: deltaType(c.type),
    nullable: true,
    metadata: c.comment ? { comment: c.comment } : {},
  }));
  return { type: 'struct', fields };
}
