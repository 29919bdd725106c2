// The Scheduler with an injected clock over real runs: a schedule fires, a job never overlaps
// itself, a failed run is retried with backoff, a busy warehouse becomes a recorded skip.
import { describe, expect, it } from 'vitest';
import type { JobOutcome } from '../src/outcome.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import {
  ledgerLines,
  manualClock,
  publishedRuns,
  tableJob,
  tempConfig,
  testJob,
  testScheduler,
  throwingJob,
} from './fixtures/runner-setup.js';

const MINUTE = 60_000;
const AT_0159 = Date.UTC(2026, 10, 20, 1, 59, 0);
const AT_0200 = Date.UTC(2026, 10, 20, 2, 0, 0);

describe('Scheduler', () => {
  it('fires a job when its slot comes due, and only then', async () => {
    const config = tempConfig();
    const clock = manualClock(AT_0159);
    const scheduler = testScheduler(config, [tableJob('nightly')], [{ name: 'nightly', expr: '0 2 * * *' }], clock.now);
    scheduler.start(new Map());
    clock.set(AT_0159 + 30_000);
    scheduler.tick();
    await scheduler.idle();
    expect(scheduler.results).toEqual([]);
    clock.set(AT_0200);
    scheduler.tick();
    await scheduler.idle();
    clock.set(AT_0200 + MINUTE);
    scheduler.tick();
    await scheduler.idle();
    expect(ledgerLines(await publishedRuns(config))).toEqual([
      ['nightly', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'ok'],
    ]);
  });

  it('never overlaps a job with itself: a slot due while it runs is recorded as skipped', async () => {
    const config = tempConfig();
    const clock = manualClock(AT_0159);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    // Each run writes a row, so each publishes (a run that changes nothing leaves the snapshot be).
    const slow = testJob('slow', async (ctx): Promise<JobOutcome> => {
      runs += 1;
      if (runs === 1) await gate;
      return tableJob('slow').run(ctx);
    });
    const scheduler = testScheduler(config, [slow], [{ name: 'slow', expr: '* * * * *' }], clock.now);
    scheduler.start(new Map());
    clock.set(AT_0200);
    scheduler.tick(); // 02:00 starts and hangs
    clock.set(AT_0200 + MINUTE);
    scheduler.tick(); // 02:01 comes due while 02:00 still runs
    expect(scheduler.pendingSkips.map((s) => s.reason)).toEqual([
      'overlap: the schedule run of slow for 2026-11-20T02:00:00Z is still running',
    ]);
    release();
    await scheduler.idle();
    clock.set(AT_0200 + 2 * MINUTE);
    scheduler.tick(); // 02:02 runs, and writes the skip of 02:01 first
    await scheduler.idle();
    expect(runs).toBe(2);
    expect(ledgerLines(await publishedRuns(config)).sort()).toEqual([
      ['slow', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'ok'],
      ['slow', 'schedule', '2026-11-20T02:01:00.000Z', 1, 'skipped'],
      ['slow', 'schedule', '2026-11-20T02:02:00.000Z', 1, 'ok'],
    ]);
  });

  it('retries a failed run after the backoff, doubling, up to `retries` times', async () => {
    const config = tempConfig();
    const clock = manualClock(AT_0159);
    const failing = throwingJob('flaky', new Error('service down'));
    const scheduler = testScheduler(config, [failing], [{ name: 'flaky', expr: '0 2 * * *' }], clock.now, {
      retries: 2,
      retryBackoffMs: 5 * MINUTE,
    });
    scheduler.start(new Map());
    const tickAt = async (ms: number) => {
      clock.set(ms);
      scheduler.tick();
      await scheduler.idle();
    };
    await tickAt(AT_0200); // attempt 1 fails, retry at 02:05
    await tickAt(AT_0200 + 4 * MINUTE);
    expect(scheduler.results).toHaveLength(1);
    await tickAt(AT_0200 + 5 * MINUTE); // attempt 2 fails, retry 10 minutes later
    await tickAt(AT_0200 + 14 * MINUTE);
    expect(scheduler.results).toHaveLength(2);
    await tickAt(AT_0200 + 15 * MINUTE); // attempt 3 fails: no more retries
    await tickAt(AT_0200 + 120 * MINUTE);
    expect(scheduler.waitingRetries).toEqual([]);
    expect(ledgerLines(await publishedRuns(config))).toEqual([
      ['flaky', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'failed'],
      ['flaky', 'retry', '2026-11-20T02:00:00.000Z', 2, 'failed'],
      ['flaky', 'retry', '2026-11-20T02:00:00.000Z', 3, 'failed'],
    ]);
  });

  it('records a slot as skipped, naming the holder, when another writer holds the warehouse', async () => {
    const config = tempConfig();
    const clock = manualClock(AT_0159);
    const scheduler = testScheduler(config, [tableJob('nightly')], [{ name: 'nightly', expr: '0 * * * *' }], clock.now);
    scheduler.start(new Map());
    const other = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'backfill', runId: 'B-7' } });
    clock.set(AT_0200);
    scheduler.tick();
    await scheduler.idle();
    expect(scheduler.pendingSkips).toHaveLength(1); // the ledger cannot be written yet
    await other.close();
    clock.set(AT_0200 + MINUTE); // no slot due: the next tick records the skip
    scheduler.tick();
    await scheduler.idle();
    expect(scheduler.pendingSkips).toHaveLength(0);
    clock.set(AT_0200 + 60 * MINUTE);
    scheduler.tick();
    await scheduler.idle();
    const runs = await publishedRuns(config);
    expect(ledgerLines(runs)).toEqual([
      ['nightly', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'skipped'],
      ['nightly', 'schedule', '2026-11-20T03:00:00.000Z', 1, 'ok'],
    ]);
    expect(runs[0].errorSummary).toMatch(/^warehouse busy: .* efsync backfill \(run B-7, pid \d+ on host .*\)/);
  });

  it('after the process was suspended, runs only the newest of the slots that came due at once', async () => {
    const config = tempConfig();
    const clock = manualClock(AT_0159);
    const scheduler = testScheduler(config, [tableJob('hourly')], [{ name: 'hourly', expr: '0 * * * *' }], clock.now);
    scheduler.start(new Map());
    clock.set(AT_0200 + 3 * 60 * MINUTE + 30_000); // no tick from 01:59 to 05:00:30
    scheduler.tick();
    await scheduler.idle();
    expect(ledgerLines(await publishedRuns(config))).toEqual([
      ['hourly', 'schedule', '2026-11-20T05:00:00.000Z', 1, 'ok'],
    ]);
  });
});
