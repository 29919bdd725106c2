// `efsync run`, `config check` and `config schema` as a scheduler or an operator sees them: exit
// codes, messages on stderr/stdout, the committed JSON Schema up to date.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { publishedRuns, tempConfig } from './fixtures/runner-setup.js';

// Each test starts the real command line, which loads every area's commands: give it time.
vi.setConfig({ testTimeout: 120_000 });

const efsync = (...args: string[]) => startChild([...CLI, ...args], { EFSYNC_LOG_LEVEL: 'warn' }).exit;

describe('efsync run', () => {
  it('exits 2 for an unknown job, listing the jobs', async () => {
    const { code, stderr } = await efsync('run', 'nigthly');
    expect(code).toBe(EXIT.usage);
    expect(stderr).toMatch(
      /unknown job "nigthly"; the jobs are: accuracy, apply-sites, nightly, push-capacity, retention, sites-drift, sync, sync-actuals, sync-forecasts, sync-models, sync-outputs, sync-sites/,
    );
  });

  it('exits 2 for a bad option or a bad option value', async () => {
    const [bogus, { code, stderr }] = await Promise.all([
      efsync('run', 'nightly', '--bogus'),
      efsync('run', 'sync-actuals', '--from', '2026-11-02T00:00Z', '--to', '2026-11-01T00:00Z'),
    ]);
    expect(bogus.code).toBe(EXIT.usage);
    expect(bogus.stderr).toContain("unknown option '--bogus'");
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('--from 2026-11-02T00:00Z must be before --to 2026-11-01T00:00Z');
  });

  it('exits 2 for an invalid config, naming the key and line', async () => {
    const config = tempConfig();
    const file = join(dirname(config.warehouse.path), 'efsync.yaml');
    writeFileSync(file, 'schedule:\n  timezone: Europe/Stockholm\n  catch_up: twice\n');
    const { code, stderr } = await efsync('run', 'nightly', '--config', file);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain(`${file}:3:13: schedule.catch_up: Invalid option`);
  });

  it('exits 2 when a service is configured but no API key is given, and records the run', async () => {
    const config = tempConfig();
    const { code, stdout } = await startChild([...CLI, 'run', 'nightly', '--db', config.warehouse.path], {
      EFSYNC_LOG_LEVEL: 'fatal',
      EFSYNC_BASE_URL: 'http://127.0.0.1:9',
      EFSYNC_API_KEY: '',
      EFSYNC_API_KEY_FILE: '',
    }).exit;
    expect(code).toBe(EXIT.usage);
    expect(stdout).toContain('error: no API key for http://127.0.0.1:9: set EFSYNC_API_KEY');
    expect(stdout).toMatch(/nightly run \S+: failed \(exit 2\)/);
  });

  it('runs to its end and records it when the reader of its output goes away', async () => {
    // As under `efsync run sync-sites | tee log` with tee killed: every write then fails (EPIPE).
    const config = tempConfig();
    const child = spawn(process.execPath, [...CLI, 'run', 'sync-sites', '--db', config.warehouse.path], {
      env: { ...process.env, EFSYNC_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    child.stderr.destroy();
    const [code] = await once(child, 'close');
    expect(code).toBe(EXIT.ok);
    expect((await publishedRuns(config)).map((run) => [run.job, run.status])).toEqual([['sync-sites', 'ok']]);
  });

  it('exits 3 naming the holder when another process writes the warehouse', async () => {
    const config = tempConfig();
    const holder = await Warehouse.open({ path: config.warehouse.path, holder: { job: 'nightly', runId: 'N-1' } });
    try {
      const { code, stdout } = await efsync('run', 'sync-sites', '--db', config.warehouse.path, '--wait', '0');
      expect(code).toBe(EXIT.busy);
      expect(stdout).toMatch(
        new RegExp(`not run: warehouse .* is being written by efsync nightly \\(run N-1, pid ${process.pid} on host`),
      );
    } finally {
      await holder.close();
    }
  });
});

describe('efsync config', () => {
  it('config check accepts the committed config/efsync.yaml', async () => {
    const { code, stdout } = await efsync('config', 'check');
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain('config/efsync.yaml: ok');
    expect(stdout).toContain('nightly "0 2 * * *"');
  });

  it('config check names the key and line of a bad schedule', async () => {
    const config = tempConfig();
    const file = join(dirname(config.warehouse.path), 'efsync.yaml');
    writeFileSync(file, '# a comment\nschedule:\n  jobs:\n    nightly: "0 2 * *"\n    sync-everything: "0 3 * * *"\n');
    const { code, stderr } = await efsync('config', 'check', '--config', file);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain(`${file}:4:14: schedule.jobs.nightly: "0 2 * *" has 4 fields; use five`);
  });

  it('the committed config/efsync.schema.json is what `config schema` prints', async () => {
    const { code, stdout } = await efsync('config', 'schema');
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(stdout)).toEqual(JSON.parse(readFileSync('config/efsync.schema.json', 'utf8')));
    expect(readFileSync('config/efsync.yaml', 'utf8').split('\n')[0]).toBe(
      '# yaml-language-server: $schema=./efsync.schema.json',
    );
  });
});
