// A self-contained copy of the published warehouse (`efsync snapshot`): one DuckDB file with every
// table, analyst view, table macro and comment of the published file, and the cold days' rows in
// its series tables, so that it opens on a laptop with no folder beside it. Written beside its
// destination and renamed over it once whole: a crash leaves the destination as it was.
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { materializeCold } from './cold.js';
import { fsyncPath } from './disk.js';
import { openDuckDB } from './duckdb.js';
import { instantLiteral, quoteLiteral } from './sql.js';

export interface SnapshotOptions {
  /** The published warehouse. */
  published: string;
  out: string;
  /** Only valid times in [from, to) of the series tables (epoch ms); null: no bound. */
  from: number | null;
  to: number | null;
  memoryLimit: string | null;
  now: number;
  /** Told as each series table is copied, with its rows. */
  tableDone?: (table: string, rows: number) => void;
}

export interface Snapshot {
  /** Rows of each series table copied. */
  rows: Map<string, number>;
  bytes: number;
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
  const duck = await openDuckDB(':memory:', { memoryLimit: options.memoryLimit });
  let rows: Map<string, number>;
  try {
    const run = (sql: string) => duck.connection.run(sql);
    await run(`ATTACH ${quoteLiteral(options.published)} AS published (READ_ONLY)`);
    await run(`ATTACH ${quoteLiteral(draft)} AS snapshot`);
    await run('COPY FROM DATABASE published TO snapshot');
    await run('USE snapshot');
    rows = await materializeCold(duck.connection, 'published', options, options.tableDone);
    await run(
      `CREATE TABLE snapshot_info AS SELECT ${instantLiteral(options.now)} AS taken_at,
         ${quoteLiteral(resolve(options.published))} AS source,
         ${options.from === null ? 'NULL::TIMESTAMPTZ' : instantLiteral(options.from)} AS valid_from,
         ${options.to === null ? 'NULL::TIMESTAMPTZ' : instantLiteral(options.to)} AS valid_to`,
    );
    await run(
      `COMMENT ON TABLE snapshot_info IS ${quoteLiteral('When this copy was taken (efsync snapshot), from which published warehouse, and the window of valid times its series hold: NULL bounds, the full history')}`,
    );
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
  return { rows, bytes: statSync(options.out).size };
}
