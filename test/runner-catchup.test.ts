// Catch-up after downtime, from the ledger: a nightly missed while the daemon was down runs once
// at start (catch_up: once), each missed night up to the limit (each), or none (skip).
import { describe, expect, it } from 'vitest';
import { planCatchUp } from '../src/runner/catchup.js';
import { runJob } from '../src/runner/run.js';
import { readCoveredUntil } from '../src/runner/schedule.js';
import { formatInstant } from '../src/time.js';
import {
  ledgerLines,
  manualClock,
  publishedRuns,
  quietLog,
  tableJob,
  tempConfig,
  testScheduler,
  waitingJob,
  runSlot,
} from './fixtures/runner-setup.js';

const DAY = 86_400_000;
const NIGHT = Date.UTC(2026, 10, 16, 2, 0); // the last nightly run before the downtime
const RESTART = Date.UTC(2026, 10, 20, 9, 15); // the daemon comes back four nights later
const NIGHTLY = { expr: '0 2 * * *', tz: 'UTC' };

describe('planCatchUp', () => {
  it('once: the newest missed slot; each: the newest `limit`, oldest first; skip: none, noted', () => {
    const iso = (slots: number[]) => slots.map(formatInstant);
    expect(iso(planCatchUp(NIGHTLY, NIGHT, RESTART, 'once', 3).run)).toEqual(['2026-11-20T02:00:00Z']);
    expect(iso(planCatchUp(NIGHTLY, NIGHT, RESTART, 'each', 3).run)).toEqual([
      '2026-11-18T02:00:00Z',
      '2026-11-19T02:00:00Z',
      '2026-11-20T02:00:00Z',
    ]);
    expect(planCatchUp(NIGHTLY, NIGHT, RESTART, 'each', 3).note).toBe(
      'missed slots not caught up: 2026-11-17T02:00:00Z',
    );
    const skip = planCatchUp(NIGHTLY, NIGHT, RESTART, 'skip', 3);
    expect(skip.run).toEqual([]);
    expect(skip.skip).toEqual({
      slot: Date.UTC(2026, 10, 20, 2, 0),
      reason: 'missed while the daemon was down (2026-11-17T02:00:00Z to 2026-11-20T02:00:00Z); catch_up: skip',
    });
  });

  it('nothing missed, or no ledger yet (first start): nothing to catch up', () => {
    expect(planCatchUp(NIGHTLY, Date.UTC(2026, 10, 20, 2, 0, 5), RESTART, 'each', 3)).toEqual({
      run: [],
      skip: null,
      note: null,
    });
    expect(planCatchUp(NIGHTLY, undefined, RESTART, 'once', 3)).toEqual({ run: [], skip: null, note: null });
  });
});

describe('the daemon starting after downtime', () => {
  async function restartAfterDowntime(catchUp: 'skip' | 'once' | 'each') {
    const config = tempConfig({ schedule: { catch_up: catchUp, catch_up_limit: 2 } });
    await runSlot(config, 'nightly', NIGHT);
    const clock = manualClock(RESTART);
    const scheduler = testScheduler(config, [tableJob('nightly')], [{ name: 'nightly', expr: '0 2 * * *' }], clock.now);
    scheduler.start(await readCoveredUntil(config));
    await scheduler.idle();
    return { config, scheduler, clock, lines: ledgerLines(await publishedRuns(config)).slice(1) };
  }

  it('once (the default): the missed nightly runs once at start', async () => {
    expect((await restartAfterDowntime('once')).lines).toEqual([
      ['nightly', 'catch-up', '2026-11-20T02:00:00.000Z', 1, 'ok'],
    ]);
  });

  it('each: every missed night up to catch_up_limit, oldest first', async () => {
    const { config, scheduler } = await restartAfterDowntime('each');
    // The fake clock stands still, so the runs share a start time: order them as they ran.
    const runs = await publishedRuns(config);
    const ran = scheduler.results.map((result) => runs.find((run) => run.runId === result.runId)!);
    expect(ledgerLines(ran)).toEqual([
      ['nightly', 'catch-up', '2026-11-19T02:00:00.000Z', 1, 'ok'],
      ['nightly', 'catch-up', '2026-11-20T02:00:00.000Z', 1, 'ok'],
    ]);
  });

  it('skip: runs nothing and records the newest missed night as skipped', async () => {
    const { config, scheduler, lines } = await restartAfterDowntime('skip');
    expect(scheduler.results).toEqual([]);
    expect(lines).toEqual([['nightly', 'catch-up', '2026-11-20T02:00:00.000Z', 1, 'skipped']]);
    expect((await publishedRuns(config))[1].errorSummary).toBe(
      'missed while the daemon was down (2026-11-17T02:00:00Z to 2026-11-20T02:00:00Z); catch_up: skip',
    );
  });

  it('a restart after the catch-up catches up nothing more', async () => {
    const { config } = await restartAfterDowntime('once');
    const scheduler = testScheduler(
      config,
      [tableJob('nightly')],
      [{ name: 'nightly', expr: '0 2 * * *' }],
      () => RESTART + 60_000,
    );
    scheduler.start(await readCoveredUntil(config));
    await scheduler.idle();
    expect(scheduler.results).toEqual([]);
  });

  it('a nightly interrupted by a shutdown is caught up at the next start, as its next attempt', async () => {
    const config = tempConfig();
    const slot = Date.UTC(2026, 10, 20, 2, 0);
    await runSlot(config, 'nightly', slot - DAY);
    const stop = new AbortController();
    await runJob(
      waitingJob('nightly', () => stop.abort(new Error('SIGTERM'))),
      {
        config,
        log: quietLog,
        now: () => slot,
        trigger: 'schedule',
        scheduledFor: slot,
        signal: stop.signal,
      },
    );
    const scheduler = testScheduler(
      config,
      [tableJob('nightly')],
      [{ name: 'nightly', expr: '0 2 * * *' }],
      () => RESTART,
    );
    scheduler.start(await readCoveredUntil(config));
    await scheduler.idle();
    expect(ledgerLines(await publishedRuns(config)).slice(1)).toEqual([
      ['nightly', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'interrupted'],
      ['nightly', 'catch-up', '2026-11-20T02:00:00.000Z', 2, 'ok'],
    ]);
  });
});
