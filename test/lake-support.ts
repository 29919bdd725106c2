// Helpers of the lake tests: shard and CLI processes, and the lake's tables read RAW (the active
// files of each Delta log, as any Delta engine reads them: no newest-per-key resolution) by
// efsync's protocol replay and by pyarrow, compared row for row with a single-writer warehouse.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { filePath, snapshotSql } from '../src/lake/delta/scan.js';
import { readSnapshot } from '../src/lake/delta/snapshot.js';
import { tableDir } from '../src/lake/layout.js';
import { warehouseSchema } from '../src/lake/schema.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { quoteIdentifier, quoteLiteral } from '../src/warehouse/sql.js';
import { CLI } from './fixtures/runner-child.js';
import { API_KEY, NOW } from './sync-support.js';
import { builtChild } from './built.js';
import { needTool } from './tools.js';

/** A config file of a lake sink against the emulator at `url`. */
export function lakeConfigFile(dir: string, lake: string, url: string): string {
  const keyFile = join(dir, 'api-key');
  writeFileSync(keyFile, API_KEY);
  const file = join(dir, 'lake.json');
  writeFileSync(
    file,
    JSON.stringify({
      service: { base_url: url, api_key_file: keyFile },
      warehouse: { path: join(dir, 'unused.duckdb'), lock_wait: '5s' },
      sink: 'parquet',
      lake,
      sync: { concurrency: 2, initial_history: '3d', lookback: '6h', horizon: '2d' },
      log: { level: 'debug' },
    }),
  );
  return file;
}

export interface ShardExit {
  code: number | null;
  signal: string | null;
  landed: number;
  problems: string[];
}

/**
 * Runs shard `spec` (I/N) of a sync at `now` in a child process (test/lake-child.ts); with
 * `killAfterSites`, SIGKILLs it once that many sites have synced; `env` adds variables
 * (EFSYNC_FAULT_POINT).
 */
export function shard(
  configFile: string,
  spec: string,
  options: { killAfterSites?: number; now?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<ShardExit> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [builtChild('test/lake-child.ts'), configFile, String(options.now ?? NOW), spec],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...options.env } },
    );
    let landed = 0;
    // Warnings, errors and anything not a log line (a crash's stack), to say why a shard did not exit 0.
    const problems: string[] = [];
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (line.includes('"msg":"site synced"')) landed += 1;
      if (!line.startsWith('{"level":') || /^\{"level":[456]0/.test(line)) problems.push(`${spec}: ${line}`);
      if (options.killAfterSites !== undefined && landed >= options.killAfterSites) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, landed, problems }));
  });
}

export function cli(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout }));
  });
}

export const hasPyarrow = needTool('pyarrow');

/** The warehouse's columns of `table` (those of `only` when given), each cast to its type, from alias `t`. */
async function typedColumns(table: string, only?: readonly string[]): Promise<string> {
  const schema = (await warehouseSchema()).tables.find((t) => t.name === table);
  if (!schema) throw new Error(`no table ${table}`);
  return schema.columns
    .filter((c) => !only || only.includes(c.name))
    .map((c) => `CAST(t.${quoteIdentifier(c.name)} AS ${c.type}) AS ${quoteIdentifier(c.name)}`)
    .join(', ');
}

/**
 * The columns compared where a row records its writer's own work: sync_state's run_id and
 * updated_at name the run that wrote it, and actual_flags' checked_at the run that last
 * rechecked the row, which differ between a shard and the single writer.
 */
export const COMPARED: Record<string, readonly string[]> = {
  sync_state: ['site_id', 'resource', 'synced_to', 'last_as_of'],
  actual_flags: ['site_id', 'valid_time', 'flags'],
};

/**
 * Per table: `<rows> rows, <n> differ`, where n counts the rows of the lake's raw active snapshot
 * and of the single warehouse's table that the other lacks (as multisets), read by efsync's
 * replay of the Delta log (src/lake/delta/) and, when `pyarrow` is set, by pyarrow reading the
 * Parquet files the log lists. Equal lakes give `<single's rows> rows, 0 differ` for each reader.
 */
