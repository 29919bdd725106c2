/**
 * `efsync lake views`: a small DuckDB file of views over the lake with the same table and view
 * names, columns and comments as the single-file warehouse, and its table macros (the same
 * views.sql and comments.yaml the warehouse's migrator applies). Each table
 * view replays its Delta log (`read_json` of `_delta_log/*.json`: the files added and not
 * removed) and resolves the newest row per key, so commits after the file was written show up
 * at the next query: the file never goes stale. efsync never deletes a commit file, so the
 * commits alone hold every table's state (the checkpoints are for other readers).
 *
 * Where the lake is: the variable `efsync_lake` when set (`SET VARIABLE efsync_lake =
 * '/mnt/lake'`, for a lake mounted elsewhere than where the file was written), else the lake's
 * absolute path when the file was written.
 */
import { quoteIdentifier, quoteLiteral } from '../warehouse/sql.js';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { mkdirSync } from 'node:fs';
import { openDuckDB } from '../warehouse/duckdb.js';
import { applyComments } from '../warehouse/comments.js';
import { viewsDefinition } from '../warehouse/migrate.js';
import { castColumns, resolvedSql } from './read.js';
import { ensureLake, lakePath, SEQ_TAG } from './layout.js';
import { warehouseSchema, type Column, type TableSchema } from './schema.js';

export const FILES_VIEW = 'lake_files';

/** The DuckDB variable that, when set, says where the lake is. */
export const LAKE_VARIABLE = 'efsync_lake';

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
    const rootSql = `coalesce(getvariable(${quoteLiteral(LAKE_VARIABLE)}), ${quoteLiteral(root)})`;
    await run(filesViewSql(rootSql, schema.tables));
    await run(
      `COMMENT ON VIEW ${FILES_VIEW} IS ${quoteLiteral(`The active Parquet files of each Delta table of the lake (${root}, or the variable ${LAKE_VARIABLE}), from its log`)}`,
    );
    for (const table of schema.tables) {
      await run(`CREATE VIEW ${quoteIdentifier(table.name)} AS ${tableViewSql(rootSql, table)}`);
      await comment(run, table.name, table.comment, table.columns);
    }
    const views = viewsDefinition();
    await run(views.sql);
    await applyComments(db.connection, views.comments, ['views', 'table_macros']);
  } finally {
    db.close();
  }
  rmSync(`${draft}.wal`, { force: true });
  if (existsSync(out)) rmSync(`${out}.wal`, { force: true });
  renameSync(draft, out);
  return { out, tables: schema.tables.length, views: schema.views.length };
}

/** Per table, the files its log adds and no later commit removes, with their commit order and who committed them. */
function filesViewSql(root: string, tables: readonly TableSchema[]): string {
  const columns = `columns = {
    add: 'STRUCT(path VARCHAR, tags MAP(VARCHAR, VARCHAR), stats VARCHAR)', remove: 'STRUCT(path VARCHAR)',
    "commitInfo": 'STRUCT("timestamp" BIGINT, efsync STRUCT(kind VARCHAR, run_id VARCHAR, shard VARCHAR))'}`;
  const perTable = tables.map((table) => {
    const dir = `${root} || ${quoteLiteral(`/${table.name}/`)}`;
    return `SELECT * FROM (
  WITH log AS (SELECT * FROM read_json(${dir} || '_delta_log/*.json', format = 'newline_delimited', filename = 'commit_file', ${columns})),
  info AS (SELECT commit_file, "commitInfo" AS c FROM log WHERE "commitInfo" IS NOT NULL)
  SELECT ${dir} || url_decode(add.path) AS filename, ${quoteLiteral(table.name)} AS table_name,
    json_extract(add.stats, '$.numRecords')::BIGINT AS "rows", CAST(add.tags[${quoteLiteral(SEQ_TAG)}] AS BIGINT) AS seq,
    regexp_extract(log.commit_file, '(\\d{20})\\.json$', 1)::BIGINT AS version,
    c.efsync.run_id AS run_id, c.efsync.kind AS kind, c.efsync.shard AS shard, make_timestamptz(c."timestamp" * 1000) AS committed_at
  FROM log LEFT JOIN info USING (commit_file)
  WHERE add IS NOT NULL AND add.path NOT IN (SELECT remove.path FROM log WHERE remove IS NOT NULL))`;
  });
  return `CREATE VIEW ${FILES_VIEW} AS\n${perTable.join('\nUNION ALL\n')}`;
}

function tableViewSql(root: string, table: TableSchema): string {
  const dir = `${root} || ${quoteLiteral(`/${table.name}/`)}`;
  // The schema file makes the glob match before any commit (DuckDB fails a pattern that matches
  // nothing, so no pattern per kind of file); only the files the log holds are joined.
  const source = `SELECT ${castColumns(table, 'p')}, f.seq, p.filename AS lake_file
FROM read_parquet(${dir} || '**/*.parquet', filename = true, union_by_name = true, hive_partitioning = false) p
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
