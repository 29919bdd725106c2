// A sync against the service operating (#29): a quota answered 429 without Retry-After, a quota
// that cannot be met before the run's timeout, an API key revoked mid-run, and a service gone
// mid-run. The quota's window
// is shortened (N requests a second rather than 120 a minute) so that the tests stay short; the
// client's backoff is scaled with it (service.throttle).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import type { Emulator } from '../src/emulator/server.js';
import { createLogger } from '../src/log.js';
import { loadJobs } from '../src/runner/registry.js';
import { runJob } from '../src/runner/run.js';
import syncJob from '../jobs/sync.js';
import { API_KEY, emulator, NOW, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const SITES = 3;
/** The client's backoff at the scale of a one-second window. */
const THROTTLE = { attempts: 10, base_delay: '50ms', max_delay: '2s' };

let emu: Emulator;
let cleanDb: string;

beforeAll(async () => {
  emu = await emulator({ sites: SITES });
  const dir = tempDir();
  const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb') });
  expect((await runSync(clean)).status).toBe('ok');
  cleanDb = clean.warehouse.path;
}, 60_000);

afterAll(async () => {
  await emu?.close();
});

describe('a quota answered 429 without Retry-After', () => {
  it('the sync ends ok with the same data as without it', async () => {
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url, service: { throttle: THROTTLE } });
    const before = emu.stats();
    emu.setLimits({ quota: { requests: 40, windowMs: 1_000 } });
    try {
      const run = await runSync(config);
      expect(run.failures).toEqual([]);
      expect(run).toMatchObject({ status: 'ok', exitCode: EXIT.ok });
      expect(run.summary.join('\n')).toMatch(/^quota: the service answered 429 to \d+ of \d+ requests/m);
    } finally {
      emu.setLimits({ quota: null });
    }
    expect(emu.stats().throttled - before.throttled).toBeGreaterThan(0);
    expect(await tableHashes(config.warehouse.path)).toEqual(await tableHashes(cleanDb));
  }, 60_000);

  it('with service.rate_limit under the quota, no request is answered 429', async () => {
    const dir = tempDir();
    const config = testConfig({
      dir,
      url: emu.url,
      service: { throttle: THROTTLE, rate_limit: { requests: 90, per: '1s' } },
      sync: { resources: ['sites', 'models', 'actuals'] },
    });
    const before = emu.stats();
    emu.setLimits({ quota: { requests: 100, windowMs: 1_000 } });
    try {
      expect((await runSync(config)).status).toBe('ok');
    } finally {
      emu.setLimits({ quota: null });
    }
    const after = emu.stats();
    expect(after.requests - before.requests).toBeGreaterThan(0);
    expect(after.throttled - before.throttled).toBe(0);
  }, 60_000);

  it('a run that cannot finish within its quota before its timeout stops in one line, committed, and the next run continues', async () => {
    const dir = tempDir();
    // Pauses of seconds: a run that slept them out past its timeout would end long after it.
    const throttle = { attempts: 10, base_delay: '2s', max_delay: '20s' };
    const config = testConfig({ dir, url: emu.url, service: { throttle }, sync: { concurrency: 1 } });
    emu.setLimits({ quota: { requests: 5, windowMs: 1_000 } });
    let run: Awaited<ReturnType<typeof runJob>>;
    try {
      run = await runJob(syncJob, {
        config,
        now: () => NOW,
        timeoutMs: 4_000,
        log: createLogger({ level: 'silent' }),
      });
    } finally {
      emu.setLimits({ quota: null });
    }
    // The pauses end with the timeout: a run that slept them out (ten of up to 20 s for each
    // request refused) would outlast this test's limit of 60 s.
    expect(run).toMatchObject({ status: 'failed', exitCode: EXIT.failed, error: 'timed out after 4s' });
    const stops = run.failures.filter((f) => f.reason.startsWith('stopped'));
    expect(stops).toHaveLength(1);
    expect(stops[0].reason).toMatch(
      /^stopped \(timed out after 4s\) before [1-3] of 3 sites finished: what landed is committed and the next run continues from there; the service answered 429 to \d+ requests \(its quota\)/,
    );
    // No failure per site for the requests the timeout aborted.
    expect(run.failures.filter((f) => f.siteId !== undefined)).toEqual([]);
    expect((await runSync(config)).status).toBe('ok');
    expect(await tableHashes(config.warehouse.path)).toEqual(await tableHashes(cleanDb));
  }, 60_000);
});

