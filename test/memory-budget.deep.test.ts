// A real night (the embedded emulator's demo sites, two days deep) under a memory budget given
// by --memory, and under one read from a cgroup's limit (EFSYNC_CGROUP_ROOT, a folder shaped as
// /sys/fs/cgroup), one below the smallest budget among them: each exits 0, the log line after `run
// started` says the sizes it took (and warns of a limit below the smallest), and `efsync status`
// shows the same. The budget's sources and arithmetic: memory-budget.test.ts.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
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
  const budgetLines = ran.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .filter((entry) => String(entry.msg).includes('memory budget'));
  return {
    stdout: ran.stdout,
    started: budgetLines.find((entry) => String(entry.msg).startsWith('memory budget')),
    warned: budgetLines.filter((entry) => entry.level === 40).map((entry) => String(entry.msg)),
    status: JSON.parse(status.stdout),
  };
}

describe('a night under a memory budget', () => {
  it('--memory 256MB: DuckDB, the heap and the rows take their shares of it, and the night exits 0', async () => {
    const { stdout, started, status } = await night(['--memory', '256MB'], { EFSYNC_CGROUP_ROOT: '/nonexistent' });
    expect(stdout).toMatch(/nightly run \S+: ok \(exit 0\)/);
    const expected = {
      budget: { bytes: 256e6, source: '--memory' },
      heapMb: 122,
      semiSpaceMb: 8,
      allocatorDecayMs: 10,
      duckdb: { warehouse: '41MB', sync: '41MB', accuracy: '61MB' },
      accuracyThreads: 1,
    };
    expect(started.memory).toMatchObject(expected);
    expect(started.memory.rows).toMatchObject({ syncInMemory: 76_000, accuracyBatchPoints: 63_333 });
    expect(started.msg).toContain('memory budget 256MB (--memory): V8 heap 122MiB (this process: ');
    expect(started.msg).toContain('DuckDB 41MB outside the steps, 41MB syncing, 61MB scoring on 1 thread;');
    // Node 22.15+ restarts with the budget's cap; Node 20 cannot, and says so
    const cap = 'execve' in process ? '122MiB' : 'uncapped, Node before 22.15';
    expect(started.msg).toContain(`V8 heap 122MiB (this process: ${cap}), young generation 2x8MiB`);
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
      semiSpaceMb: 8,
      duckdb: { warehouse: '119MB', sync: '119MB', accuracy: '178MB' },
      accuracyThreads: 5,
    });
    expect(status.memory).toEqual(started.memory);
  });

  it("a cgroup's limit below the smallest budget (200 MiB): sized as the smallest, the run warns, the night exits 0", async () => {
    const cgroup = tempDir();
    writeFileSync(join(cgroup, 'memory.max'), `${200 * 2 ** 20}\n`);
    const { stdout, started, warned, status } = await night([], { EFSYNC_CGROUP_ROOT: cgroup });
    expect(stdout).toMatch(/nightly run \S+: ok \(exit 0\)/);
    expect(started.memory).toMatchObject({
      budget: { bytes: 209_715_200, source: 'cgroup' },
      heapMb: 77,
      duckdb: { warehouse: '26MB', sync: '26MB', accuracy: '38MB' },
      accuracyThreads: 1,
    });
    expect(warned).toEqual([expect.stringContaining('is below the smallest efsync sizes itself for, 228MB')]);
    expect(status.memory).toEqual(started.memory);
  });
});
