// The runner's Prometheus metrics (docs/runner.md, "Metrics"): a set per registry, and a
// one-shot `efsync run` against the emulator over loopback that writes a textfile and pushes to a
// Pushgateway (a local receiver), both of which promtool accepts and neither of which carries the key.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { RunnerMetrics } from '../src/runner/metrics.js';
import { pushMetrics } from '../src/runner/metrics-out.js';
import { EXIT } from '../src/outcome.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { needsPromtool, PROMTOOL, promtool } from './fixtures/promtool.js';
import { API_KEY, emulator, NOW, tempDir, writeConfigFile } from './sync-support.js';

vi.setConfig({ testTimeout: 120_000 });

describe('RunnerMetrics', () => {
  it("keeps each set in its own registry, not prom-client's global one", async () => {
    const [one, other] = [new RunnerMetrics(), new RunnerMetrics()];
    one.observer.request('GET /platform/v2/sites', 200, 0.2);
    expect(await one.registry.metrics()).toContain(
      'efsync_service_requests_total{endpoint="GET /platform/v2/sites",status="200"} 1',
    );
    expect(await other.registry.metrics()).not.toContain('efsync_service_requests_total{');
    expect(register.getSingleMetric('efsync_service_requests_total')).toBeUndefined();
  });
});

describe('pushMetrics', () => {
  it("PUTs to the group under the gateway's path prefix, and a status other than 2xx is an error", async () => {
    let status = 200;
    const seen: string[] = [];
    const gateway = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume().on('end', () => res.writeHead(status).end(`${'x'.repeat(500)}\n`));
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    const { registry } = new RunnerMetrics();
    try {
      await pushMetrics(`${base}/prefix/`, registry);
      status = 500;
      await expect(pushMetrics(base, registry)).rejects.toThrow(/^push failed with status 500, x{171}$/);
      status = 302;
      await expect(pushMetrics(base, registry)).rejects.toThrow('the Pushgateway answered 302');
      expect(seen).toEqual(['PUT /prefix/metrics/job/efsync', 'PUT /metrics/job/efsync', 'PUT /metrics/job/efsync']);
    } finally {
      gateway.close();
    }
  });
});

describe('efsync run --metrics-file --pushgateway', () => {
  let emu: Emulator;
  const pushes: { method: string; url: string; type: string; body: string }[] = [];
  const gateway = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      pushes.push({ method: req.method ?? '', url: req.url ?? '', type: req.headers['content-type'] ?? '', body });
      res.writeHead(200).end();
    });
  });

  beforeAll(async () => {
    // One 429 and one 503 on the way, so the throttle and retry counters have something to count.
    emu = await emulator({
      sites: 2,
      faultHook: ({ counter }) => (counter === 2 ? 'http429' : counter === 3 ? 'http503' : undefined),
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await emu.close();
    gateway.close();
  });

  it('writes a textfile promtool accepts, pushes the same to the gateway, and never the key', async () => {
    const dir = tempDir('efsync-metrics-');
    const config = writeConfigFile(dir, {
      dir,
      url: emu.url,
      service: { retries: { base_delay: '10ms' }, throttle: { base_delay: '10ms', max_delay: '20ms' } },
    });
    const file = join(dir, 'efsync.prom');
    const port = (gateway.address() as AddressInfo).port;
    const { code, stdout, stderr } = await startChild(
      [
        ...CLI,
        'run',
        'sync',
        '--only',
        'sites,forecasts,actuals',
        '--config',
        config,
        '--metrics-file',
        file,
        '--pushgateway',
        `http://127.0.0.1:${port}/`,
      ],
      { EFSYNC_NOW: new Date(NOW).toISOString(), EFSYNC_LOG_LEVEL: 'debug' },
    ).exit;
    expect(code, stderr).toBe(EXIT.ok);
    const text = readFileSync(file, 'utf8');
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    expect(text).toContain('efsync_job_last_run_status{efsync_job="sync",status="ok"} 1');
    expect(text).toContain('efsync_job_last_run_status{efsync_job="sync",status="failed"} 0');
    expect(text).toMatch(/^efsync_job_last_run_rows\{efsync_job="sync",table="actuals"\} [1-9]\d*$/m);
    // Which request met the faults depends on the order the sites' requests reached the emulator.
    expect(text).toMatch(/^efsync_service_throttled_total\{endpoint="GET [^"]+"\} 1$/m);
    expect(text).toMatch(/^efsync_service_requests_total\{endpoint="GET [^"]+",status="429"\} 1$/m);
    expect(text).toMatch(/^efsync_service_retries_total\{endpoint="GET [^"]+",status="503"\} 1$/m);
    expect(text).toContain('efsync_service_request_duration_seconds_count{endpoint="GET /platform/v2/sites"} 1');
    // Two sites, each with its newest actual 0-2 h before the run's now, and a forecast vintage.
    const ages = [
      ...text.matchAll(/^efsync_site_newest_value_age_seconds\{site_id="[^"]+",resource="actuals"\} (\S+)$/gm),
    ];
    expect(ages.map((m) => Number(m[1]) >= 0 && Number(m[1]) < 7200)).toEqual([true, true]);
    expect(text).toMatch(/^efsync_site_newest_vintage_timestamp_seconds\{site_id="[^"]+",resource="forecasts"\} \d+/m);
    expect(text).toMatch(/^efsync_warehouse_size_bytes [1-9]\d*$/m);
    // Labels are route templates and ids, never a request's path with its query.
    expect(text).not.toMatch(/endpoint="[^"]*\?/);
    expect(pushes).toEqual([
      { method: 'PUT', url: '/metrics/job/efsync', type: 'text/plain; version=0.0.4; charset=utf-8', body: text },
    ]);
    for (const output of [text, stdout, stderr]) expect(output).not.toContain(API_KEY);
    if (PROMTOOL) expect(promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' });
  });

  it(needsPromtool('promtool rejects what it should (the check is not vacuous)'), ({ skip }) => {
    if (!PROMTOOL) skip();
    const bad = promtool(['check', 'metrics'], '# TYPE efsync_requests counter\nefsync_requests 1\n');
    expect(bad.output).toMatch(/counter metrics should have "_total" suffix/);
  });

  it('a pushgateway that is not a URL is a usage error before anything runs', async () => {
    const { code, stderr } = await startChild([...CLI, 'run', 'sync', '--pushgateway', 'gateway:9091'], {
      EFSYNC_LOG_LEVEL: 'warn',
    }).exit;
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('--pushgateway: not an http(s) URL: "gateway:9091"');
  });
});
