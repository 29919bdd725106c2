// The daemon's monitoring port: `efsync schedule --metrics-port` serves /metrics (promtool accepts
// it), /healthz and /readyz, as Kubernetes probes and Prometheus reach them over loopback.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineJob } from '../src/job.js';
import { EXIT } from '../src/outcome.js';
import { liveness } from '../src/runner/monitor.js';
import { readiness } from '../src/runner/readiness.js';
import { JobRegistry } from '../src/runner/registry.js';
import { runJob } from '../src/runner/run.js';
import { runDaemon } from '../src/runner/schedule.js';
import { CLI, startChild, type Child } from './fixtures/runner-child.js';
import { PROMTOOL, promtool } from './fixtures/promtool.js';
import { quietLog, tableJob, tempConfig } from './fixtures/runner-setup.js';

vi.setConfig({ testTimeout: 120_000 });

const DAY = 86_400_000;
const KEY = 'monitor-test-secret-key';

let child: Child | null = null;
afterEach(() => {
  child?.process.kill('SIGKILL');
  child = null;
});

describe('efsync schedule --metrics-port', () => {
  it('serves /metrics that promtool accepts, /healthz and /readyz, and stops on SIGTERM', async () => {
    const config = tempConfig();
    await runJob(tableJob('nightly'), { config, log: quietLog });
    child = startChild(
      [...CLI, 'schedule', '--db', config.warehouse.path, '--metrics-port', '0', '--metrics-host', '127.0.0.1'],
      { EFSYNC_LOG_LEVEL: 'warn', EFSYNC_API_KEY: KEY, EFSYNC_BASE_URL: 'http://127.0.0.1:9' },
    );
    const url = /monitoring on (http:\/\/\S+):/.exec(await child.line(/monitoring on/))![1];

    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await metrics.text();
    expect(text).toContain('efsync_job_last_run_status{efsync_job="nightly",status="ok"} 1');
    expect(text).toMatch(/^efsync_job_last_run_rows\{efsync_job="nightly",table="test_marks"\} 1$/m);
    expect(text).toMatch(/^efsync_warehouse_size_bytes [1-9]\d*$/m);
    if (PROMTOOL) expect(promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' });

    const healthz = await fetch(`${url}/healthz`);
    expect(healthz.status).toBe(200);
    expect(await healthz.json()).toMatchObject({ status: 'ok', checks: [{ name: 'scheduler', ok: true }] });
    const readyz = await fetch(`${url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(((await readyz.json()) as { checks: { name: string }[] }).checks.map((c) => c.name)).toEqual([
      'config',
      'warehouse',
      'runs',
    ]);
    expect((await fetch(`${url}/elsewhere`)).status).toBe(404);

    child.process.kill('SIGTERM');
    const { code, stdout, stderr } = await child.exit;
    expect(code).toBe(EXIT.ok);
    for (const output of [text, stdout, stderr]) expect(output).not.toContain(KEY);
  });

  it('a port that is not a number is a usage error', async () => {
    const { code, stderr } = await startChild([...CLI, 'schedule', '--metrics-port', 'http'], {
      EFSYNC_LOG_LEVEL: 'warn',
    }).exit;
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('--metrics-port: not a port (0-65535): "http"');
  });
});

describe('/readyz and /healthz', () => {
  it('/readyz fails once a job has failed for longer than monitoring.ready_failing_for, /healthz does not', async () => {
    const config = tempConfig({ monitoring: { ready_failing_for: '1d' } });
    const broken = defineJob({
      name: 'nightly',
      description: 'fails',
      schedule: null,
      run: async () => ({ status: 'failed', rows: {}, failures: [{ reason: 'the service was down' }] }),
    });
    const twoDaysAgo = Date.now() - 2 * DAY;
    await runJob(broken, { config, log: quietLog, now: () => twoDaysAgo });
    const stop = new AbortController();
    const lines: string[] = [];
    let monitoring: (url: string) => void;
    const started = new Promise<string>((resolve) => (monitoring = resolve));
    const registry = new JobRegistry().add(broken);
    const daemon = runDaemon({
      config,
      registry,
      log: quietLog,
      signal: stop.signal,
      print: (line) => {
        lines.push(line);
        const url = /monitoring on (http:\/\/\S+):/.exec(line)?.[1];
        if (url) monitoring(url);
      },
      monitor: { host: '127.0.0.1', port: 0, ready: () => readiness({ config, registry, clock: Date.now }) },
    });
    const url = await started;
    const readyz = await fetch(`${url}/readyz`);
    expect(readyz.status).toBe(503);
    const body = (await readyz.json()) as { status: string; checks: { name: string; ok: boolean; detail: string }[] };
    expect(body.status).toBe('failing');
    expect(body.checks.find((c) => c.name === 'runs')).toMatchObject({ ok: false });
    expect(body.checks.find((c) => c.name === 'runs')!.detail).toMatch(/^nightly failed, no ok run for 2\.0d$/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    stop.abort(new Error('SIGTERM'));
    await daemon;
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('/healthz fails when the scheduler has not ticked for two and a half minutes', () => {
    const now = Date.UTC(2026, 10, 26, 4);
    expect(liveness({ lastTick: () => now - 60_000, clock: () => now })[0]).toMatchObject({ ok: true });
    expect(liveness({ lastTick: () => now - 151_000, clock: () => now })[0]).toMatchObject({
      ok: false,
      detail: 'last tick 3m ago',
    });
    expect(liveness({ lastTick: () => null, clock: () => now })[0]).toMatchObject({ ok: false, detail: 'not started' });
  });
});
