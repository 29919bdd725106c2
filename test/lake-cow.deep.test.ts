// Copy-on-write shards (docs/lake.md, "The commit protocol"): four shard processes and `lake
// compact` processes running at once, at three clock times (the emulator revising provisional
// actuals in between) and after the number of shards changed, leave Delta tables whose active
// snapshot, read raw (the files the log lists, no newest-per-key resolution) by efsync's replay
// of the log and by pyarrow, equals the single-writer warehouse table by table, row for row. A
// shard SIGKILLed at each step of a copy-on-write commit leaves tables every reader reads, with
// one row per key, and its rerun completes them.
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commitOrder, commitToLake, txnAppId } from '../src/lake/commit.js';
import { listLog, readCommit } from '../src/lake/delta/log.js';
import { readSnapshot } from '../src/lake/delta/snapshot.js';
import { ensureLake, tableDir } from '../src/lake/layout.js';
import { seedFromLake } from '../src/lake/seed.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { warehouseSchema } from '../src/lake/schema.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import {
  CLOCK_STEPS,
  cli,
  extraRowsPerKey,
  hasPyarrow,
  lakeConfigFile,
  rawComparison,
  shard,
  type ShardExit,
} from './lake-support.js';
import { DATA_TABLES, emuForFile, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

const SITES = 12;
const HOUR = 3_600_000;
const TABLES = [
  ...DATA_TABLES,
  'actuals_by_type',
  'actual_revisions_by_type',
  'actual_flags',
  'interval_labels',
  'quality_flags',
  'sync_state',
];

let clock = NOW;
const served = emuForFile({ sites: SITES, now: () => clock });

function expectOk(runs: ShardExit[]): void {
  const problems = runs.flatMap((r) => (r.code === 0 ? [] : r.problems)).join('\n');
  expect(
    runs.map((r) => r.code),
    problems,
  ).toEqual(runs.map(() => 0));
}

/** Per table, whether the newest commit removes a file with dataChange true (a copy-on-write). */
function rewrote(lake: string, table: string, after: number): boolean {
  return listLog(tableDir(lake, table))
    .commits.filter((v) => v > after)
    .some((v) => readCommit(tableDir(lake, table), v).some((a) => 'remove' in a && a.remove.dataChange));
}

describe('copy-on-write shards', () => {
  it('a shard seeded before another committed the same keys rewrites that file: one row per key; txn versions count runs', async () => {
    const dir = tempDir('efsync-lake-cow-seed-');
    const lake = join(dir, 'lake');
    await ensureLake(lake);
    const open = (name: string) =>
      Warehouse.open({ path: join(dir, `${name}.duckdb`), lockWaitMs: 0, holder: { job: 'test', runId: name } });
    const [a, b] = [await open('a'), await open('b')];
    try {
      // Both seeded from the empty lake: each holds the migration's interval_labels and quality_flags as new.
      for (const [warehouse, index] of [
        [a, 0],
        [b, 1],
      ] as const)
        await seedFromLake(warehouse, lake, { shard: { index, count: 2 }, lookback: 0 });
      const first = await commitToLake(a, { lake, who: 's0of2', shard: { index: 0, count: 2 }, runId: 'ra' });
      expect(first).toMatchObject({ removed: 0, run: 1 });
      const second = await commitToLake(b, { lake, who: 's1of2', shard: { index: 1, count: 2 }, runId: 'rb' });
      expect(second).toMatchObject({ removed: 2, run: 1 });
      expect(await extraRowsPerKey(lake)).toMatchObject({ interval_labels: 0, quality_flags: 0 });
      // The shard's next run, seeded from the lake, changes one label: the file holding it is rewritten.
      const next = await open('a2');
      try {
        await seedFromLake(next, lake, { shard: { index: 0, count: 2 }, lookback: 0 });
        await next.run("UPDATE interval_labels SET label = 'ending' WHERE resource = 'actuals'");
        const third = await commitToLake(next, { lake, who: 's0of2', shard: { index: 0, count: 2 }, runId: 'ra2' });
        expect(third).toMatchObject({ rows: { interval_labels: 2 }, removed: 1, run: 2 });
      } finally {
        await next.close();
      }
      expect(await extraRowsPerKey(lake)).toMatchObject({ interval_labels: 0 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('four shard processes and compactions at once leave tables whose raw snapshot equals the single writer, at three clock times and when N changes', async ({
    annotate,
  }) => {
    const dir = tempDir('efsync-lake-cow-');
    const lake = join(dir, 'lake');
    const configFile = lakeConfigFile(dir, lake, served.emu.url);
    const single = testConfig({ dir, url: served.emu.url, db: join(dir, 'single.duckdb'), sync: { concurrency: 2 } });
    expect((await cli(['lake', 'init', '--lake', lake])).code).toBe(0);

    for (const [step, count] of CLOCK_STEPS) {
      clock = NOW + step * HOUR;
      expect((await runSync(single, {}, clock)).status).toBe('ok');
      const specs = Array.from({ length: count }, (_, i) => `${i}/${count}`);
      let running = true;
      const shards = Promise.all(specs.map((spec) => shard(configFile, spec, { now: clock }))).finally(() => {
        running = false;
      });
      // Compactions one after another for as long as the shards run: each races their commits.
      const compactions: (number | null)[] = [];
      do compactions.push((await cli(['lake', 'compact', '--lake', lake])).code);
      while (running);
      expectOk(await shards);
      expect(compactions.every((code) => code === 0)).toBe(true);

      const raw = await rawComparison(lake, single.warehouse.path, TABLES, dir);
      expect(raw.delta, `after step ${step}`).toEqual(raw.expected);
      if (raw.pyarrow) expect(raw.pyarrow, `pyarrow, after step ${step}`).toEqual(raw.expected);
    }
    if (!hasPyarrow)
      await annotate('pyarrow missing (python3 -m pip install pyarrow): read by efsync alone', 'warning');
    // The emulator revised actuals between the clock times, and the shards rewrote files for them.
    const [{ n: revised }] = await query<{ n: bigint }>(
      single.warehouse.path,
      'SELECT count(*) AS n FROM actual_revisions',
    );
    expect(Number(revised)).toBeGreaterThan(0);
    expect(rewrote(lake, 'actuals', 0)).toBe(true);
    expect(rewrote(lake, 'sync_state', 0)).toBe(true);
    // Each shard's commits carry its run number: two runs of s0of4, one of s0of3.
    const db = await openDuckDB(':memory:');
    try {
      const txns = (await readSnapshot(db.connection, tableDir(lake, 'sync_state'))).txns;
      expect(txns.get(txnAppId('s0of4', 'sync_state'))?.version).toBe(2);
      expect(txns.get(txnAppId('s0of3', 'sync_state'))?.version).toBe(1);
    } finally {
      db.close();
    }
  }, 900_000);

  it('a shard killed at each step of a copy-on-write commit leaves tables that read with one row per key; its rerun completes them', async () => {
    const dir = tempDir('efsync-lake-cow-kill-');
    const single = testConfig({ dir, url: served.emu.url, db: join(dir, 'single.duckdb'), sync: { concurrency: 2 } });
    const base = join(dir, 'base');
    clock = NOW;
    expect((await runSync(single, {}, clock)).status).toBe('ok');
    expectOk([await shard(lakeConfigFile(dir, base, served.emu.url), '0/1', { now: clock })]);
    const baseVersions = new Map<string, number>();
    const tables = commitOrder((await warehouseSchema()).tables).map((t) => t.name);
    for (const table of tables) baseVersions.set(table, listLog(tableDir(base, table)).commits.at(-1) ?? -1);

    clock = NOW + 3 * HOUR;
    expect((await runSync(single, {}, clock)).status).toBe('ok');
    // A run without faults on a copy: the first of its commits that rewrites files, counted in commit order.
    const reference = join(dir, 'reference');
    cpSync(base, reference, { recursive: true });
    expectOk([await shard(lakeConfigFile(dir, reference, served.emu.url), '0/1', { now: clock })]);
    const committed = tables.filter(
      (t) => (listLog(tableDir(reference, t)).commits.at(-1) ?? -1) > (baseVersions.get(t) ?? -1),
    );
    const target = committed.findIndex((t) => rewrote(reference, t, baseVersions.get(t) ?? -1));
    expect(target).toBeGreaterThanOrEqual(0);
    const table = committed[target];

    for (const point of ['delta-files', 'delta-temp', 'delta-linked']) {
      const lake = join(dir, point);
      cpSync(base, lake, { recursive: true });
      const configFile = lakeConfigFile(dir, lake, served.emu.url);
      const killed = await shard(configFile, '0/1', {
        now: clock,
        env: { EFSYNC_FAULT_POINT: `${point}:${target + 1}` },
      });
      expect(killed.signal, point).toBe('SIGKILL');
      // Only a linked commit landed, and it was the copy-on-write of `table`.
      expect(rewrote(lake, table, baseVersions.get(table) ?? -1), point).toBe(point === 'delta-linked');
      expect(
        Object.values(await extraRowsPerKey(lake)).every((n) => n === 0),
        point,
      ).toBe(true);

      expectOk([await shard(configFile, '0/1', { now: clock })]);
      expect(
        Object.values(await extraRowsPerKey(lake)).every((n) => n === 0),
        point,
      ).toBe(true);
      const raw = await rawComparison(lake, single.warehouse.path, TABLES, dir);
      expect(raw.delta, point).toEqual(raw.expected);
    }
  }, 900_000);
});