describe('an API key revoked mid-run', () => {
  it('ends the run at once: exit 4, one line, few requests after the first 401, at most a handful of failure rows', async () => {
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url });
    const before = emu.stats();
    // Counted per key from the emulator's start: the clean sync made its requests already.
    emu.setLimits({ revokeAfter: before.requests + 30 });
    let run: Awaited<ReturnType<typeof runJob>>;
    try {
      run = await runSync(config);
    } finally {
      emu.setLimits({ revokeAfter: null });
    }
    expect(run).toMatchObject({ status: 'failed', exitCode: 4 });
    expect(run.error).toMatch(
      /^the service rejected the API key \(401\): Authorization: the API key has been revoked \(/,
    );
    const after = emu.stats();
    expect(after.revoked - before.revoked).toBeGreaterThanOrEqual(1);
    expect(after.revoked - before.revoked).toBeLessThan(50);
    const rows = await query<{ reason: string }>(
      config.warehouse.path,
      'SELECT error AS reason FROM run_failures WHERE run_id = $1',
      [run.runId],
    );
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.length).toBeLessThanOrEqual(3);
    for (const text of [run.error ?? '', ...rows.map((r) => r.reason), ...run.summary])
      expect(text).not.toContain(API_KEY);
  }, 60_000);

  it('stops the nightly chain too: exit 4, the steps after it not run', async () => {
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url });
    emu.setLimits({ revokeAfter: emu.stats().requests + 8 });
    let run: Awaited<ReturnType<typeof runJob>>;
    try {
      run = await runJob((await loadJobs()).get('nightly'), {
        config,
        now: () => NOW,
        log: createLogger({ level: 'silent' }),
      });
    } finally {
      emu.setLimits({ revokeAfter: null });
    }
    expect(run).toMatchObject({ status: 'failed', exitCode: 4 });
    expect(run.error).toMatch(/the service rejected the API key \(401\)/);
    expect(run.failures).toHaveLength(1);
    expect(run.summary.join('\n')).toMatch(/not run after the failure of sync-\w+: .*accuracy/);
  }, 60_000);
});

describe('a service gone mid-run', () => {
  it('ends the run once nothing has answered for service.unreachable_after: exit 4, one line, and the next run completes', async () => {
    const dir = tempDir();
    // Retries that would keep each call going for seconds alone: only the stop can end them sooner.
    const config = testConfig({
      dir,
      url: emu.url,
      service: {
        unreachable_after: '1s',
        retries: { attempts: 20, base_delay: '100ms', max_delay: '400ms', retry_after_max: '1s' },
      },
    });
    const down = emu.stats().requests + 12;
    emu.setFaults({ faultHook: ({ counter }) => (counter > down ? 'http503' : undefined) });
    let run: Awaited<ReturnType<typeof runJob>>;
    try {
      run = await runSync(config);
    } finally {
      emu.setFaults({ faultHook: null });
    }
    expect(run).toMatchObject({ status: 'failed', exitCode: EXIT.failed });
    expect(run.error).toMatch(
      /^the service has not answered for 1(\.\d)? s \(service\.unreachable_after\): every request failed; the last: GET \/platform\/v2\/\S+ \((site|model) [^)]+\): HTTP 503: /,
    );
    // No call gave up alone before the stop, and the sites' calls that the stop ended are no failure of theirs.
    expect(run.failures).toHaveLength(1);
    expect((await runSync(config)).status).toBe('ok');
    expect(await tableHashes(config.warehouse.path)).toEqual(await tableHashes(cleanDb));
  }, 60_000);
});
