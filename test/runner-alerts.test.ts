// Alerts to webhooks: a local receiver over loopback hears one "firing" for a failing job and one
// "resolved" when it runs ok again, one per stale site, one for a missed slot; a delivery is
// retried and recorded in alert_deliveries; neither the API key nor the webhook's secret nor its
// URL reaches a log line, an alert or the ledger.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Config, type LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import { defineJob } from '../src/job.js';
import type { JobOutcome } from '../src/outcome.js';
import { evaluateAlerts } from '../src/runner/alerts.js';
import { JobRegistry } from '../src/runner/registry.js';
import { runJob } from '../src/runner/run.js';
import { runDaemon } from '../src/runner/schedule.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { publishedAll, quietLog } from './fixtures/runner-setup.js';
import { API_KEY, emulator, NOW, runSync, tempDir } from './sync-support.js';

vi.setConfig({ testTimeout: 120_000 });

const HOUR = 3_600_000;
const SECRET = 'webhook-shared-secret-42';
const TOKEN = 'T000/B000/slack-url-token';

interface Received {
  path: string;
  body: Record<string, unknown>;
  raw: string;
  signature: string | undefined;
}

/** A webhook receiver on loopback; `failFirst` answers 503 to that many requests first. */
function receiver(failFirst = 0) {
  const received: Received[] = [];
  let failures = failFirst;
  const server: Server = createServer((req: IncomingMessage, res) => {
    let raw = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      if (failures > 0) {
        failures -= 1;
        res.writeHead(503).end();
        return;
      }
      const signature = req.headers['x-efsync-signature'];
      received.push({ path: req.url ?? '', body: JSON.parse(raw), raw, signature: signature as string | undefined });
      res.writeHead(204).end();
    });
  });
  return {
    received,
    start: () =>
      new Promise<string>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Every log line, to look for secrets in. */
function capturedLog() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), text: () => text };
}

function alertConfig(dir: string, url: string, extra: Record<string, unknown> = {}): LoadedConfig {
  writeFileSync(join(dir, 'secret'), SECRET);
  return {
    ...Config.parse({
      warehouse: { path: join(dir, 'warehouse.duckdb'), lock_wait: '5s' },
      alerts: {
        webhooks: [
          { name: 'ops', url: `${url}/hook`, secret_file: join(dir, 'secret') },
          { name: 'chat', url: `${url}/services/${TOKEN}`, format: 'slack' },
        ],
        retry_backoff: '10ms',
      },
      ...extra,
    }),
    file: null,
  };
}

const outcomeJob = (name: string, outcome: () => JobOutcome) =>
  defineJob({ name, description: 'test', schedule: null, run: async () => outcome() });

