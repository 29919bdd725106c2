// `efsync status --check` (a Nagios plugin): one sync against the emulator over loopback, then the
// check at three moments and with a failed run: OK, WARNING, CRITICAL, and their exit codes.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import syncJob from '../jobs/sync.js';
import type { LoadedConfig } from '../src/config.js';
import { defineJob } from '../src/job.js';
import type { Emulator } from '../src/emulator/server.js';
import { checkStatus } from '../src/runner/check.js';
import { JobRegistry } from '../src/runner/registry.js';
import { runJob } from '../src/runner/run.js';
import { collectStatus } from '../src/runner/status.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { quietLog } from './fixtures/runner-setup.js';
import { API_KEY, emulator, NOW, runSync, tempDir, testConfig } from './sync-support.js';

vi.setConfig({ testTimeout: 120_000 });

const HOUR = 3_600_000;
const PERFDATA =
  / \| sites=2;;;0 problems=\d+;;;0 failed_jobs=\d;;;0 actual_age=\d+s;21600;86400;0 forecast_age=\d+s;43200;129600;0$/;

describe('efsync status --check', () => {
  let emu: Emulator;
  let config: LoadedConfig;
  const registry = new JobRegistry().add(syncJob);
  const check = async (at: number, reg = registry) =>
    checkStatus(await collectStatus(config, reg, at), config.monitoring, at);

  beforeAll(async () => {
    emu = await emulator({ sites: 2 });
    config = testConfig({ dir: tempDir('efsync-check-'), url: emu.url });
    expect((await runSync(config, { only: ['sites', 'forecasts', 'actuals'] })).status).toBe('ok');
  });
  afterAll(() => emu.close());

  it('OK an hour after the sync, with the perfdata', async () => {
    const { code, line } = await check(NOW + HOUR);
    expect(code).toBe(0);
    expect(line).toMatch(/^EFSYNC OK - 2 site\(s\) fresh \(oldest actual \d+m old\), last runs ok \|/);
    expect(line).toMatch(PERFDATA);
  });

  it('WARNING 8 hours later: the actuals are past monitoring.actual_age.warn (6h)', async () => {
    const { code, line } = await check(NOW + 8 * HOUR);
    expect(code).toBe(1);
    expect(line).toMatch(
      /^EFSYNC WARNING - Esbjerg wind: newest actual 8\.\dh old; Uppsala solar fixed: newest actual 8\.\dh old \|/,
    );
  });

  it('CRITICAL 30 hours later, and when a job failed', async () => {
    expect((await check(NOW + 30 * HOUR)).line).toMatch(
      /^EFSYNC CRITICAL - Esbjerg wind: newest actual 30\.\dh old; .* \(\+1 more\) \|/,
    );
    const nightly = defineJob({
      name: 'nightly',
      description: 'fails',
      schedule: '0 2 * * *',
      run: async () => ({ status: 'failed', rows: {}, failures: [{ reason: 'the service was down' }] }),
    });
    await runJob(nightly, { config, log: quietLog, now: () => NOW + 2 * HOUR });
    const { code, line } = await check(NOW + 3 * HOUR, new JobRegistry().add(syncJob).add(nightly));
    expect(code).toBe(2);
    expect(line).toMatch(/^EFSYNC CRITICAL - nightly failed: the service was down; nightly: never ended ok \|/);
    expect(line).toContain('failed_jobs=1;;;0');
  });

  it('the command exits with the state and prints the one line, never the key', async () => {
    // The wall clock is days past the emulator's fixed now: the actuals are far too old.
    const { code, stdout, stderr } = await startChild([...CLI, 'status', '--check', '--db', config.warehouse.path], {
      EFSYNC_LOG_LEVEL: 'warn',
      EFSYNC_API_KEY: API_KEY,
    }).exit;
    expect(code).toBe(2);
    expect(stdout).toMatch(/^EFSYNC CRITICAL - .* \| sites=2;;;0 .*\n$/);
    expect(`${stdout}${stderr}`).not.toContain(API_KEY);
  });

  it('UNKNOWN (3) when there is nothing to judge or the config is broken', async () => {
    const empty = tempDir('efsync-check-empty-');
    const [none, broken] = await Promise.all([
      startChild([...CLI, 'status', '--check', '--db', `${empty}/warehouse.duckdb`], { EFSYNC_LOG_LEVEL: 'warn' }).exit,
      startChild([...CLI, 'status', '--check', '--config', `${empty}/missing.yaml`], { EFSYNC_LOG_LEVEL: 'warn' }).exit,
    ]);
    expect(none).toMatchObject({ code: 3, stdout: 'EFSYNC UNKNOWN - nothing published yet: no run has ended\n' });
    expect(broken.code).toBe(3);
    expect(broken.stdout).toMatch(/^EFSYNC UNKNOWN - .*missing\.yaml/);
  });
});
