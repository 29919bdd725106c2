// efsync's Delta writer (src/lake/delta/): a table created, written, rewritten copy-on-write and
// checkpointed (txn actions kept) reads back through efsync's reader and through pyarrow from
// the log's file list; writers racing in separate processes get contiguous versions and lose no
// add; a conflicting plan (a file it read removed, or adds the caller judges to hold its keys)
// is refused; a writer killed at every step of a commit leaves a table that reads, and its rerun
// completes.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeltaConflictError } from '../src/errors.js';
import { commit } from '../src/lake/delta/commit.js';
import { checkpointIfDue } from '../src/lake/delta/checkpoint-write.js';
import { writeDataFiles } from '../src/lake/delta/files.js';
import { checkpointName, commitName, listLog, logDir } from '../src/lake/delta/log.js';
import { filePath, snapshotSql } from '../src/lake/delta/scan.js';
import { readSnapshot } from '../src/lake/delta/snapshot.js';
import { ensureTable, type TableDefinition } from '../src/lake/delta/table.js';
import { openDuckDB, type DuckDBHandle } from '../src/warehouse/duckdb.js';
import { tempDir } from './sync-support.js';
import { builtChild } from './built.js';
import { needTool, titled } from './tools.js';

const DEFINITION: TableDefinition = {
  columns: [
    { name: 'site_id', type: 'VARCHAR', comment: 'the site' },
    { name: 'valid_time', type: 'TIMESTAMP WITH TIME ZONE' },
    { name: 'value', type: 'DOUBLE' },
    { name: 'month', type: 'VARCHAR' },
  ],
  partitionColumns: ['month'],
};

/** Rows in each commit of test/lake-delta-child.ts. */
const ROWS = 3;

let db: DuckDBHandle;

beforeAll(async () => {
  db = await openDuckDB(':memory:');
});

afterAll(() => {
  db?.close();
});

async function newTable(): Promise<string> {
  const table = join(tempDir('delta-write-'), 'series');
  await ensureTable(db.connection, table, DEFINITION);
  return table;
}

/** Writes `rows` (site, ISO instant, value) as new files and commits their adds; the add actions. */
async function append(table: string, rows: [string, string, number][], readVersion?: number) {
  const values = rows.map(([s, t, v]) => `('${s}', TIMESTAMPTZ '${t}', ${v})`).join(', ');
  const adds = await writeDataFiles(db.connection, {
    table,
    query: `SELECT site_id, valid_time, value, strftime(valid_time, '%Y-%m') AS month FROM (VALUES ${values}) v(site_id, valid_time, value)`,
    partitionColumns: ['month'],
    prefix: 'part-test',
    statsColumns: ['site_id', 'valid_time'],
    dataChange: true,
    staging: join(table, '..', '_staging'),
  });
  const version = readVersion ?? (await readSnapshot(db.connection, table)).version;
  await commit({ table, readVersion: version, operation: 'WRITE', actions: adds.map((add) => ({ add })) });
  return adds;
}

async function rows(table: string, version?: number): Promise<string[]> {
  const snapshot = await readSnapshot(db.connection, table, version);
  const sql = `SELECT site_id || ' ' || strftime(valid_time, '%Y-%m-%dT%H:%M:%SZ') || ' ' || value || ' ' || month AS row FROM (${snapshotSql(snapshot)}) ORDER BY ALL`;
  return (await db.connection.runAndReadAll(sql)).getRowObjectsJS().map((r) => String(r.row));
}