describe('alerts', () => {
  const hooks = receiver(1); // the first delivery is answered 503 once, then retried
  let url: string;
  beforeAll(async () => {
    url = await hooks.start();
  });
  afterAll(() => hooks.close());

  it('a failing job fires once to each webhook, and its next ok run resolves it once', async () => {
    const dir = tempDir('efsync-alerts-');
    const config = alertConfig(dir, url);
    const captured = capturedLog();
    let status: JobOutcome['status'] = 'failed';
    const job = outcomeJob('nightly', () => ({
      status,
      rows: { t: 1 },
      failures: status === 'ok' ? [] : [{ reason: 'boom' }],
    }));
    const cycle = async (at: number) => {
      await runJob(job, { config, log: quietLog, now: () => at });
      return evaluateAlerts({ config, schedules: [], log: captured.log, now: at, lockWaitMs: 5000 });
    };

    expect((await cycle(NOW))?.map((c) => [c.key, c.firing])).toEqual([['run/nightly', true]]);
    expect(await cycle(NOW + HOUR)).toEqual([]); // still failing: nothing new to say
    status = 'ok';
    expect((await cycle(NOW + 2 * HOUR))?.map((c) => [c.key, c.firing])).toEqual([['run/nightly', false]]);

    const json = hooks.received.filter((r) => r.path === '/hook');
    expect(json.map((r) => [r.body.alert, r.body.state])).toEqual([
      ['run/nightly', 'firing'],
      ['run/nightly', 'resolved'],
    ]);
    expect(json[0].body).toMatchObject({
      source: 'efsync',
      kind: 'run',
      summary: 'nightly: the last run ended failed: boom',
      labels: { efsync_job: 'nightly', status: 'failed' },
    });
    expect(json[0].signature).toBe(`sha256=${createHmac('sha256', SECRET).update(json[0].raw).digest('hex')}`);
    const slack = hooks.received.filter((r) => r.path === `/services/${TOKEN}`);
    expect(slack.map((r) => r.body)).toEqual([
      { text: ':rotating_light: [FIRING] efsync: nightly: the last run ended failed: boom' },
      { text: ':white_check_mark: [RESOLVED] efsync: nightly: the last run ended ok' },
    ]);

    const deliveries = await publishedAll<{
      alert_key: string;
      firing: boolean;
      webhook: string;
      attempts: number;
      ok: boolean;
    }>(
      config,
      `SELECT alert_key, firing, webhook, attempts, ok FROM alert_deliveries ORDER BY delivered_at, webhook DESC`,
    );
    expect(deliveries).toEqual([
      { alert_key: 'run/nightly', firing: true, webhook: 'ops', attempts: 2, ok: true },
      { alert_key: 'run/nightly', firing: true, webhook: 'chat', attempts: 1, ok: true },
      { alert_key: 'run/nightly', firing: false, webhook: 'ops', attempts: 1, ok: true },
      { alert_key: 'run/nightly', firing: false, webhook: 'chat', attempts: 1, ok: true },
    ]);
    const ledger = JSON.stringify(await publishedAll(config, 'SELECT * FROM alert_deliveries, alert_states'));
    for (const text of [captured.text(), ledger, ...hooks.received.map((r) => r.raw)])
      for (const secret of [SECRET, TOKEN, API_KEY]) expect(text).not.toContain(secret);
    expect(captured.text()).toContain('"webhook":"ops"');
  });

  it('a job that missed its slot fires once, and runs again resolve it', async () => {
    const dir = tempDir('efsync-alerts-');
    const config = alertConfig(dir, url);
    const job = outcomeJob('nightly', () => ({ status: 'ok', rows: { t: 1 }, failures: [] }));
    const slot = Date.UTC(2026, 10, 18, 2);
    await runJob(job, { config, log: quietLog, now: () => slot });
    const at = (ms: number) =>
      evaluateAlerts({
        config,
        schedules: [{ name: 'nightly', expr: '0 2 * * *' }],
        log: quietLog,
        now: ms,
        lockWaitMs: 5000,
      });
    const keys = (changes: Awaited<ReturnType<typeof at>>) => changes?.map((c) => [c.key, c.firing, c.summary]);
    expect(keys(await at(slot + 12 * HOUR))).toEqual([]); // an ok run and no missed slot: first seen quiet
    expect(keys(await at(slot + 24 * HOUR + 30 * 60_000))).toEqual([]); // within missed_grace (1h)
    expect(keys(await at(slot + 25 * HOUR + 60_000))).toEqual([
      ['missed/nightly', true, 'nightly: no run for its slot 2026-11-19T02:00:00.000Z (1 slot(s) missed)'],
    ]);
    expect(keys(await at(slot + 26 * HOUR))).toEqual([]);
    await runJob(job, { config, log: quietLog, now: () => slot + 27 * HOUR });
    expect(keys(await at(slot + 27 * HOUR))).toEqual([['missed/nightly', false, 'nightly: ran as scheduled again']]);
  });

  it('efsync run evaluates them after the run: a run that fails on an unreachable service fires', async () => {
    const dir = tempDir('efsync-alerts-');
    const file = join(dir, 'efsync.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        service: { base_url: 'http://127.0.0.1:9', retries: { attempts: 0 } },
        warehouse: { path: join(dir, 'warehouse.duckdb') },
        alerts: { webhooks: [{ name: 'ops', url: `${url}/cli` }] },
      }),
    );
    const { code, stdout, stderr } = await startChild([...CLI, 'run', 'sync-sites', '--config', file], {
      EFSYNC_API_KEY: API_KEY,
      EFSYNC_LOG_LEVEL: 'info',
    }).exit;
    expect(code).toBe(4);
    const fired = hooks.received.filter((r) => r.path === '/cli');
    expect(fired.map((r) => [r.body.alert, r.body.state])).toEqual([['run/sync-sites', 'firing']]);
    expect(stderr).toContain('"msg":"alert fired: sync-sites: the last run ended failed');
    for (const text of [stdout, stderr, fired[0].raw]) expect(text).not.toContain(API_KEY);
  });

  it('the daemon evaluates them after its runs: a caught-up nightly that fails fires', async () => {
    const dir = tempDir('efsync-alerts-');
    const config = alertConfig(dir, `${url}/daemon`, { schedule: { jobs: { nightly: '0 2 * * *' } } });
    // the run before the newest 02:00 UTC slot, whatever the hour: that slot is then missed
    const newestSlot = Math.floor((Date.now() - 2 * HOUR) / (24 * HOUR)) * 24 * HOUR + 2 * HOUR;
    const yesterday = newestSlot - 24 * HOUR;
    const ok = outcomeJob('nightly', () => ({ status: 'ok', rows: { t: 1 }, failures: [] }));
    await runJob(ok, { config, log: quietLog, trigger: 'schedule', scheduledFor: yesterday, now: () => yesterday });
    const failing = outcomeJob('nightly', () => ({ status: 'failed', rows: {}, failures: [{ reason: 'down' }] }));
    const stop = new AbortController();
    let ran: () => void;
    const caughtUp = new Promise<void>((resolve) => (ran = resolve));
    const daemon = runDaemon({
      config,
      registry: new JobRegistry().add(failing),
      log: quietLog,
      signal: stop.signal,
      print: (line) => {
        if (/nightly \(catch-up .*\): failed/.test(line)) ran();
      },
    });
    await caughtUp;
    stop.abort(new Error('SIGTERM'));
    await daemon;
    const fired = hooks.received.filter((r) => r.path.startsWith('/daemon'));
    expect(fired.map((r) => [r.body.alert ?? r.body.text, r.body.state])).toEqual([
      ['run/nightly', 'firing'],
      [':rotating_light: [FIRING] efsync: nightly: the last run ended failed: down', undefined],
    ]);
  });

  describe('a stale site', () => {
    let emu: Emulator;
    beforeAll(async () => {
      emu = await emulator({ sites: 2 });
    });
    afterAll(() => emu.close());

    it('fires once per site when its newest actual is past monitoring.actual_age.crit', async () => {
      const dir = tempDir('efsync-alerts-');
      writeFileSync(join(dir, 'api-key'), API_KEY);
      const config = alertConfig(dir, url, {
        service: { base_url: emu.url, api_key_file: join(dir, 'api-key') },
        sync: { initial_history: '2d' },
      });
      expect((await runSync(config, { only: ['sites', 'forecasts', 'actuals'] })).status).toBe('ok');
      const at = async (ms: number) =>
        (await evaluateAlerts({ config, schedules: [], log: quietLog, now: ms, lockWaitMs: 5000 }))?.map((c) => [
          c.key.replace(/^stale\/[^/]+\//, 'stale/<site>/'),
          c.firing,
        ]);
      expect(await at(NOW + HOUR)).toEqual([]);
      expect(await at(NOW + 26 * HOUR)).toEqual([
        ['stale/<site>/actual', true],
        ['stale/<site>/actual', true],
      ]);
      expect(await at(NOW + 27 * HOUR)).toEqual([]);
    });
  });
});