export async function rawComparison(
  lake: string,
  single: string,
  tables: readonly string[],
  scratch: string,
): Promise<{
  delta: Record<string, string>;
  pyarrow: Record<string, string> | null;
  expected: Record<string, string>;
}> {
  const db = await openDuckDB(':memory:');
  const delta: Record<string, string> = {};
  const arrow: Record<string, string> = {};
  const expected: Record<string, string> = {};
  try {
    await db.connection.run(`ATTACH ${quoteLiteral(single)} AS single (READ_ONLY)`);
    const count = async (sql: string) =>
      Number((await db.connection.runAndReadAll(sql)).getRowObjectsJS()[0].n as bigint);
    for (const table of tables) {
      const columns = await typedColumns(table, COMPARED[table]);
      const want = `SELECT ${columns} FROM single.main.${quoteIdentifier(table)} t`;
      const differ = (got: string) =>
        `SELECT count(*) AS n FROM ((${got} EXCEPT ALL ${want}) UNION ALL (${want} EXCEPT ALL ${got}))`;
      const compare = async (got: string) =>
        `${await count(`SELECT count(*) AS n FROM (${got})`)} rows, ${await count(differ(got))} differ`;
      const rows = await count(`SELECT count(*) AS n FROM (${want})`);
      expected[table] = `${rows} rows, 0 differ`;
      const snapshot = await readSnapshot(db.connection, tableDir(lake, table));
      delta[table] = await compare(`SELECT ${columns} FROM (${snapshotSql(snapshot)}) t`);
      if (!hasPyarrow) continue;
      const files = [...snapshot.files.values()].map((f) => filePath(snapshot.table, f));
      const out = join(scratch, `pyarrow-${table}.parquet`);
      const read = spawnSync('python3', ['-c', PYARROW_READ, out], { input: JSON.stringify(files), encoding: 'utf8' });
      if (read.status !== 0) throw new Error(`pyarrow reading ${table}: ${read.stderr}`);
      arrow[table] =
        read.stdout.trim() === 'empty'
          ? `0 rows, ${rows} differ`
          : await compare(`SELECT ${columns} FROM read_parquet(${quoteLiteral(out)}) t`);
    }
  } finally {
    db.close();
  }
  return { delta, pyarrow: hasPyarrow ? arrow : null, expected };
}

/**
 * pyarrow alone reads the files the log lists (stdin: JSON list of paths) and writes their rows,
 * concatenated, to argv[1] for DuckDB to compare; prints `empty` when the list is.
 */
const PYARROW_READ = `
import json, sys, pyarrow as pa, pyarrow.parquet as pq
files = json.load(sys.stdin)
if not files:
    print('empty')
else:
    table = pa.concat_tables([pq.read_table(f) for f in files], promote_options='default')
    pq.write_table(table, sys.argv[1])
    print(table.num_rows)
`;

/**
 * Per table whose rows have a key (tables.ts `latest`, seeded), the rows of the raw active
 * snapshot beyond one per key: 0 everywhere when no superseded row is active.
 */
export async function extraRowsPerKey(lake: string): Promise<Record<string, number>> {
  const db = await openDuckDB(':memory:');
  const extra: Record<string, number> = {};
  try {
    for (const table of (await warehouseSchema()).tables) {
      if (table.resolve.kind !== 'latest' || table.seed === 'none') continue;
      const key = table.resolve.key.map(quoteIdentifier).join(', ');
      const snapshot = await readSnapshot(db.connection, tableDir(lake, table.name));
      const [row] = (
        await db.connection.runAndReadAll(
          `SELECT count(*) - count(DISTINCT struct_pack(${key})) AS n FROM (${snapshotSql(snapshot)})`,
        )
      ).getRowObjectsJS();
      extra[table.name] = Number(row.n as bigint);
    }
  } finally {
    db.close();
  }
  return extra;
}

/** The lake tests' three clock times (hours after NOW) and the shard count at each: N changes from 4 to 3 at the last. */
export const CLOCK_STEPS = [
  [0, 4],
  [3, 4],
  [7, 3],
] as const;
