// The run clock `EFSYNC_NOW` sets for tests and benchmarks: a run of the command line takes its
// "now" from it (the run ledger, the sync's windows), the daemon refuses it.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../src/cli/boundary.js';
import { runClock } from '../src/cli/clock.js';
import type { Emulator } from '../src/emulator/server.js';
import { runCli } from './fixtures/runner-child.js';
import { emulator, NOW, query, tempDir, writeConfigFile } from './sync-support.js';

vi.setConfig({ testTimeout: 120_000 });

describe('runClock', () => {
  it('is the wall clock without EFSYNC_NOW', () => {
    expect(runClock({})).toBe(Date.now);
  });

  it('starts at EFSYNC_NOW and runs at the wall clock pace', () => {
    const clock = runClock({ EFSYNC_NOW: '2026-03-01T02:00:00Z' });
    const t = clock();
    expect(t).toBeGreaterThanOrEqual(Date.UTC(2026, 2, 1, 2));
    expect(t).toBeLessThan(Date.UTC(2026, 2, 1, 2) + 1000);
  });

  it('names the variable when its value is not an instant', () => {
    expect(() => runClock({ EFSYNC_NOW: 'tomorrow' })).toThrow(UsageError);
    expect(() => runClock({ EFSYNC_NOW: 'tomorrow' })).toThrow(/EFSYNC_NOW: not a timestamp: "tomorrow"/);
  });
});

describe('EFSYNC_NOW on the command line', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await emulator({ sites: 2 }); // its clock held at NOW, a week before the wall clock
  });
  afterAll(async () => {
    await emu?.close();
  });

  it('is the clock of a run: its ledger row and the sync window end at that instant', async () => {
    const dir = tempDir();
    const config = writeConfigFile(dir, { dir, url: emu.url });
    const run = await runCli(['run', 'sync-actuals', '--config', config], { EFSYNC_NOW: new Date(NOW).toISOString() });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^publish: \(\d+\.\d\d s/m); // what the publish cost (measure.ts)
    const [ledger] = await query<{ started: number }>(
      `${dir}/warehouse.duckdb`,
      "SELECT epoch_ms(started_at) AS started FROM runs WHERE job = 'sync-actuals'",
    );
    expect(Number(ledger.started) - NOW).toBeGreaterThanOrEqual(0);
    expect(Number(ledger.started) - NOW).toBeLessThan(60_000);
    const marks = await query<{ to: number }>(
      `${dir}/warehouse.duckdb`,
      "SELECT epoch_ms(synced_to) AS to FROM sync_state WHERE resource = 'actuals'",
    );
    expect(marks).toHaveLength(2);
    for (const mark of marks) expect(Number(mark.to) - NOW).toBeLessThan(60_000);
  });

  it('is refused by the daemon, which keeps the wall clock', async () => {
    const run = await runCli(['schedule'], { EFSYNC_NOW: '2026-03-01T02:00:00Z' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('EFSYNC_NOW is for single runs in tests and benchmarks');
  });
});
