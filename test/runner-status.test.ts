// `efsync status --json`: last run of each job, next scheduled times, freshness per site and
// recent failures, read from the published warehouse (so it answers while a sync writes).
import { describe, expect, it, vi } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { defineJob } from '../src/job.js';
import { runJob } from '../src/runner/run.js';
import type { Status } from '../src/runner/status.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { quietLog, tableJob, tempConfig, runSlot } from './fixtures/runner-setup.js';

const NIGHT = Date.UTC(2026, 10, 20, 2, 0);

// The tests start the real command line, which loads every area's commands: give it time.
vi.setConfig({ testTimeout: 120_000 });

/** Stands in for sync-sites: one site with a forecast and an actual. */
const fakeSync = defineJob({
  name: 'sync-sites',
  description: '',
  schedule: null,
  async run(ctx) {
    await ctx.warehouse.run(`INSERT INTO sites (site_id, name, type, latitude, longitude, synced_at)
      VALUES ('s1', 'Uppsala solar', 'solar', 59.86, 17.64, '2026-11-20T02:00:00Z')`);
    await ctx.warehouse.run(
      `INSERT INTO actuals VALUES ('s1', '2026-11-20T01:45:00Z', 0.0, '2026-11-20T02:00:00Z', NULL)`,
    );
    await ctx.warehouse.run(
      `INSERT INTO forecasts VALUES ('s1', 'physical', 1, '2026-11-20T00:00:00Z', '2026-11-22T00:00:00Z', 0.0, 500)`,
    );
    return { status: 'ok', rows: { sites: 1, actuals: 1, forecasts: 1 }, failures: [] };
  },
});

describe('efsync status --json', () => {
  it('shows last runs, next times, freshness and failures, also while another process writes', async () => {
    const config = tempConfig();
    await runJob(fakeSync, { config, log: quietLog, now: () => NIGHT - 60_000 });
    await runSlot(config, 'nightly', NIGHT);
    const failures = [{ siteId: 's1', resource: 'actuals', reason: 'HTTP 503 after 5 retries' }];
    await runJob(tableJob('sync-actuals', { status: 'partial', failures }), {
      config,
      log: quietLog,
      now: () => NIGHT + 60_000,
    });

    const writer = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'nightly', runId: 'W-1' } });
    let result: Awaited<ReturnType<typeof startChild>['exit']>;
    try {
      result = await startChild([...CLI, 'status', '--json', '--db', config.warehouse.path], {
        EFSYNC_LOG_LEVEL: 'warn',
      }).exit;
    } finally {
      await writer.close();
    }
    expect(result.code).toBe(EXIT.ok);
    const status = JSON.parse(result.stdout) as Status;

    expect(status.writing).toMatchObject({ job: 'nightly', runId: 'W-1', pid: process.pid, alive: true });
    const job = (name: string) => status.jobs.find((j) => j.job === name);
    expect(job('nightly')).toMatchObject({
      schedule: '0 2 * * *',
      scheduleSource: 'config',
      last: {
        status: 'ok',
        trigger: 'schedule',
        scheduledFor: '2026-11-20T02:00:00.000Z',
        rowsWritten: { test_marks: 1 },
      },
    });
    expect(job('nightly')?.next).toHaveLength(3);
    expect(job('nightly')?.next.every((t) => t.endsWith('T02:00:00Z') && Date.parse(t) > Date.now())).toBe(true);
    expect(job('push-capacity')?.schedule).toBe('*/30 * * * *');
    expect(job('sync-actuals')).toMatchObject({
      schedule: null,
      next: [],
      last: { status: 'partial', failures: 1, errorSummary: 's1 actuals: HTTP 503 after 5 retries' },
    });
    expect(job('sync-outputs')?.last).toBeNull();

    expect(status.freshness).toEqual([
      expect.objectContaining({
        site_id: 's1',
        name: 'Uppsala solar',
        newest_actual: '2026-11-20T01:45:00.000Z',
        newest_forecast_valid_time: '2026-11-22T00:00:00.000Z',
        newest_forecast_update_time: '2026-11-20T00:00:00.000Z',
      }),
    ]);
    expect(status.failures).toEqual([
      expect.objectContaining({
        job: 'sync-actuals',
        siteId: 's1',
        resource: 'actuals',
        error: 'HTTP 503 after 5 retries',
      }),
    ]);
  });

  it('says so plainly before anything was published', async () => {
    const config = tempConfig();
    const { code, stdout } = await startChild([...CLI, 'status', '--db', config.warehouse.path]).exit;
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain('(nothing published yet)');
    expect(stdout).toMatch(/nightly\s+0 2 \* \* \*\s+\S+T02:00:00Z\s+never/);
  });
});