describe('a Delta table efsync writes', () => {
  it('is created with protocol 1/2 and the schema in Spark JSON, partitioned by month', async () => {
    const table = await newTable();
    const first = readFileSync(join(logDir(table), commitName(0)), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(first[0].commitInfo).toMatchObject({ operation: 'CREATE TABLE', txnId: expect.any(String) });
    expect(first[1]).toEqual({ protocol: { minReaderVersion: 1, minWriterVersion: 2 } });
    const { metaData } = first[2];
    expect(metaData).toMatchObject({
      format: { provider: 'parquet' },
      partitionColumns: ['month'],
      id: expect.any(String),
    });
    expect(
      JSON.parse(metaData.schemaString).fields.map((f: { name: string; type: string }) => [f.name, f.type]),
    ).toEqual([
      ['site_id', 'string'],
      ['valid_time', 'timestamp'],
      ['value', 'double'],
      ['month', 'string'],
    ]);
    expect(await ensureTable(db.connection, table, DEFINITION)).toEqual({ version: 0, change: 'none' });
    const wider = { ...DEFINITION, columns: [...DEFINITION.columns, { name: 'capacity', type: 'DOUBLE' }] };
    expect(await ensureTable(db.connection, table, wider)).toEqual({ version: 1, change: 'evolved' });
    expect((await readSnapshot(db.connection, table)).schema.fields.map((f) => f.name)).toContain('capacity');
  });

  it('reads back what it appended, the month from partitionValues, with stats of the key and time columns', async () => {
    const table = await newTable();
    const adds = await append(table, [
      ['a', '2026-10-31 23:00:00+00', 1.5],
      ['b', '2026-11-01 00:00:00+00', 2],
      ['a', '2026-11-02 12:00:00+00', 3],
    ]);
    expect(adds.map((a) => a.partitionValues).sort((x, y) => String(x.month).localeCompare(String(y.month)))).toEqual([
      { month: '2026-10' },
      { month: '2026-11' },
    ]);
    const november = adds.find((a) => a.partitionValues.month === '2026-11');
    expect(november?.path).toMatch(/^month=2026-11\/part-test-[0-9a-f]{8}-\d+\.parquet$/);
    expect(JSON.parse(november?.stats ?? '{}')).toEqual({
      numRecords: 2,
      minValues: { site_id: 'a', valid_time: '2026-11-01T00:00:00.000Z' },
      maxValues: { site_id: 'b', valid_time: '2026-11-02T12:00:00.000Z' },
      nullCount: { site_id: 0, valid_time: 0 },
    });
    expect(await rows(table)).toEqual([
      'a 2026-10-31T23:00:00Z 1.5 2026-10',
      'a 2026-11-02T12:00:00Z 3.0 2026-11',
      'b 2026-11-01T00:00:00Z 2.0 2026-11',
    ]);
  });

  it('rewrites copy-on-write: the remove and the add in one commit, the old version still readable', async () => {
    const table = await newTable();
    const [old] = await append(table, [['a', '2026-11-01 00:00:00+00', 1]]);
    const before = await readSnapshot(db.connection, table);
    const [rewritten] = await writeDataFiles(db.connection, {
      table,
      query: `SELECT 'a' AS site_id, TIMESTAMPTZ '2026-11-01 00:00:00+00' AS valid_time, 9.0 AS value, '2026-11' AS month`,
      partitionColumns: ['month'],
      prefix: 'part-test',
      statsColumns: ['site_id'],
      dataChange: true,
      staging: join(table, '..', '_staging'),
    });
    const done = await commit({
      table,
      readVersion: before.version,
      operation: 'UPDATE',
      readFiles: [old.path],
      actions: [{ remove: { path: old.path, deletionTimestamp: Date.now(), dataChange: true } }, { add: rewritten }],
    });
    expect(done.version).toBe(before.version + 1);
    expect(await rows(table)).toEqual(['a 2026-11-01T00:00:00Z 9.0 2026-11']);
    expect(await rows(table, before.version)).toEqual(['a 2026-11-01T00:00:00Z 1.0 2026-11']);
  });

  it('refuses a commit planned on a file another commit removed meanwhile (DeltaConflictError); appends never conflict', async () => {
    const table = await newTable();
    const [file] = await append(table, [['a', '2026-11-01 00:00:00+00', 1]]);
    const planned = (await readSnapshot(db.connection, table)).version;
    await commit({
      table,
      readVersion: planned,
      operation: 'DELETE',
      actions: [{ remove: { path: file.path, deletionTimestamp: Date.now(), dataChange: true } }],
    });
    await append(table, [['b', '2026-11-01 00:00:00+00', 2]], planned);
    const refused = commit({
      table,
      readVersion: planned,
      operation: 'UPDATE',
      readFiles: [file.path],
      actions: [{ remove: { path: file.path, deletionTimestamp: Date.now(), dataChange: true } }],
    });
    await expect(refused).rejects.toBeInstanceOf(DeltaConflictError);
    await expect(refused).rejects.toThrow(`version ${planned + 1}`);
    expect(listLog(table).commits).toEqual([0, 1, 2, 3]);
    expect(readdirSync(logDir(table)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it("refuses a commit whose `conflicts` judges another writer's adds, landed first, to hold rows it supersedes", async () => {
    const table = await newTable();
    const planned = (await readSnapshot(db.connection, table)).version;
    const [theirs] = await append(table, [['a', '2026-11-01 00:00:00+00', 1]], planned);
    const judged: string[] = [];
    const refused = commit({
      table,
      readVersion: planned,
      operation: 'MERGE',
      actions: [],
      conflicts: async (adds) => {
        judged.push(...adds.map((a) => a.path));
        return 'it added a key this commit supersedes';
      },
    });
    await expect(refused).rejects.toBeInstanceOf(DeltaConflictError);
    await expect(refused).rejects.toThrow('it added a key this commit supersedes');
    expect(judged).toEqual([theirs.path]);
    // Judged harmless, the commit lands at the next version.
    const done = await commit({
      table,
      readVersion: planned,
      operation: 'WRITE',
      actions: [],
      conflicts: async () => null,
    });
    expect(done.version).toBe(planned + 2);
  });

  it('recognises its own commit by its transaction id when the link landed but its outcome was lost', async () => {
    const table = await newTable();
    const txnId = 'retried-commit';
    const actions = [{ txn: { appId: 'efsync-test', version: 1 } }];
    // What a link that landed leaves when its reply was lost (an NFS retry then answers EEXIST).
    writeFileSync(
      join(logDir(table), commitName(1)),
      [{ commitInfo: { timestamp: Date.now(), operation: 'WRITE', txnId } }, ...actions]
        .map((a) => `${JSON.stringify(a)}\n`)
        .join(''),
    );
    expect(await commit({ table, readVersion: 0, operation: 'WRITE', actions, txnId })).toMatchObject({
      version: 1,
      retries: 0,
    });
    expect(listLog(table).commits).toEqual([0, 1]);
    // Another id at that version is another writer's commit: this one lands at the next.
    expect((await commit({ table, readVersion: 0, operation: 'WRITE', actions })).version).toBe(2);
  });

  it('writes a checkpoint every 10 commits that reads as the commits do, and readers start from it', async () => {
    const table = await newTable();
    for (let i = 0; i < 9; i++) await append(table, [[`s${i}`, '2026-11-01 00:00:00+00', i]]);
    expect(await checkpointIfDue(db.connection, table)).toBeNull();
    const [gone] = await append(table, [['s9', '2026-11-01 00:00:00+00', 9]]);
    await commit({
      table,
      readVersion: 10,
      operation: 'DELETE',
      actions: [
        { txn: { appId: 'efsync-s0of1-series', version: 3, lastUpdated: 1 } },
        { remove: { path: gone.path, deletionTimestamp: Date.now(), dataChange: true } },
      ],
    });
    expect(await checkpointIfDue(db.connection, table)).toBe(11);
    expect(JSON.parse(readFileSync(join(logDir(table), '_last_checkpoint'), 'utf8'))).toEqual({
      version: 11,
      size: 13,
    });
    const fromCheckpoint = await readSnapshot(db.connection, table);
    expect(fromCheckpoint.tombstones.size).toBe(1);
    const expected = await rows(table);
    expect(expected).toHaveLength(9);
    // Without the commits before it, the checkpoint alone holds the table.
    for (let v = 0; v <= 11; v++) rmSync(join(logDir(table), commitName(v)));
    expect(await rows(table)).toEqual(expected);
    expect(listLog(table).checkpoints).toEqual([{ version: 11, files: [checkpointName(11)] }]);
    // The checkpoint keeps the txn actions: a shard's run number survives the commits it replaces.
    expect((await readSnapshot(db.connection, table)).txns.get('efsync-s0of1-series')).toEqual({
      appId: 'efsync-s0of1-series',
      version: 3,
      lastUpdated: 1,
    });
  });
});

const CHILD = [builtChild('test/lake-delta-child.ts')];

function runChild(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; signal: string | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CHILD, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, out }));
  });
}

