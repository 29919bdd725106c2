/**
 * `efsync lake views`: a small DuckDB file of views over the lake with the same table and view
 * names, columns and comments as the single-file warehouse, and its table macros. Each table view reads the files the
 * manifest lists (minus those a compaction replaced) and resolves the newest row per key, so
 * commits after the file was written show up at the next query: the file never goes stale.
 */
import { quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { openDuckDB } from '../warehouse/duckdb.js';
import { castColumns, resolvedSql } from './read.js';
import { ensureLake, lakePath, MANIFEST_DIR } from './layout.js';
import { warehouseSchema, type Column, type TableSchema } from './schema.js';

export const FILES_VIEW = 'lake_files';

export interface ViewsWritten {
  out: string;
  tables: number;
  views: number;
}

export async function writeViewsFile(lake: string, out: string): Promise<ViewsWritten> {
  await ensureLake(lake);
  const schema = await warehouseSchema();
  const root = lakePath(lake);
  mkdirSync(dirname(out), { recursive: true });
  const draft = `${out}.tmp-${process.pid}`;
  rmSync(draft, { force: true });
  const db = await openDuckDB(draft);
  try {
    const run = (sql: string) => db.connection.run(sql);
    await run(filesViewSql(root));
    await run(
      `COMMENT ON VIEW ${FILES_VIEW} IS ${quoteLiteral(`Committed Parquet files of the lake ${root} (its manifest, less files replaced by compaction)`)}`,
    );
    for (const table of schema.tables) {
      await run(`CREATE VIEW ${quoteIdentifier(table.name)} AS ${tableViewSql(root, table)}`);
      await comment(run, table.name, table.comment, table.columns);
    }
    for (const view of schema.views) {
      await run(view.sql);
      await comment(run, view.name, view.comment, view.columns);
    }
    for (const macro of schema.macros) {
      await run(macro.sql);
      if (macro.comment)
        await run(`COMMENT ON MACRO TABLE ${quoteIdentifier(macro.name)} IS ${quoteLiteral(macro.comment)}`);
    }
  } finally {
    db.close();
  }
  rmSync(`${draft}.wal`, { force: true });
  if (existsSync(out)) rmSync(`${out}.wal`, { force: true });
  renameSync(draft, out);
  return { out, tables: schema.tables.length, views: schema.views.length };
}

function filesViewSql(root: string): string {
  const manifests = quoteLiteral(join(root, MANIFEST_DIR, '*.json'));
  return `CREATE VIEW ${FILES_VIEW} AS
WITH entries AS (
  SELECT * FROM read_json(${manifests}, format = 'newline_delimited', columns = {
    run_id: 'VARCHAR', kind: 'VARCHAR', shard: 'VARCHAR', committed_at: 'TIMESTAMPTZ',
    files: 'STRUCT("table" VARCHAR, path VARCHAR, "rows" BIGINT, seq BIGINT)[]', replaces: 'VARCHAR[]'})
),
listed AS (SELECT run_id, kind, shard, committed_at, unnest(files, recursive := true) FROM entries),
replaced AS (SELECT unnest(replaces) AS path FROM entries)
SELECT ${quoteLiteral(`${root}/`)} || path AS filename, "table" AS table_name, "rows", seq, run_id, kind, shard, committed_at
FROM listed WHERE path NOT IN (SELECT path FROM replaced)`;
}

function tableViewSql(root: string, table: TableSchema): string {
  const glob = quoteLiteral(join(root, table.name, '**', '*.parquet'));
  const source = `SELECT ${castColumns(table, 'p')}, f.seq, p.filename AS lake_file
FROM read_parquet(${glob}, filename = true, union_by_name = true, hive_partitioning = false) p
JOIN ${FILES_VIEW} f ON f.filename = p.filename AND f.table_name = ${quoteLiteral(table.name)}`;
  return resolvedSql(table, source);
}

async function comment(
  run: (sql: string) => Promise<unknown>,
  name: string,
  text: string | null,
  columns: Column[],
): Promise<void> {
  if (text !== null) await run(`COMMENT ON VIEW ${quoteIdentifier(name)} IS ${quoteLiteral(text)}`);
  for (const column of columns) {
    if (column.comment !== null)
      await run(
        `COMMENT ON COLUMN ${quoteIdentifier(name)}.${quoteIdentifier(column.name)} IS ${quoteLiteral(column.comment)}`,
      );
  }
}
