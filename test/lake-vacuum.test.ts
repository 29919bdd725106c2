// `lake vacuum` and `lake init`: a file leaves the disk only when no snapshot of the table holds
// it and it is older than the retention (a compaction's inputs, a killed writer's uncommitted
// files and leftovers); the active files stay whatever their age. `lake init` creates every
// table as a Delta table (protocol 1/2), idempotently.
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commit } from '../src/lake/delta/commit.js';
import { writeDataFiles } from '../src/lake/delta/files.js';
import { logDir } from '../src/lake/delta/log.js';
import { readSnapshot } from '../src/lake/delta/snapshot.js';
import { ensureLake, STAGING_DIR, tableDir } from '../src/lake/layout.js';
import { DEFAULT_RETENTION_MS, vacuumLake } from '../src/lake/vacuum.js';
import { openDuckDB, type DuckDBHandle } from '../src/warehouse/duckdb.js';
import { runCli } from './fixtures/runner-child.js';
import { tempDir } from './sync-support.js';

const DAY = 24 * 3_600_000;
let db: DuckDBHandle;

beforeAll(async () => {
  db = await openDuckDB(':memory:');
});

afterAll(() => {
  db?.close();
});

async function sitesFile(lake: string, id: string) {
  const table = tableDir(lake, 'sites');
  const [add] = await writeDataFiles(db.connection, {
    table,
    query: `SELECT * FROM read_parquet('${join(table, '_schema.parquet')}') UNION ALL BY NAME SELECT '${id}' AS site_id`,
    partitionColumns: [],
    prefix: 'part-test',
    statsColumns: ['site_id'],
    dataChange: true,
    staging: join(lake, STAGING_DIR),
  });
  return add;
}

describe('lake vacuum', () => {
  it('deletes removed and uncommitted files past the retention, never an active one', async () => {
    const lake = join(tempDir('efsync-vacuum-'), 'lake');
    await ensureLake(lake);
    const table = tableDir(lake, 'sites');
    const [kept, removed] = [await sitesFile(lake, 'a'), await sitesFile(lake, 'b')];
    const v = (await readSnapshot(db.connection, table)).version;
    await commit({ table, readVersion: v, operation: 'WRITE', actions: [{ add: kept }, { add: removed }] });
    await commit({
      table,
      readVersion: v + 1,
      operation: 'DELETE',
      actions: [{ remove: { path: removed.path, deletionTimestamp: Date.now(), dataChange: true } }],
    });
    const uncommitted = await sitesFile(lake, 'c');
    writeFileSync(join(logDir(table), '.killed.json.tmp'), '{}');
    mkdirSync(join(lake, STAGING_DIR, 'killed-writer'), { recursive: true });

    expect(await vacuumLake(lake)).toMatchObject({ files: 0, leftovers: 0 });
    for (const add of [kept, removed, uncommitted]) expect(existsSync(join(table, add.path))).toBe(true);

    // Eight days on, everything but the active file is past the 7-day retention.
    const later = Date.now() + DEFAULT_RETENTION_MS + DAY;
    utimesSync(join(table, kept.path), new Date(0), new Date(0));
    expect(await vacuumLake(lake, DEFAULT_RETENTION_MS, later)).toMatchObject({ files: 2, leftovers: 2 });
    expect(existsSync(join(table, kept.path))).toBe(true);
    expect(existsSync(join(table, removed.path))).toBe(false);
    expect(existsSync(join(table, uncommitted.path))).toBe(false);
    expect((await readSnapshot(db.connection, table)).files.size).toBe(1);
  }, 120_000);
});

describe('lake init (CLI)', () => {
  it('creates every table as a Delta table, then finds nothing to do', async () => {
    const lake = join(tempDir('efsync-init-'), 'lake');
    const first = await runCli(['lake', 'init', '--lake', lake]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/: (\d+) Delta tables, \1 created, 0 given new columns/);
    const forecasts = await readSnapshot(db.connection, tableDir(lake, 'forecasts'));
    expect(forecasts.protocol).toEqual({ minReaderVersion: 1, minWriterVersion: 2 });
    expect(forecasts.metadata.partitionColumns).toEqual(['month']);
    const again = await runCli(['lake', 'init', '--lake', lake]);
    expect(again.stdout).toMatch(/, 0 created, 0 given new columns/);
    const vacuum = await runCli(['lake', 'vacuum', '--lake', lake, '--retain', 'soon']);
    expect(vacuum.code).toBe(2);
    expect(vacuum.stderr).toMatch(/--retain: not a duration/);
  }, 120_000);
});
