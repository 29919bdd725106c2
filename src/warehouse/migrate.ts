// The warehouse schema: numbered SQL migrations in ./migrations (tables, columns, data moves),
// then the repeatable definitions, applied again whenever their digest differs from the one the
// file records (schema_views) or a migration ran: the analyst views and table macros of
// ./views.sql, then the comments of ./comments.yaml (comments.ts).
// Reading whether anything is behind writes nothing, so an up-to-date warehouse opens without a
// write; applying is the writer file's business (writer-file.ts migrates a draft copy,
// checkpointed before it is used).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DuckDBConnection } from '@duckdb/node-api';
import { faultPoint } from '../fault.js';
import { InputFileError } from '../yaml.js';
import { applyComments, type CommentsDefinition, commentsDefinition } from './comments.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const MIGRATIONS_DIR = join(HERE, 'migrations');
const VIEWS_FILE = join(HERE, 'views.sql');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d{3}_[\w-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: readFileSync(join(dir, file), 'utf8'),
    }));
}

/** The migrations not yet applied to the open file, in order. Read-only. */
export async function pendingMigrations(
  connection: DuckDBConnection,
  migrations = listMigrations(),
): Promise<Migration[]> {
  if (!(await tracksMigrations(connection))) return migrations;
  const applied = new Set(
    (await connection.runAndReadAll('SELECT version FROM schema_migrations')).getRows().map((row) => Number(row[0])),
  );
  return migrations.filter((migration) => !applied.has(migration.version));
}

function tracksMigrations(connection: DuckDBConnection): Promise<boolean> {
  return hasTable(connection, 'schema_migrations');
}

async function hasTable(connection: DuckDBConnection, name: string): Promise<boolean> {
  const tables = await connection.runAndReadAll(
    `SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'
       AND table_name = $1`,
    [name],
  );
  return Number(tables.getRows()[0][0]) > 0;
}

/**
 * Applies `pending` in order, each in its own transaction, then checkpoints, so nothing of a
 * schema change stays in the WAL. (DuckDB 1.5 cannot replay a WAL holding an ALTER, such as
 * COMMENT ON COLUMN, of a table with a volatile DEFAULT like now(): INTERNAL Error "Calling
 * DatabaseManager::GetDefaultDatabase with no default database set". schema_migrations had one
 * and was commented on every open; it is now created without it and never altered.)
 */
export async function applyMigrations(connection: DuckDBConnection, pending: Migration[]): Promise<number[]> {
  if (!(await tracksMigrations(connection)))
    await connection.run(`CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL);
  COMMENT ON TABLE schema_migrations IS 'Migrations applied to this warehouse file';
  COMMENT ON COLUMN schema_migrations.version IS 'Migration number (NNN of NNN_name.sql)';
  COMMENT ON COLUMN schema_migrations.name IS 'Migration name (name of NNN_name.sql)';
  COMMENT ON COLUMN schema_migrations.applied_at IS 'When the migration was applied to this file'`);
  for (const migration of pending) {
    await connection.run('BEGIN TRANSACTION');
    try {
      await connection.run(migration.sql);
      await connection.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [
        migration.version,
        migration.name,
      ]);
      await connection.run('COMMIT');
    } catch (error) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw new Error(`migration ${migration.version}_${migration.name} failed: ${(error as Error).message}`);
    }
    faultPoint('migration');
  }
  await connection.run('CHECKPOINT');
  return pending.map((migration) => migration.version);
}

export interface ViewsDefinition {
  sql: string;
  comments: CommentsDefinition;
  /** SHA-256 of views.sql, a NUL, then comments.yaml, hex: what schema_views records once both are applied. */
  digest: string;
}

export function viewsDefinition(file = VIEWS_FILE, comments = commentsDefinition()): ViewsDefinition {
  const sql = readFileSync(file, 'utf8');
  const digest = createHash('sha256').update(sql).update('\0').update(comments.text).digest('hex');
  return { sql, comments, digest };
}

/** Whether the open file lacks `views` as defined now (no schema_views yet, or another digest). Read-only. */
export async function viewsStale(connection: DuckDBConnection, views = viewsDefinition()): Promise<boolean> {
  if (!(await hasTable(connection, 'schema_views'))) return true;
  const recorded = await connection.runAndReadAll('SELECT digest FROM schema_views');
  return recorded.getRows().length !== 1 || recorded.getRows()[0][0] !== views.digest;
}

/** Whether migrations are pending or the views are stale. Read-only. */
export async function schemaBehind(connection: DuckDBConnection): Promise<boolean> {
  return (await pendingMigrations(connection)).length > 0 || (await viewsStale(connection));
}

/**
 * Applies the pending migrations, then, if any ran or the views are stale, the views (CREATE OR
 * REPLACE of each), every comment and the digest, in one transaction. A migration that rebuilds a
 * table, and a replaced view, lose their comments: hence all of them again.
 */
export async function migrate(connection: DuckDBConnection, views = viewsDefinition()): Promise<void> {
  const pending = await pendingMigrations(connection);
  if (pending.length > 0) await applyMigrations(connection, pending);
  else if (!(await viewsStale(connection, views))) return;
  await connection.run('BEGIN TRANSACTION');
  try {
    await connection.run(views.sql);
    await applyComments(connection, views.comments);
    await connection.run('DELETE FROM schema_views');
    await connection.run('INSERT INTO schema_views (digest, applied_at) VALUES ($1, now())', [views.digest]);
    await connection.run('COMMIT');
  } catch (error) {
    await connection.run('ROLLBACK').catch(() => undefined);
    if (error instanceof InputFileError) throw error;
    throw new Error(`views.sql failed: ${(error as Error).message}`);
  }
  await connection.run('CHECKPOINT');
}
