// The memory budget: its sources in order (--memory, EFSYNC_MEMORY, resources.memory, the
// cgroup's limit, 300MB), strict sizes with errors naming the flag, variable or file and line,
// and the sizes it splits into: today's at 300MB, in proportion elsewhere, a size set in the
// config winning over its share. A night run under a budget: memory-budget.deep.test.ts.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { launchSizesFor } from '../src/cli/heap.js';
import { Config, loadConfig, sizesOf } from '../src/config.js';
import { cgroupLimit, DEFAULT_BUDGET, parseSize, resolveBudget, SMALLEST_BUDGET } from '../src/resources/budget.js';
import { belowSmallest, describeSizes, sizesFor, threadsWithin } from '../src/resources/sizes.js';
import { runJob } from '../src/runner/run.js';
import { quietLog, testJob } from './fixtures/runner-setup.js';
import { tempDir } from './sync-support.js';
import { accuracyStepSettings } from '../src/warehouse/settings.js';

/** A cgroup folder as the kernel shows it: v2's memory.max, or v1's memory/memory.limit_in_bytes. */
function cgroup(version: 1 | 2, limit: string): string {
  const root = tempDir();
  if (version === 2) writeFileSync(join(root, 'memory.max'), `${limit}\n`);
  else {
    mkdirSync(join(root, 'memory'));
    writeFileSync(join(root, 'memory', 'memory.limit_in_bytes'), `${limit}\n`);
  }
  return root;
}

/** No cgroup limit: a folder with no memory files. */
const NO_CGROUP = { EFSYNC_CGROUP_ROOT: '/nonexistent' };

function configFile(text: string): string {
  const file = join(tempDir(), 'efsync.yaml');
  writeFileSync(file, text);
  return file;
}

describe('parseSize', () => {
  it('reads decimal units as DuckDB does and binary ones with an i, in any case', () => {
    expect(parseSize('256MB')).toBe(256e6);
    expect(parseSize('1GB')).toBe(1e9);
    expect(parseSize('1.5gib')).toBe(1.5 * 2 ** 30);
    expect(parseSize('512 MiB')).toBe(512 * 2 ** 20);
  });

  it('refuses what is not a size, or below the smallest budget', () => {
    expect(() => parseSize('256')).toThrow('not a size such as 256MB or 1GB: "256"');
    expect(() => parseSize('lots')).toThrow('not a size');
    expect(() => parseSize('1.5')).toThrow('not a size');
    expect(() => parseSize('100MB')).toThrow('100MB is below the smallest budget, 228MB');
  });
});

describe('cgroupLimit', () => {
  it("reads v2's memory.max and v1's limit_in_bytes; max, or a limit past the machine's memory, is none", () => {
    expect(cgroupLimit({ EFSYNC_CGROUP_ROOT: cgroup(2, '268435456') })).toBe(268_435_456);
    expect(cgroupLimit({ EFSYNC_CGROUP_ROOT: cgroup(1, '402653184') })).toBe(402_653_184);
    expect(cgroupLimit({ EFSYNC_CGROUP_ROOT: cgroup(2, 'max') })).toBeNull();
    expect(cgroupLimit({ EFSYNC_CGROUP_ROOT: cgroup(1, '9223372036854771712') })).toBeNull();
    expect(cgroupLimit({ EFSYNC_CGROUP_ROOT: cgroup(2, String(totalmem())) })).toBeNull();
    expect(cgroupLimit(NO_CGROUP)).toBeNull();
  });

  it("takes the least of the process's own cgroup's limit and its ancestors' (/proc/self/cgroup names its path)", () => {
    const own = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((line) => line.split(':')[1]?.split(',').includes('memory'));
    const path = own?.split(':').slice(2).join(':') || '/';
    const root = cgroup(1, '600000000');
    mkdirSync(join(root, 'memory', path), { recursive: true });
    writeFileSync(join(root, 'memory', path, 'memory.limit_in_bytes'), '400000000\n');
    expect(cgroupLimit({ EFSYNC_CGROUP_ROOT: root })).toBe(400e6);
  });
});

