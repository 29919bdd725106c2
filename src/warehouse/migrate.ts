// Numbered SQL migrations in ./migrations, applied in order on open, each in its own transaction.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Warehouse } from './warehouse.js';

const MIGRATIONS_DIR = join(fileURLToPath(new URL('.', import.meta.url)), 'migrations');

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

export async function migrate(warehouse: Warehouse, migrations = listMigrations()): Promise<number[]> {
  await warehouse.run(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
  await warehouse.run(`COMMENT ON TABLE schema_migrations IS 'Migrations applied to this warehouse file'`);
  await warehouse.run(`COMMENT ON COLUMN schema_migrations.version IS 'Migration number (NNN of NNN_name.sql)'`);
  await warehouse.run(`COMMENT ON COLUMN schema_migrations.name IS 'Migration name (name of NNN_name.sql)'`);
  await warehouse.run(`COMMENT ON COLUMN schema_migrations.applied_at IS 'When the migration was applied to this file'`);
  const applied = new Set(
    (await warehouse.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version),
  );
  const done: number[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.version)) continue;
    await warehouse.transaction(async () => {
      await warehouse.run(migration.sql);
      await warehouse.run('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
    });
    done.push(migration.version);
  }
  // DuckDB 1.5 cannot replay a WAL holding COMMENT ON a table with a DEFAULT now() column
  // (INTERNAL Error "GetDefaultDatabase with no default database set"): a process killed before
  // its next checkpoint left a file that no longer opened. Checkpointing here keeps the schema
  // statements out of the WAL, so a crash mid-sync leaves only data changes to replay.
  await warehouse.run('CHECKPOINT');
  return done;
}
