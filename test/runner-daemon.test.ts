// The daemon as `efsync schedule` runs it: its minute timer ticking on (fake) timers fires the nightly at
// its slot, and a stop signal ends it gracefully.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobRegistry } from '../src/runner/registry.js';
import { runDaemon } from '../src/runner/schedule.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import {
  ledgerLines,
  publishedRuns,
  quietLog,
  tableJob,
  tempConfig,
  waitingJob,
  runSlot,
  insertRunningRun,
} from './fixtures/runner-setup.js';

afterEach(() => vi.useRealTimers());

/** Resolves when a printed line matches. */
function printer() {
  const lines: string[] = [];
  const waiters: [RegExp, () => void][] = [];
  return {
    lines,
    print: (line: string) => {
      lines.push(line);
      for (const [pattern, resolve] of waiters) if (pattern.test(line)) resolve();
    },
    until: (pattern: RegExp) =>
      new Promise<void>((resolve) => {
        if (lines.some((l) => pattern.test(l))) resolve();
        else waiters.push([pattern, resolve]);
      }),
  };
}

describe('efsync schedule (runDaemon)', () => {
  it('fires the nightly when its minute timer reaches its slot, then stops on the signal', async () => {
    vi.useFakeTimers({
      now: new Date('2026-11-20T01:59:50Z'),
      toFake: ['Date', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'],
    });
    const config = tempConfig({ schedule: { jobs: { nightly: '0 2 * * *' } } });
    const registry = new JobRegistry().add(tableJob('nightly'));
    const out = printer();
    const stop = new AbortController();
    const daemon = runDaemon({ config, registry, log: quietLog, signal: stop.signal, print: out.print });
    await out.until(/^efsync schedule: 1 job/); // the minute timer is ticking from here on
    await vi.advanceTimersByTimeAsync(15_000);
    vi.useRealTimers(); // the run itself (DuckDB, the lock) on real time
    await out.until(/nightly \(schedule 2026-11-20T02:00:00Z\): ok/);
    stop.abort(new Error('SIGTERM'));
    await daemon;
    expect(out.lines[0]).toBe('efsync schedule: 1 job(s), time zone UTC, catch-up once');
    expect(out.lines.at(-1)).toBe('efsync schedule: stopped (SIGTERM)');
    expect(ledgerLines(await publishedRuns(config))).toEqual([
      ['nightly', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'ok'],
    ]);
  });

  it('a stop during a run records it as interrupted and ends the daemon', async () => {
    const config = tempConfig({ schedule: { jobs: { slow: '0 2 * * *' } } });
    const yesterday = Date.UTC(2026, 10, 19, 2);
    await runSlot(config, 'slow', yesterday);
    const stop = new AbortController();
    const registry = new JobRegistry().add(waitingJob('slow', () => stop.abort(new Error('SIGTERM'))));
    const out = printer();
    // The ledger says slow last ran for yesterday's slot: the daemon catches up today's at start,
    // and the stop arrives while that run is going.
    await runDaemon({
      config,
      registry,
      log: quietLog,
      signal: stop.signal,
      print: out.print,
      clock: () => Date.UTC(2026, 10, 20, 9),
    });
    expect(out.lines).toContain('efsync schedule: stopped (SIGTERM)');
    expect(ledgerLines(await publishedRuns(config)).at(-1)).toEqual([
      'slow',
      'catch-up',
      '2026-11-20T02:00:00.000Z',
      1,
      'interrupted',
    ]);
  });

  it('at start, marks the run of a killed process crashed and catches its slot up', async () => {
    const config = tempConfig({ schedule: { jobs: { nightly: '0 2 * * *' } } });
    const yesterday = Date.UTC(2026, 10, 19, 2);
    const today = Date.UTC(2026, 10, 20, 2);
    await runSlot(config, 'nightly', yesterday);
    // A process that died at 02:10 left its row `running` in the writer's file, never published.
    const crashed = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'nightly', runId: 'CRASHED' } });
    await insertRunningRun(crashed, {
      runId: 'CRASHED',
      job: 'nightly',
      trigger: 'schedule',
      scheduledFor: today,
      startedAt: today,
    });
    await crashed.close();

    const stop = new AbortController();
    const out = printer();
    const daemon = runDaemon({
      config,
      registry: new JobRegistry().add(tableJob('nightly')),
      log: quietLog,
      signal: stop.signal,
      print: out.print,
      clock: () => Date.UTC(2026, 10, 20, 9),
    });
    await out.until(/nightly \(catch-up 2026-11-20T02:00:00Z\): ok/);
    stop.abort(new Error('SIGTERM'));
    await daemon;
    expect(ledgerLines(await publishedRuns(config)).slice(1)).toEqual([
      ['nightly', 'schedule', '2026-11-20T02:00:00.000Z', 1, 'crashed'],
      ['nightly', 'catch-up', '2026-11-20T02:00:00.000Z', 2, 'ok'],
    ]);
  });
});
