// A self-contained copy of the published warehouse (`efsync snapshot`): one DuckDB file with every
// table, analyst view, table macro and comment of the published file, and the cold days' rows in
// its series tables, so that it opens on a laptop with no folder beside it. Written beside its
// destination and renamed over it once whole: a crash leaves the destination as it was.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { silentProgress, type Progress } from '../progress.js';
import { materializeCold, publishedSearchPath } from './cold.js';
import { fsyncPath } from './disk.js';
import { openDuckDB } from './duckdb.js';
import { WAREHOUSE_INFO, writeWarehouseInfo } from './info.js';
import { quoteIdentifier, quoteLiteral } from './sql.js';

export interface SnapshotOptions {
  /** The published warehouse. */
  published: string;
  out: string;
  /** Only valid times in [from, to) of the series tables (epoch ms); null: no bound. */
  from: number | null;
  to: number | null;
  /** Only these tables (and the views and macros that read nothing else); null: every one. */
  tables: readonly string[] | null;
  memoryLimit: string | null;
  now: number;
  /** Counts the rows of each series table as they are copied. */
  progress?: Progress;
}

export interface Snapshot {
  /** Rows of each series table copied. */
  rows: Map<string, number>;
  bytes: number;
  /** The views and table macros left out with the tables they read (`tables`). */
  leftOut: string[];
}

export async function writeSnapshot(options: SnapshotOptions): Promise<Snapshot> {
  if (!existsSync(options.published)) {
    throw new ConfigError(
      `no warehouse at ${options.published}`,
      'run `efsync sync` (or `npm start`) first, or name it with --db',
    );
  }
  const draft = `${options.out}.tmp-${process.pid}`;
  for (const path of [draft, `${draft}.wal`]) rmSync(path, { force: true });
  const duck = await openDuckDB(':memory:', {
    memoryLimit: options.memoryLimit,
    fileSearchPath: publishedSearchPath(options.published),
  });
  let rows: Map<string, number>;
  let leftOut: string[] = [];
  try {
    const run = (sql: string) => duck.connection.run(sql);
    await run(`ATTACH ${quoteLiteral(options.published)} AS published (READ_ONLY)`);
    await run(`ATTACH ${quoteLiteral(draft)} AS snapshot`);
    await run('COPY FROM DATABASE published TO snapshot');
    await run('USE snapshot');
    if (options.tables !== null) leftOut = await keepOnly(duck.connection, options.tables);
    rows = await materializeCold(duck.connection, 'published', options, options.progress ?? silentProgress);
    await writeWarehouseInfo(duck.connection, {
      kind: 'snapshot',
      takenAt: options.now,
      validFrom: options.from,
      validTo: options.to,
      source: resolve(options.published),
      coldFolder: null,
    });
    await run('CHECKPOINT snapshot');
    await run('USE memory');
    await run('DETACH snapshot');
  } catch (error) {
    duck.close();
    rmSync(draft, { force: true });
    throw error;
  }
  duck.close();
  fsyncPath(draft, 'r');
  renameSync(draft, options.out);
  return { rows, bytes: statSync(options.out).size, leftOut };
}

type Connection = Awaited<ReturnType<typeof openDuckDB>>['connection'];

/**
 * Drops from the copy every table not in `tables` (a series table's view with its hot table),
 * then every view and table macro that no longer binds for lack of one. Returns those left out.
 * A name that is no table of the published file is an error listing the names there are.
 */
async function keepOnly(connection: Connection, tables: readonly string[]): Promise<string[]> {
  const all = async <T>(sql: string) => (await connection.runAndReadAll(sql)).getRowObjectsJS() as T[];
  const relations = await all<{ name: string; kind: 'TABLE' | 'VIEW' }>(
    `SELECT table_name AS name, 'TABLE' AS kind FROM duckdb_tables() WHERE database_name = 'snapshot' AND NOT internal
     UNION ALL SELECT view_name, 'VIEW' FROM duckdb_views() WHERE database_name = 'snapshot' AND NOT internal`,
  );
  const names = new Set(relations.filter((r) => r.kind === 'TABLE').map((r) => r.name));
  const seriesViews = relations.filter((r) => r.kind === 'VIEW' && names.has(`${r.name}_hot`)).map((r) => r.name);
  const hotTables = new Set(seriesViews.map((name) => `${name}_hot`));
  const tableNames = [...names].filter((name) => !hotTables.has(name));
  const known = new Set([...tableNames, ...seriesViews]);
  const unknown = tables.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new ConfigError(
      `--tables: no table ${unknown.map((name) => JSON.stringify(name)).join(', ')} in the published warehouse`,
      `its tables: ${[...known].sort().join(', ')}`,
    );
  }
  const keep = new Set([...tables, WAREHOUSE_INFO]);
  for (const name of seriesViews.filter((name) => !keep.has(name))) {
    await connection.run(`DROP VIEW ${quoteIdentifier(name)}`);
    await connection.run(`DROP TABLE ${quoteIdentifier(`${name}_hot`)}`);
  }
  for (const name of tableNames.filter((name) => !keep.has(name))) {
    await connection.run(`DROP TABLE ${quoteIdentifier(name)}`);
  }
  return dropUnbound(connection, all);
}

/** Drops the views and table macros that fail to bind for a missing table, until none does. */
async function dropUnbound(connection: Connection, all: <T>(sql: string) => Promise<T[]>): Promise<string[]> {
  const dropped: string[] = [];
  for (;;) {
    const objects = await all<{ name: string; kind: 'VIEW' | 'MACRO TABLE'; parameters: number }>(
      `SELECT view_name AS name, 'VIEW' AS kind, 0 AS parameters FROM duckdb_views()
         WHERE database_name = 'snapshot' AND NOT internal
       UNION ALL
       SELECT function_name, 'MACRO TABLE', len(parameters) FROM duckdb_functions()
         WHERE database_name = 'snapshot' AND function_type = 'table_macro' AND NOT internal`,
    );
    const failing: typeof objects = [];
    for (const object of objects) {
      const from =
        object.kind === 'VIEW'
          ? quoteIdentifier(object.name)
          : `${quoteIdentifier(object.name)}(${Array(object.parameters).fill('NULL').join(', ')})`;
      try {
        await connection.run(`SELECT * FROM ${from} LIMIT 0`);
      } catch (error) {
        if (/^Catalog Error/.test((error as Error).message)) failing.push(object);
        else throw error;
      }
    }
    if (failing.length === 0) return dropped;
    for (const object of failing) {
      await connection.run(`DROP ${object.kind} ${quoteIdentifier(object.name)}`);
      dropped.push(object.name);
    }
  }
}
