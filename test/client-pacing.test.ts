// The client's pace (src/api/pacing.ts) and a refused key, against scripted servers: the rate
// limit spaces every request of the client, a 429 pauses them all and halves the requests in
// flight, a call repeats a 429 a bounded number of times, no wait outlives an abort, and the first
// 401/403 fails every call of the client with one error that never holds the key.
import diagnostics from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KeyRejectedError } from '../src/api/errors.js';
import { json, scriptedClients, serviceFailure } from './client-support.js';

const serve = scriptedClients();
/** The answer's content does not matter here, only that it is a success. */
const SITES: unknown[] = [];

function tooMany(res: ServerResponse, headers: Record<string, string> = {}): void {
  json(res, 429, { errors: [{ field: '(server)', message: 'quota exceeded' }] }, headers);
}

describe('rate limit', () => {
  it('spaces the starts of every call of the client evenly: no window holds more than its quota', async () => {
    const { client } = await serve((_req, _n, res) => json(res, 200, SITES), {
      rateLimit: { requests: 5, perMs: 500 },
    });
    // When each request left, on one monotonic clock: undici announces a request as it is created,
    // in the same turn of the event loop as the pacer lets it go.
    const starts: number[] = [];
    const created = () => starts.push(performance.now());
    diagnostics.subscribe('undici:request:create', created);
    try {
      await Promise.all(Array.from({ length: 12 }, () => client.listSites()));
    } finally {
      diagnostics.unsubscribe('undici:request:create', created);
    }
    expect(starts.length).toBe(12);
    // Each at least 100 ms after the one before it left, so no 500 ms window holds six; within
    // 1 ms, as the pacer reads the clock a moment before undici announces the request.
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(99);
  });
});

describe('429 without Retry-After', () => {
  it('pauses the client with backoff and ends with the data', async () => {
    const { client, server } = await serve((_req, n, res) => (n <= 3 ? tooMany(res) : json(res, 200, SITES)), {
      throttle: { attempts: 10, baseDelay: 20, maxDelay: 200 },
    });
    await expect(client.listSites()).resolves.toBeDefined();
    expect(server.requests.length).toBe(4);
    expect(client.pacing()).toMatchObject({ requests: 4, throttled: 3 });
  });

  it('repeats a 429 at most throttle.attempts times, apart from retries.attempts', async () => {
    const { client, server } = await serve((_req, _n, res) => tooMany(res), {
      retries: { attempts: 0 },
      throttle: { attempts: 4, baseDelay: 1, maxDelay: 5 },
    });
    const error = await serviceFailure(client.listSites());
    expect(error).toMatchObject({ status: 429, attempts: 5 });
    expect(server.requests.length).toBe(5);
  });

  it('halves the requests in flight on a burst of 429s and recovers them on success', async () => {
    const { client } = await serve((_req, n, res) => (n <= 8 ? tooMany(res) : json(res, 200, SITES)), {
      connections: 8,
      throttle: { attempts: 10, baseDelay: 1, maxDelay: 5 },
    });
    await Promise.all(Array.from({ length: 8 }, () => client.listSites()));
    // The eight 429s of one burst are one step: halved once, to 4, then recovered a little.
    expect(client.pacing().inFlightLimit).toBeGreaterThanOrEqual(4);
    expect(client.pacing().inFlightLimit).toBeLessThan(8);
    await Promise.all(Array.from({ length: 200 }, () => client.listSites()));
    expect(client.pacing().inFlightLimit).toBe(8);
  });

  it('a Retry-After beyond retryAfterMax fails its call at once and holds the others no longer than retryAfterMax', async () => {
    const { client, server } = await serve(
      (_req, n, res) => (n === 1 ? tooMany(res, { 'retry-after': '120' }) : json(res, 200, SITES)),
      { retries: { attempts: 3, baseDelay: 1, maxDelay: 2, retryAfterMax: 300 } },
    );
    const error = await serviceFailure(client.listSites());
    expect(error).toMatchObject({ status: 429, retryAfterMs: 120_000 });
    await client.listSites();
    expect(server.requests.length).toBe(2);
    // The pause the client set, by its own account: retryAfterMax, not the 120 s asked for.
    const { pauses, pausedMs } = client.pacing();
    expect(pauses).toBe(1);
    expect(pausedMs).toBeGreaterThan(0);
    expect(pausedMs).toBeLessThanOrEqual(300);
  });

  // Pauses of up to ten minutes against this test's limit of one: one that outlived the abort
  // would fail it by its timeout.
  it('no pause outlives an abort', async () => {
    const { client } = await serve((_req, _n, res) => tooMany(res), {
      throttle: { attempts: 10, baseDelay: 600_000, maxDelay: 600_000 },
    });
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error('timeout')), 100);
    const first = serviceFailure(client.listSites({ signal: abort.signal }));
    // A call that came during the pause waits in it too, and ends with the abort as well.
    await new Promise((resolve) => setTimeout(resolve, 30));
    const second = serviceFailure(client.listSites({ signal: abort.signal }));
    expect(await first).toMatchObject({ kind: 'aborted' });
    expect(await second).toMatchObject({ kind: 'aborted' });
  }, 60_000);
});

describe('a refused key', () => {
  it('fails every call in flight, queued and to come with one error, and sends nothing more', async () => {
    const { client, server } = await serve(
      (_req, n, res) => {
        if (n === 3) return json(res, 401, { errors: [{ field: 'Authorization', message: 'API key revoked' }] });
        // Slow answers, so that the other calls are in flight or queued when the 401 comes.
        setTimeout(() => json(res, 200, SITES), n < 3 ? 0 : 300);
      },
      { connections: 2, apiKey: 'secret-key-123' },
    );
    await client.listSites();
    await client.listSites();
    const calls = Array.from({ length: 10 }, () =>
      client.listSites().then(
        () => null,
        (e: unknown) => e,
      ),
    );
    const errors = await Promise.all(calls);
    const first = errors[0];
    expect(first).toBeInstanceOf(KeyRejectedError);
    for (const error of errors) expect(error).toBe(first);
    const rejected = first as KeyRejectedError;
    expect(rejected.status).toBe(401);
    expect(rejected.message).toBe(
      'the service rejected the API key (401): Authorization: API key revoked (GET /platform/v2/sites)',
    );
    const sent = server.requests.length;
    expect(await client.getSite('s1').catch((e: unknown) => e)).toBe(first);
    expect(server.requests.length).toBe(sent);
    expect(sent).toBeLessThanOrEqual(4);
    expect(client.stopped()).toBe(first);
    for (const text of [rejected.message, inspect(rejected), JSON.stringify(rejected)])
      expect(text).not.toContain('secret-key-123');
  });

  it('403 stops the client the same way', async () => {
    const { client } = await serve((_req, _n, res) => json(res, 403, { detail: 'Not authenticated' }));
    const error = await serviceFailure(client.listSites());
    expect(error).toBeInstanceOf(KeyRejectedError);
    expect(error.message).toMatch(/^the service rejected the API key \(403\): \(detail\): Not authenticated/);
  });
});
