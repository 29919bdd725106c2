// The warehouse's schema as the migrations define it: read once from a freshly migrated
// in-memory DuckDB, so the lake's files, the scratch warehouses and the views file all follow
// the same columns, types and comments as the single-file warehouse.
import { listMigrations } from '../warehouse/migrate.js';
import { quoteIdentifier } from '../warehouse/sql.js';
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

export interface ViewSchema {
  name: string;
  /** The CREATE VIEW statement, as DuckDB keeps it. */
  sql: string;
  comment: string | null;
  columns: Column[];
}

export interface MacroSchema {
  name: string;
  /** The CREATE MACRO statement, from DuckDB's definition. */
  sql: string;
  comment: string | null;
}

export interface WarehouseSchema {
  tables: TableSchema[];
  views: ViewSchema[];
  /** The table macros (forecast_as_of, ...). */
  macros: MacroSchema[];
}

let cached: Promise<WarehouseSchema> | undefined;

export function warehouseSchema(): Promise<WarehouseSchema> {
  cached ??= readSchema();
  return cached;
}

/** A DuckDB in memory holding the migrated, empty warehouse tables (for typed empty Parquet files). */
export async function migratedInMemory(): Promise<DuckDBHandle> {
  const db = await openDuckDB(':memory:');
  try {
    for (const migration of listMigrations()) await db.connection.run(migration.sql);
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
    const views = await rows<{ view_name: string; sql: string; comment: string | null }>(
      `SELECT view_name, sql, comment FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal ORDER BY view_oid`,
    );
    const macros = await rows<{
      function_name: string;
      parameters: string[];
      macro_definition: string;
      comment: string | null;
    }>(
      `SELECT function_name, parameters, macro_definition, comment FROM duckdb_functions()
        WHERE database_name = current_database() AND schema_name = 'main' AND function_type = 'table_macro' AND NOT internal
        ORDER BY function_name`,
    );
    return {
      macros: macros.map((m) => ({
        name: m.function_name,
        sql: `CREATE MACRO ${quoteIdentifier(m.function_name)}(${m.parameters.map(quoteIdentifier).join(', ')}) AS TABLE ${m.macro_definition}`,
        comment: m.comment,
      })),
      tables: layouts.map((table) => ({
        ...table,
        comment: tables.find((t) => t.table_name === table.name)?.comment ?? null,
        columns: columnsOf(table.name),
      })),
      views: views.map((v) => ({ name: v.view_name, sql: v.sql, comment: v.comment, columns: columnsOf(v.view_name) })),
    };
  } finally {
    db.close();
  }
}