describe('writers in separate processes', () => {
  it('four racing writers: contiguous versions, every add kept', async () => {
    const table = await newTable();
    const results = await Promise.all(['w0', 'w1', 'w2', 'w3'].map((w) => runChild([table, w, '4'])));
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
    const versions = results.flatMap((r) => [...r.out.matchAll(/committed (\d+)/g)].map((m) => Number(m[1])));
    expect(versions.sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(listLog(table).commits).toEqual(Array.from({ length: 17 }, (_, i) => i));
    const snapshot = await readSnapshot(db.connection, table);
    expect(snapshot.files.size).toBe(16);
    expect(await rows(table)).toHaveLength(16 * ROWS);
  }, 120_000);

  for (const point of ['delta-files', 'delta-temp', 'delta-linked', 'delta-checkpoint']) {
    it(`a writer killed at ${point} leaves a table that reads, and its rerun completes`, async () => {
      const table = await newTable();
      // Nine commits first, so the killed writer's tenth is the one that makes a checkpoint due.
      expect((await runChild([table, 'w0', '9'])).code).toBe(0);
      const killed = await runChild([table, 'w1', '1', 'checkpoint'], { EFSYNC_FAULT_POINT: point });
      expect(killed.signal).toBe('SIGKILL');
      const landed = point === 'delta-linked' || point === 'delta-checkpoint' ? 1 : 0;
      expect(await rows(table)).toHaveLength((9 + landed) * ROWS);
      const rerun = await runChild([table, 'w1', '1', 'checkpoint']);
      expect(rerun.code).toBe(0);
      expect(await rows(table)).toHaveLength((10 + landed) * ROWS);
      expect(listLog(table).commits).toEqual(Array.from({ length: 11 + landed }, (_, i) => i));
      // Killed after its checkpoint and before _last_checkpoint, the checkpoint at 10 stands; otherwise
      // the rerun's commit is the tenth since none and writes it.
      expect(listLog(table).checkpoints.at(-1)?.version).toBe(point === 'delta-checkpoint' ? 10 : 10 + landed);
    }, 120_000);
  }
});

const pyarrow = needTool('pyarrow');

describe.skipIf(!pyarrow)('pyarrow, an independent reader, reading the files of the active snapshot', () => {
  it(titled('gives the same rows as efsync reads', 'pyarrow', pyarrow), async () => {
    const table = await newTable();
    const [old] = await append(table, [
      ['a', '2026-10-31 23:00:00+00', 1],
      ['b', '2026-11-01 00:00:00+00', 2],
    ]);
    await append(table, [['c', '2026-11-05 06:00:00+00', 3]]);
    const planned = await readSnapshot(db.connection, table);
    await commit({
      table,
      readVersion: planned.version,
      operation: 'DELETE',
      actions: [{ remove: { path: old.path, deletionTimestamp: Date.now(), dataChange: true } }],
    });
    const snapshot = await readSnapshot(db.connection, table);
    const files = [...snapshot.files.values()].map((f) => ({
      file: filePath(table, f),
      partitionValues: f.partitionValues,
    }));
    const script = `
import json, sys, pyarrow.parquet as pq
out = []
for f in json.load(sys.stdin):
    for r in pq.read_table(f['file']).to_pylist():
        out.append(f"{r['site_id']} {r['valid_time'].strftime('%Y-%m-%dT%H:%M:%SZ')} {float(r['value'])} {f['partitionValues']['month']}")
print(json.dumps(sorted(out)))`;
    const read = spawnSync('python3', ['-c', script], { input: JSON.stringify(files), encoding: 'utf8' });
    expect(read.stderr).toBe('');
    expect(JSON.parse(read.stdout)).toEqual(await rows(table));
    expect(await rows(table)).toHaveLength(2);
  });
});
