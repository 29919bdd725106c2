// The warehouse's schema as the migrations define it: read once from a freshly migrated
// in-memory DuckDB, so the lake's files, the scratch warehouses and the views file all follow
// the same columns, types and comments as the single-file warehouse.
import { applyComments } from '../warehouse/comments.js';
import { listMigrations, viewsDefinition } from '../warehouse/migrate.js';
import { openDuckDB, type DuckDBHandle } from '../warehouse/duckdb.js';
import { defaultLayout, LAKE_TABLES, NOT_IN_LAKE, type LakeTable } from './tables.js';

export interface Column {
  name: string;
  type: string;
  comment: string | null;
}

export interface TableSchema extends LakeTable {
  comment: string | null;
  columns: Column[];
}

export interface WarehouseSchema {
  tables: TableSchema[];
  /** The analyst views' names (their definition: viewsDefinition() of warehouse/migrate.ts). */
  views: string[];
}

let cached: Promise<WarehouseSchema> | undefined;

export function warehouseSchema(): Promise<WarehouseSchema> {
  cached ??= readSchema();
  return cached;
}

/** A DuckDB in memory holding the migrated, empty warehouse tables and the views (for typed empty Parquet files). */
export async function migratedInMemory(): Promise<DuckDBHandle> {
  const db = await openDuckDB(':memory:');
  try {
    for (const migration of listMigrations()) await db.connection.run(migration.sql);
    const views = viewsDefinition();
    await db.connection.run(views.sql);
    await applyComments(db.connection, views.comments);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

async function readSchema(): Promise<WarehouseSchema> {
  const db = await migratedInMemory();
  try {
    const rows = async <T>(sql: string) => (await db.connection.runAndReadAll(sql)).getRowObjectsJS() as T[];
    const columns = await rows<{ table_name: string; column_name: string; data_type: string; comment: string | null }>(
      `SELECT table_name, column_name, data_type, comment FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index`,
    );
    const columnsOf = (name: string): Column[] =>
      columns
        .filter((c) => c.table_name === name)
        .map((c) => ({ name: c.column_name, type: c.data_type, comment: c.comment }));
    const tables = await rows<{ table_name: string; comment: string | null }>(
      `SELECT table_name, comment FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'`,
    );
    const layouts = [
      ...LAKE_TABLES,
      ...tables
        .map((t) => t.table_name)
        .filter((t) => !NOT_IN_LAKE.includes(t) && !LAKE_TABLES.some((l) => l.name === t))
        .sort()
        .map(defaultLayout),
    ].filter((layout) => tables.some((t) => t.table_name === layout.name));
    const views = await rows<{ view_name: string }>(
      `SELECT view_name FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal ORDER BY view_oid`,
    );
    return {
      tables: layouts.map((table) => ({
        ...table,
        comment: tables.find((t) => t.table_name === table.name)?.comment ?? null,
        columns: columnsOf(table.name),
      })),
      views: views.map((v) => v.view_name),
    };
  } finally {
    db.close();
  }
}