describe('resolveBudget', () => {
  const env = { EFSYNC_MEMORY: '512MB', EFSYNC_CGROUP_ROOT: cgroup(2, '400000000') };

  it('takes the flag, else the variable, else the config, else the cgroup, else 300MB', () => {
    expect(resolveBudget({ flag: '1GB', configured: 256e6 }, env)).toEqual({ bytes: 1e9, source: '--memory' });
    expect(resolveBudget({ configured: 256e6 }, env)).toEqual({ bytes: 512e6, source: 'EFSYNC_MEMORY' });
    const withoutVariable = { EFSYNC_CGROUP_ROOT: env.EFSYNC_CGROUP_ROOT };
    expect(resolveBudget({ configured: 256e6 }, withoutVariable)).toEqual({ bytes: 256e6, source: 'resources.memory' });
    expect(resolveBudget({ configured: null }, withoutVariable)).toEqual({ bytes: 400e6, source: 'cgroup' });
    expect(resolveBudget({ configured: null }, NO_CGROUP)).toEqual({ bytes: DEFAULT_BUDGET, source: 'default' });
  });

  it('names the flag or the variable that is not a size', () => {
    expect(() => resolveBudget({ flag: '1.5', configured: null }, NO_CGROUP)).toThrow(
      '--memory: not a size such as 256MB or 1GB: "1.5"',
    );
    expect(() => resolveBudget({ configured: null }, { ...NO_CGROUP, EFSYNC_MEMORY: '64MB' })).toThrow(
      'EFSYNC_MEMORY: 64MB is below the smallest budget, 228MB',
    );
  });
});

