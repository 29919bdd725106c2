// runJob: one run of a job, recorded in the ledger with its outcome and the exit code `efsync run` uses.
import { chmodSync, rmSync, statSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { UsageError } from '../src/cli/boundary.js';
import { defineJob } from '../src/job.js';
import { recordInterrupted } from '../src/runner/ledger.js';
import { runJob } from '../src/runner/run.js';
import { viewsDefinition } from '../src/warehouse/migrate.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import {
  insertRunningRun,
  publishedAll,
  publishedRuns,
  quietLog,
  tableJob,
  tempConfig,
  waitingJob,
  throwingJob,
} from './fixtures/runner-setup.js';

const NOW = Date.UTC(2026, 10, 21, 2, 0, 0);
const clock = () => NOW;
/** A job that writes nothing: the sync of a service with nothing new. */
const idleJob = defineJob({
  name: 'idle',
  description: 'writes nothing',
  schedule: null,
  run: async () => ({ status: 'ok', rows: { test_marks: 0 }, failures: [] }),
});

describe('runJob', () => {
  it('records a successful run and publishes what the job wrote', async () => {
    const config = tempConfig();
    const result = await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    expect(result).toMatchObject({ status: 'ok', exitCode: EXIT.ok, rows: { test_marks: 1 }, error: null });
    const [run] = await publishedRuns(config);
    expect(run).toMatchObject({
      runId: result.runId,
      job: 'mark',
      trigger: 'manual',
      status: 'ok',
      attempt: 1,
      startedAt: NOW,
      endedAt: NOW,
      rowsWritten: { test_marks: 1 },
      pid: process.pid,
    });
    expect(await publishedAll(config, 'SELECT job, run_id FROM test_marks')).toEqual([
      { job: 'mark', run_id: result.runId },
    ]);
  });

  it('records a partial run with its failures per site and exits 1', async () => {
    const config = tempConfig();
    const failures = [{ siteId: 's2', resource: 'actuals', reason: 'HTTP 503 after 5 retries' }];
    const result = await runJob(tableJob('mark', { status: 'partial', failures }), {
      config,
      log: quietLog,
      now: clock,
    });
    expect(result).toMatchObject({
      status: 'partial',
      exitCode: EXIT.partial,
      error: 's2 actuals: HTTP 503 after 5 retries',
    });
    expect(await publishedAll(config, 'SELECT run_id, site_id, resource, error FROM run_failures')).toEqual([
      { run_id: result.runId, site_id: 's2', resource: 'actuals', error: 'HTTP 503 after 5 retries' },
    ]);
  });

  it('records a job that throws as failed (exit 4), a usage error exits 2', async () => {
    const config = tempConfig();
    const broken = throwingJob('broken', new Error('service unreachable'));
    const failed = await runJob(broken, { config, log: quietLog, now: () => NOW - 1000 });
    expect(failed).toMatchObject({ status: 'failed', exitCode: EXIT.failed, error: 'service unreachable' });
    const misused = throwingJob('misused', new UsageError('unknown site: nope'));
    expect(await runJob(misused, { config, log: quietLog, now: clock })).toMatchObject({
      status: 'failed',
      exitCode: EXIT.usage,
    });
    expect((await publishedRuns(config)).map((r) => [r.job, r.status, r.errorSummary])).toEqual([
      ['broken', 'failed', 'service unreachable'],
      ['misused', 'failed', 'unknown site: nope'],
    ]);
  });

  it('records an aborted run as interrupted (exit 5)', async () => {
    const config = tempConfig();
    const controller = new AbortController();
    const result = await runJob(
      waitingJob('slow', () => controller.abort(new Error('SIGTERM'))),
      {
        config,
        log: quietLog,
        now: clock,
        signal: controller.signal,
      },
    );
    expect(result).toMatchObject({ status: 'interrupted', exitCode: EXIT.interrupted, error: 'interrupted (SIGTERM)' });
    expect((await publishedRuns(config))[0]).toMatchObject({
      status: 'interrupted',
      errorSummary: 'interrupted (SIGTERM)',
    });
  });

  it('records a run over its timeout as failed', async () => {
    const config = tempConfig();
    const result = await runJob(waitingJob('slow'), { config, log: quietLog, now: clock, timeoutMs: 20 });
    expect(result).toMatchObject({ status: 'failed', exitCode: EXIT.failed, error: 'timed out after 20ms' });
  });

  it('returns busy (exit 3) naming the holder while another writer holds the warehouse', async () => {
    const config = tempConfig();
    const holder = await Warehouse.open({
      path: config.warehouse.path,
      lockWaitMs: 0,
      holder: { job: 'nightly', runId: 'R-1' },
    });
    try {
      const lines: string[] = [];
      const log = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
      const result = await runJob(tableJob('mark'), { config, log, now: clock, lockWaitMs: 300 });
      expect(result.status).toBe('busy');
      // While it waited it said whom for, once.
      const waiting = lines
        .map((line) => JSON.parse(line) as { msg: string })
        .filter((l) => l.msg.startsWith('waiting for the warehouse'));
      expect(waiting).toHaveLength(1);
      expect(waiting[0].msg).toMatch(
        /^waiting for the warehouse: efsync nightly \(run R-1, pid \d+ on host .+\) since /,
      );
      expect(result.exitCode).toBe(EXIT.busy);
      expect(result.error).toContain('nightly (run R-1, pid');
    } finally {
      await holder.close();
    }
  });

  it('marks a run left running by a killed process as crashed', async () => {
    const config = tempConfig();
    const wh = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'crash', runId: 'C' } });
    await insertRunningRun(wh, {
      runId: 'C',
      job: 'nightly',
      trigger: 'schedule',
      scheduledFor: NOW - 86_400_000,
      startedAt: NOW - 86_400_000,
    });
    await wh.publish();
    await wh.close();
    await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    const crashed = (await publishedRuns(config)).find((r) => r.runId === 'C');
    expect(crashed).toMatchObject({ status: 'crashed', endedAt: NOW });
    expect(crashed?.errorSummary).toContain('pid 999999');
  });

  it('a run that changed nothing leaves the published snapshot as it is; the next that writes publishes every run', async () => {
    const config = tempConfig();
    const path = config.warehouse.path;
    const first = await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    const snapshot = statSync(path).ino;
    const quiet = [await runJob(idleJob, { config, log: quietLog, now: clock })];
    quiet.push(await runJob(idleJob, { config, log: quietLog, now: clock }));
    expect(quiet.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(statSync(path).ino).toBe(snapshot);
    expect((await publishedRuns(config)).map((r) => r.runId)).toEqual([first.runId]);
    const last = await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    expect(statSync(path).ino).not.toBe(snapshot);
    expect((await publishedRuns(config)).map((r) => [r.runId, r.status]).sort()).toEqual(
      [first, ...quiet, last].map((r) => [r.runId, 'ok']).sort(),
    );
  });

  it('a run that changed nothing still publishes what an earlier run left unpublished (a crashed run)', async () => {
    const config = tempConfig();
    await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    const wh = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'crash', runId: 'C' } });
    await insertRunningRun(wh, { runId: 'C', job: 'mark', trigger: 'manual', scheduledFor: null, startedAt: NOW });
    await wh.close();
    const quiet = await runJob(idleJob, { config, log: quietLog, now: clock });
    const published = new Map((await publishedRuns(config)).map((r) => [r.runId, r.status]));
    expect(published.get('C')).toBe('crashed');
    expect(published.get(quiet.runId)).toBe('ok');
  });

  it('a run that changed nothing still publishes a views definition the snapshot lacks', async () => {
    const config = tempConfig();
    const path = config.warehouse.path;
    await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    // A snapshot published by an older views.sql: the next open applies today's to the writer file.
    const wh = await Warehouse.open({ path });
    await wh.run("UPDATE schema_views SET digest = 'an older definition'");
    await wh.publish();
    await wh.close();
    const snapshot = statSync(path).ino;
    await runJob(idleJob, { config, log: quietLog, now: clock });
    expect(statSync(path).ino).not.toBe(snapshot);
    expect(await publishedAll(config, 'SELECT digest FROM schema_views')).toEqual([
      { digest: viewsDefinition().digest },
    ]);
  });

  it('a run that changed nothing still publishes the migrations the snapshot lacks', async () => {
    const config = tempConfig();
    const path = config.warehouse.path;
    await runJob(tableJob('mark'), { config, log: quietLog, now: clock });
    const newest = async () =>
      (await publishedAll<{ v: number }>(config, 'SELECT max(version) AS v FROM schema_migrations'))[0].v;
    const migrated = await newest();
    // A snapshot published before the newest migration, which the writer file has.
    rmSync(`${path}.wal`);
    chmodSync(path, 0o644);
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    await connection.run(`DELETE FROM schema_migrations WHERE version = ${migrated}`);
    connection.closeSync();
    instance.closeSync();
    chmodSync(path, 0o444);
    expect(await newest()).toBe(migrated - 1);
    const snapshot = statSync(path).ino;
    await runJob(idleJob, { config, log: quietLog, now: clock });
    expect(statSync(path).ino).not.toBe(snapshot);
    expect(await newest()).toBe(migrated);
  });

  it('never runs a schedule slot twice', async () => {
    const config = tempConfig();
    const slot = { trigger: 'schedule' as const, scheduledFor: NOW, config, log: quietLog, now: clock };
    expect((await runJob(tableJob('mark'), slot)).status).toBe('ok');
    const again = await runJob(tableJob('mark'), slot);
    expect(again.status).toBe('skipped');
    expect(again.error).toMatch(/^slot 2026-11-21T02:00:00.000Z already run/);
    expect(await publishedAll(config, 'SELECT count(*)::INTEGER AS n FROM test_marks')).toEqual([{ n: 1 }]);
  });
});

