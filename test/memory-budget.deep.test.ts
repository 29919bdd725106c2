// A real night (the embedded emulator's demo sites, two days deep) under a memory budget given
// by --memory, and under one read from a cgroup's limit (EFSYNC_CGROUP_ROOT, a folder shaped as
// /sys/fs/cgroup): each exits 0, the log line after `run started` says the sizes it took, and `efsync status`
// shows the same. The budget's sources and arithmetic: memory-budget.test.ts.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { handBackPool } from '../src/warehouse/executor.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { tempDir } from './sync-support.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'efsync.js');

/** A night, its log as JSON lines, and the status of its warehouse after it, under `env` and `args`. */
async function night(args: string[], env: Record<string, string>) {
  const dir = tempDir();
  const config = join(dir, 'efsync.yaml');
  writeFileSync(config, 'sync:\n  initial_history: 2d\n');
  const db = join(dir, 'warehouse.duckdb');
  const childEnv = { ...process.env, EFSYNC_BASE_URL: '', EFSYNC_MEMORY: '', ...env };
  const common = ['--config', config, '--db', db, ...args];
  const ran = await run(process.execPath, [BIN, 'run', 'nightly', '--log-format', 'json', ...common], {
    cwd: dir,
    env: childEnv,
  });
  const status = await run(process.execPath, [BIN, 'status', '--json', ...common], { cwd: dir, env: childEnv });
  const started = ran.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((entry) => String(entry.msg).startsWith('memory budget'));
  return { stdout: ran.stdout, started, status: JSON.parse(status.stdout) };
}

describe('a night under a memory budget', () => {
  it('--memory 256MB: DuckDB, the heap and the rows take their shares of it, and the night exits 0', async () => {
    const { stdout, started, status } = await night(['--memory', '256MB'], { EFSYNC_CGROUP_ROOT: '/nonexistent' });
    expect(stdout).toMatch(/nightly run \S+: ok \(exit 0\)/);
    const expected = {
      budget: { bytes: 256e6, source: '--memory' },
      heapMb: 122,
      allocatorDecayMs: 0,
      duckdb: { warehouse: '41MB', sync: '41MB', accuracy: '61MB' },
    };
    expect(started.memory).toMatchObject(expected);
    expect(started.memory.rows).toMatchObject({ syncInMemory: 126_667, accuracyBatchPoints: 63_333 });
    expect(started.msg).toContain('memory budget 256MB (--memory): V8 heap 122MiB (this process: ');
    expect(started.msg).toContain('DuckDB 41MB outside the steps, 41MB syncing, 61MB scoring');
    // Node 22.15+ restarts with the budget's cap; Node 20 cannot, and says so
    const cap = 'execve' in process ? '122MiB' : 'uncapped, Node before 22.15';
    expect(started.msg).toContain(`V8 heap 122MiB (this process: ${cap})`);
    expect(status.memory).toEqual(started.memory);
  });

  it("a cgroup's limit (v2's memory.max, 384 MiB) is the budget when nothing else sets one", async () => {
    const cgroup = tempDir();
    writeFileSync(join(cgroup, 'memory.max'), `${384 * 2 ** 20}\n`);
    const { stdout, started, status } = await night([], { EFSYNC_CGROUP_ROOT: cgroup });
    expect(stdout).toMatch(/nightly run \S+: ok \(exit 0\)/);
    expect(started.memory).toMatchObject({
      budget: { bytes: 402_653_184, source: 'cgroup' },
      heapMb: 356,
      duckdb: { warehouse: '119MB', sync: '119MB', accuracy: '178MB' },
    });
    expect(status.memory).toEqual(started.memory);
  });
});

describe('what DuckDB keeps of the writer file', () => {
  it('a hand-back attaches the file afresh once the C heap grew past a quarter of the limit: the row groups it wrote leave the heap', async () => {
    const dir = tempDir('efsync-reattach-');
    const warehouse = await Warehouse.open({ path: join(dir, 'warehouse.duckdb'), memoryLimit: '16MB' });
    try {
      const heapMib = async () => {
        const [{ used }] = await warehouse.all<{ used: bigint }>('SELECT efsync_heap_in_use() AS used');
        return Number(used) / 2 ** 20;
      };
      await warehouse.run('CREATE TEMP TABLE kept AS SELECT 42 AS x');
      await handBackPool(warehouse); // the base the growth is measured from
      const base = await heapMib();
      // 14 columns, as the accuracy ledger's pairs: each row group written keeps its metadata
      // (~25 KB) in the C heap, outside DuckDB's memory limit, until the file is detached
      await warehouse.run(`CREATE TABLE pairs_like AS SELECT ${columnsSql(0)} FROM range(0)`);
      for (let part = 0; part < PARTS; part++) {
        await warehouse.run(`INSERT INTO pairs_like SELECT ${columnsSql(part)} FROM range(${PART_ROWS})`);
        await warehouse.run('CHECKPOINT'); // not warehouse.checkpoint(), which hands back
      }
      const grown = await heapMib();
      await handBackPool(warehouse);
      const after = await heapMib();
      expect(grown - base).toBeGreaterThan(4); // past a quarter of 16MB
      expect(after).toBeLessThan(grown - 3);
      const [row] = await warehouse.all<{ x: number; n: bigint }>(
        'SELECT (SELECT x FROM kept) AS x, (SELECT count(*) FROM pairs_like) AS n',
      );
      expect(row).toEqual({ x: 42, n: BigInt(PARTS * PART_ROWS) });
    } finally {
      await warehouse.close();
    }
  }, 300_000);
});

const PARTS = 14;
const PART_ROWS = 1_000_000;

function columnsSql(part: number): string {
  const id = `(range + ${part * PART_ROWS})`;
  return [
    `${id} AS pid`,
    `'forecast' AS subject`,
    `'m' || (${id} % 3) AS model`,
    `'site-' || (${id} // 30000) AS site_id`,
    `'served' AS served_model`,
    ...['issue_time', 'valid_time', 'group_time', 'reference_time'].map(
      (name, i) => `TIMESTAMPTZ '2026-01-01' + to_seconds(${id} * ${60 + i}) AS ${name}`,
    ),
    ...['forecast', 'actual', 'reference', 'capacity'].map((name, i) => `(${id} % ${97 + i}) / 7.0 AS ${name}`),
    'NULL::VARCHAR AS drop_reason',
  ].join(', ');
}