describe('the sizes a budget sets', () => {
  it("at 300MB, today's: a 192 MiB heap, DuckDB's 64, 64 and 96 MB, the rows as they were", () => {
    const sizes = sizesFor({ bytes: DEFAULT_BUDGET, source: 'default' });
    expect(sizes.heapMb).toBe(192);
    expect(sizes.duckdb).toEqual({ warehouse: '64MB', sync: '64MB', accuracy: '96MB' });
    expect(sizes.rows).toMatchObject({ syncInMemory: 120_000, accuracyBatchPoints: 100_000, sumPerPartition: 100_000 });
    // a config built without a budget (as tests build theirs) has exactly these
    expect(sizesOf(Config.parse({}))).toEqual(sizes);
  });

  it('in proportion to what the budget leaves past the process itself (180MB)', () => {
    const sizes = sizesFor({ bytes: 600e6, source: '--memory' });
    // (600 - 180) / (300 - 180) of each size at 300MB
    expect(sizes.heapMb).toBe(672);
    expect(sizes.duckdb).toEqual({ warehouse: '224MB', sync: '224MB', accuracy: '336MB' });
    expect(sizes.rows).toMatchObject({ syncInMemory: 420_000, accuracyBatchPoints: 350_000, commitBatch: 1_750_000 });
  });

  it("DuckDB's threads while scoring: as many as the step's limit holds, 32 MiB each, at least one", () => {
    expect(['20MB', '61MB', '96MB', '336MB', '656MB'].map(threadsWithin)).toEqual([1, 1, 2, 10, 19]);
    expect(threadsWithin(null)).toBeNull();
    expect(sizesFor({ bytes: 256e6, source: '--memory' }).accuracyThreads).toBe(1);
    // a step runs at most one per core
    const cores = availableParallelism();
    expect(accuracyStepSettings({ memory_limit: '656MB', threads: 19 }).threads).toBe(Math.min(19, cores));
    expect(accuracyStepSettings({ memory_limit: null, threads: null }).threads).toBeNull();
  });

  it("DuckDB's freed pages go back after 10 ms below the default budget, after a second at and above it", () => {
    expect(sizesFor({ bytes: 256e6, source: '--memory' }).allocatorDecayMs).toBe(10);
    expect(sizesFor({ bytes: DEFAULT_BUDGET, source: 'default' }).allocatorDecayMs).toBe(1000);
    expect(sizesFor({ bytes: 1e9, source: '--memory' }).allocatorDecayMs).toBe(1000);
  });

  it("V8's young generation: 8 MiB semi-spaces up to the default budget, doubling with it up to 32 MiB", () => {
    const semi = (bytes: number) => sizesFor({ bytes, source: '--memory' }).semiSpaceMb;
    expect([256e6, DEFAULT_BUDGET, 400e6, 500e6, 600e6, 1e9, 4e9].map(semi)).toEqual([8, 8, 8, 16, 16, 32, 32]);
  });

  it("a sync's old generation floor: none up to the default budget, half the room past it, at most 128 MiB", () => {
    const floor = (bytes: number) => sizesFor({ bytes, source: '--memory' }).syncHeapFloorMb;
    expect([256e6, DEFAULT_BUDGET, 400e6, 500e6, 1e9].map(floor)).toEqual([0, 0, 48, 95, 128]);
  });

  it('go into the config a command loads, where a size the file sets wins over its share', () => {
    const file = configFile(
      'resources:\n  memory: 600MB\nsync:\n  memory_limit: 80MB\naccuracy:\n  batch_points: 5000\n',
    );
    const config = loadConfig(file, NO_CGROUP);
    expect(config.resources).toEqual({ memory: 600e6, source: 'resources.memory' });
    expect(config.warehouse.memory_limit).toBe('224MB');
    expect(config.sync.memory_limit).toBe('80MB');
    expect(config.accuracy.memory_limit).toBe('336MB');
    expect(config.sync.rows_in_memory).toBe(420_000);
    expect(config.accuracy.batch_points).toBe(5000);
    expect(loadConfig(file, NO_CGROUP, { memory: '300MB' }).warehouse.memory_limit).toBe('64MB');
    expect(loadConfig(file, NO_CGROUP).accuracy.threads).toBe(10);
    // the threads follow the limit in force, the file's when it sets one; threads it sets win
    expect(loadConfig(configFile('accuracy:\n  memory_limit: 40MB\n'), NO_CGROUP).accuracy.threads).toBe(1);
    expect(loadConfig(configFile('accuracy:\n  threads: 3\n'), NO_CGROUP, { memory: '256MB' }).accuracy.threads).toBe(
      3,
    );
  });

  it("a config's budget that is not a size is an error naming its file and line", () => {
    const file = configFile('log:\n  level: info\nresources:\n  memory: 2 GB please\n');
    expect(() => loadConfig(file, NO_CGROUP)).toThrow(
      `${file}:4:11: resources.memory: not a size such as 256MB or 1GB: "2 GB please"`,
    );
  });

  it("a cgroup's limit below the smallest budget: the smallest budget's sizes, and a warning that says so", () => {
    const smallest = sizesFor({ bytes: SMALLEST_BUDGET, source: '--memory' });
    const pod = { EFSYNC_CGROUP_ROOT: cgroup(2, String(128 * 2 ** 20)) }; // a pod's 128Mi
    const budget = resolveBudget({ configured: null }, pod);
    expect(budget).toEqual({ bytes: 134_217_728, source: 'cgroup' });
    const sizes = sizesFor(budget);
    expect({ ...sizes, budget: null }).toEqual({ ...smallest, budget: null });
    expect(sizes.heapMb).toBe(77);
    expect(sizes.duckdb).toEqual({ warehouse: '26MB', sync: '26MB', accuracy: '38MB' });
    expect(launchSizesFor(['run', 'nightly'], pod)).toMatchObject({ heapMb: 77, semiSpaceMb: 8 });
    expect(describeSizes(sizes)).toContain('memory budget 134MB (cgroup, sized as 228MB, the smallest): V8 heap 77MiB');
    expect(belowSmallest(budget)).toBe(
      'the memory budget, 134MB (cgroup), is below the smallest efsync sizes itself for, 228MB: sized as for 228MB, ' +
        'it may meet the limit and be stopped by the kernel; a limit of 228MB or more runs within it',
    );
    expect(belowSmallest(smallest.budget)).toBeNull();
  });

  it("the launcher's heap cap and young generation are the budget's, from the same flags, variable and config", () => {
    const file = configFile('resources:\n  memory: 600MB\n');
    expect(launchSizesFor(['run', 'nightly', '--config', file], NO_CGROUP)).toMatchObject({
      heapMb: 672,
      semiSpaceMb: 16,
    });
    expect(launchSizesFor(['run', 'nightly', `--config=${file}`, '--memory', '240MB'], NO_CGROUP)?.heapMb).toBe(96);
    expect(launchSizesFor(['status', '--memory', 'lots'], NO_CGROUP)).toBeNull();
  });
});

describe('a run under a budget', () => {
  it("opens its warehouse with the budget's DuckDB limit and row bounds, which every piece of work reads", async () => {
    const seen: unknown[] = [];
    const look = testJob('look', async (ctx) => {
      seen.push(ctx.warehouse.rows, ctx.warehouse.memoryLimit);
      return { status: 'ok', rows: {}, failures: [] };
    });
    const file = configFile(`resources:\n  memory: 600MB\nwarehouse:\n  path: ${join(tempDir(), 'w.duckdb')}\n`);
    const result = await runJob(look, { config: loadConfig(file, NO_CGROUP), log: quietLog });
    expect(result.status).toBe('ok');
    const sizes = sizesFor({ bytes: 600e6, source: 'resources.memory' });
    expect(seen).toEqual([sizes.rows, '224MB']);
  });
});