describe('stopped hard', () => {
  it("a second signal's record of the run waits out the run's own write of its row, whichever way it ends", async () => {
    const config = tempConfig();
    const wh = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'race', runId: 'R' } });
    try {
      const started = Date.parse('2026-11-26T00:00:00Z');
      for (const runId of ['rolled-back', 'committed'])
        await insertRunningRun(wh, { runId, job: 'race', trigger: 'manual', scheduledFor: null, startedAt: started });
      const statusOf = async (runId: string) =>
        (await wh.all<{ status: string }>('SELECT status FROM runs WHERE run_id = $1', [runId]))[0].status;
      // The run's own last write holds the row, uncommitted, as the signal's record starts.
      const ownWrite = async (runId: string, end: 'ROLLBACK' | 'COMMIT') => {
        await wh.run('BEGIN TRANSACTION');
        await wh.run(`UPDATE runs SET status = 'ok' WHERE run_id = $1`, [runId]);
        const recorded = recordInterrupted(wh, runId, started + 1000, 'interrupted (second signal)');
        await new Promise((resolve) => setTimeout(resolve, 200));
        await wh.run(end);
        await recorded;
      };
      await ownWrite('rolled-back', 'ROLLBACK');
      expect(await statusOf('rolled-back')).toBe('interrupted');
      await ownWrite('committed', 'COMMIT');
      expect(await statusOf('committed')).toBe('ok');
    } finally {
      await wh.close();
    }
  });
});
