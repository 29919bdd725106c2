// The nightly chain: the jobs of jobs/ in order in one run; a partial step lets the next run, a
// failed one stops the chain; and the real chain against the embedded emulator.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NIGHTLY_STEPS } from '../jobs/nightly.js';
import { runChain } from '../src/runner/chain.js';
import type { JobOutcome } from '../src/outcome.js';
import { JobRegistry, loadJob, loadJobs } from '../src/runner/registry.js';
import { runJob } from '../src/runner/run.js';
import { publishedAll, publishedRuns, quietLog, tempConfig, testJob } from './fixtures/runner-setup.js';

function step(name: string, outcome: Partial<JobOutcome>, order: string[]) {
  return testJob(name, async () => {
    order.push(name);
    return { status: 'ok', rows: { t: 1 }, failures: [], ...outcome };
  });
}

const chainJob = (registry: JobRegistry, steps: string[]) => testJob('chain', (ctx) => runChain(ctx, registry, steps));

/** A step's summary line: its status, then its wall time and peak RSS (measure.ts). */
const COST = (head: string) => new RegExp(`^${head} \\(\\d+\\.\\d\\d s, peak RSS \\d+ MB\\)$`);

describe('runChain', () => {
  it('runs every step in order; a partial step (some sites failed) still lets the next run', async () => {
    const order: string[] = [];
    const failures = [{ siteId: 's2', resource: 'actuals', reason: 'malformed response' }];
    const registry = new JobRegistry()
      .add(step('a', {}, order))
      .add(step('b', { status: 'partial', failures }, order))
      .add(step('c', {}, order));
    const result = await runJob(chainJob(registry, ['a', 'b', 'c']), { config: tempConfig(), log: quietLog });
    expect(order).toEqual(['a', 'b', 'c']);
    expect(result).toMatchObject({ status: 'partial', exitCode: 1, rows: { t: 3 }, failures });
    expect(result.summary).toEqual([
      expect.stringMatching(COST('a: ok')),
      expect.stringMatching(COST('b: partial')),
      expect.stringMatching(COST('c: ok')),
    ]);
  });

  it("starts each step with the last one's garbage collected (and DuckDB's pool evicted: warehouse/executor.ts)", async () => {
    let garbage: unknown[] | null = null;
    const heapMb: number[] = [];
    const fill = testJob('fill', async () => {
      // ~100 MB of JS garbage once this step ends, which nothing in the next step would collect
      garbage = Array.from({ length: 1_000_000 }, (_, i) => ({ i, text: `row ${i}` }));
      heapMb.push(process.memoryUsage().heapUsed / 2 ** 20);
      garbage = null;
      return { status: 'ok', rows: {}, failures: [] };
    });
    const look = testJob('look', async () => {
      heapMb.push(process.memoryUsage().heapUsed / 2 ** 20);
      return { status: 'ok', rows: {}, failures: [] };
    });
    const registry = new JobRegistry().add(fill).add(look);
    const result = await runJob(chainJob(registry, ['fill', 'look']), { config: tempConfig(), log: quietLog });
    expect(result.status).toBe('ok');
    expect(garbage).toBeNull();
    expect(heapMb[0] - heapMb[1]).toBeGreaterThan(50);
  });

  it('stops at a step that fails as a whole, or throws, naming the steps not run', async () => {
    const order: string[] = [];
    const boom = testJob('b', async () => {
      order.push('b');
      throw new Error('service unreachable');
    });
    const registry = new JobRegistry()
      .add(step('a', {}, order))
      .add(boom)
      .add(step('c', {}, order));
    const result = await runJob(chainJob(registry, ['a', 'b', 'c']), { config: tempConfig(), log: quietLog });
    expect(order).toEqual(['a', 'b']);
    expect(result).toMatchObject({ status: 'failed', exitCode: 4, error: 'b: service unreachable' });
    expect(result.summary).toEqual([
      expect.stringMatching(COST('a: ok')),
      expect.stringMatching(COST('b: failed')),
      'not run after the failure of b: c',
    ]);
  });

  it("gives each step's summary lines to stepEnded as the step ends, before the next step runs", async () => {
    const seen: string[] = [];
    const registry = new JobRegistry().add(step('a', { summary: ['2 rows'] }, seen)).add(step('b', {}, seen));
    const result = await runJob(chainJob(registry, ['a', 'b']), {
      config: tempConfig(),
      log: quietLog,
      stepEnded: (lines) => seen.push(...lines),
    });
    expect(seen).toEqual([
      'a',
      expect.stringMatching(COST('a: ok')),
      '  2 rows',
      'b',
      expect.stringMatching(COST('b: ok')),
    ]);
    expect(result.summary).toEqual([seen[1], seen[2], seen[4]]);
  });

  it('refuses a chain with an unknown step before running any', async () => {
    const order: string[] = [];
    const registry = new JobRegistry().add(step('a', {}, order));
    const result = await runJob(chainJob(registry, ['a', 'zz']), { config: tempConfig(), log: quietLog });
    expect(order).toEqual([]);
    expect(result.error).toBe('unknown job "zz"; the jobs are: a');
  });
});

describe('jobs/', () => {
  it('holds every job, each file named after its job, and the nightly chain of them', async () => {
    const registry = await loadJobs();
    expect([...registry.broken.keys()]).toEqual([]);
    expect(registry.names()).toEqual([
      'accuracy',
      'apply-sites',
      'nightly',
      'push-capacity',
      'retention',
      'sites-drift',
      'sync',
      'sync-actuals',
      'sync-forecasts',
      'sync-models',
      'sync-outputs',
      'sync-sites',
    ]);
    expect(NIGHTLY_STEPS).toEqual([
      'sync-sites',
      'sync-models',
      'sync-forecasts',
      'sync-outputs',
      'sync-actuals',
      'retention',
      'accuracy',
    ]);
  });

  it('loads one job from its own module alone; a name no module has lists the jobs there are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'efsync-jobs-'));
    const job = (name: string) =>
      `import { defineJob } from ${JSON.stringify(join(import.meta.dirname, '../src/job.js'))};\n` +
      `export default defineJob({ name: '${name}', description: 'd', schedule: null, run: async () => ({ status: 'ok', rows: {}, failures: [] }) });\n`;
    writeFileSync(join(dir, 'one.ts'), job('one'));
    writeFileSync(join(dir, 'other.ts'), `globalThis.efsyncOtherLoaded = true;\n${job('other')}`);
    expect((await loadJob('one', dir)).name).toBe('one');
    expect((globalThis as { efsyncOtherLoaded?: boolean }).efsyncOtherLoaded).toBeUndefined();
    await expect(loadJob('zz', dir)).rejects.toThrow('unknown job "zz"; the jobs are: one, other');
    expect((globalThis as { efsyncOtherLoaded?: boolean }).efsyncOtherLoaded).toBe(true);
  });

  it('the nightly chain syncs the embedded emulator and scores it, in one run', async () => {
    const base = tempConfig({ emulator: { sites: 3, seed: 7 } });
    const config = {
      ...base,
      accuracy: { ...base.accuracy, report: join(dirname(base.warehouse.path), 'report.html') },
    };
    const registry = await loadJobs();
    const result = await runJob(registry.get('nightly'), { config, log: quietLog });
    expect(result.status).toBe('ok');
    expect(result.summary.filter((l) => !l.startsWith(' '))).toEqual(
      NIGHTLY_STEPS.map((s) => expect.stringMatching(COST(`${s}: ok`))),
    );
    expect(result.rows).toMatchObject({ sites: 3 });
    expect(result.rows.forecasts).toBeGreaterThan(0);
    expect(result.rows.actuals).toBeGreaterThan(0);
    const [run] = await publishedRuns(config);
    expect(run).toMatchObject({ job: 'nightly', status: 'ok', rowsWritten: result.rows });
    const [counts] = await publishedAll<{ sites: number; actuals: number }>(
      config,
      'SELECT (SELECT count(*) FROM sites)::INTEGER AS sites, (SELECT count(*) FROM actuals)::INTEGER AS actuals',
    );
    expect(counts).toEqual({ sites: 3, actuals: result.rows.actuals });
  });
});
