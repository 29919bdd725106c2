// A service gone (src/api/breaker.ts): when every request fails for want of the service for
// `unreachableAfter`, none answered, the client stops as it does on a refused key: every call in
// flight, queued or to come fails with one ServiceUnreachableError and nothing more is sent. An
// answer between the failures, or a call that fails alone, never stops it.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Breaker } from '../src/api/breaker.js';
import { ServiceClient } from '../src/api/client.js';
import { ServiceError, ServiceUnreachableError } from '../src/api/errors.js';
import { json, scriptedClients, serviceFailure } from './client-support.js';

const serve = scriptedClients();
/** Retries enough that one call outlives the stretch: each call alone would go on past it. */
const PATIENT = { attempts: 200, baseDelay: 5, maxDelay: 20, retryAfterMax: 1000 };

function failures<T>(calls: Promise<T>[]): Promise<unknown[]> {
  return Promise.all(
    calls.map((call) =>
      call.then(
        () => null,
        (error: unknown) => error,
      ),
    ),
  );
}

describe('a service gone', () => {
  it('a gateway answering 503 to everything: every call fails with one error, and nothing more is sent', async () => {
    const { client, server } = await serve(
      (_req, _n, res) => json(res, 503, { errors: [{ field: '(server)', message: 'service unavailable' }] }),
      { unreachableAfter: 300, retries: PATIENT },
    );
    const errors = await failures(Array.from({ length: 6 }, () => client.listSites()));
    const first = errors[0];
    expect(first).toBeInstanceOf(ServiceUnreachableError);
    for (const error of errors) expect(error).toBe(first);
    expect((first as Error).message).toMatch(
      /^the service has not answered for 0\.\d s \(service\.unreachable_after\): every request failed; the last: GET \/platform\/v2\/sites: HTTP 503: \(server\): service unavailable$/,
    );
    expect(client.stopped()).toBe(first);
    const sent = server.requests.length;
    expect(await client.getSite('s1').catch((e: unknown) => e)).toBe(first);
    expect(server.requests.length).toBe(sent);
  });

  it('a port with nothing listening: the same stop, naming the refused connection', async () => {
    // A port that was free a moment ago: connections to it are refused.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const client = new ServiceClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'scripted',
      unreachableAfter: 300,
      retries: PATIENT,
    });
    try {
      const error = await serviceFailure(client.listSiteModels('s1'));
      expect(error).toBeInstanceOf(ServiceUnreachableError);
      expect(error.message).toMatch(
        /^the service has not answered for 0\.\d s \(service\.unreachable_after\): every request failed; the last: GET \/platform\/v2\/sites\/\{site_id\}\/models \(site s1\): connection failed: .*\(ECONNREFUSED\)$/,
      );
      expect(error.siteId).toBe('s1');
      expect(client.stopped()).toBe(error);
    } finally {
      await client.close();
    }
  });

  it('answers between the failures keep it going: one path failing alone fails its own call', async () => {
    const { client } = await serve(
      (req, _n, res) =>
        req.url.endsWith('/broken/models')
          ? json(res, 503, { errors: [{ field: '(server)', message: 'service unavailable' }] })
          : json(res, 200, []),
      { unreachableAfter: 100, retries: PATIENT },
    );
    const broken = serviceFailure(client.listSiteModels('broken'));
    let answered = 0;
    let done = false;
    void broken.finally(() => (done = true));
    while (!done) {
      await client.listSites();
      answered += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const error = await broken;
    expect(error).not.toBeInstanceOf(ServiceUnreachableError);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 503, attempts: PATIENT.attempts + 1 });
    expect(answered).toBeGreaterThan(10);
    expect(client.stopped()).toBeUndefined();
  });

  it('null never stops', async () => {
    const { client } = await serve((_req, _n, res) => json(res, 502, {}), {
      unreachableAfter: null,
      retries: { attempts: 30, baseDelay: 5, maxDelay: 10, retryAfterMax: 1000 },
    });
    const error = await serviceFailure(client.listSites());
    expect(error).not.toBeInstanceOf(ServiceUnreachableError);
    expect(error).toMatchObject({ status: 502, attempts: 31 });
    expect(client.stopped()).toBeUndefined();
  });
});

describe('the breaker', () => {
  function breaker(after: number | null, gap: number) {
    const clock = { now: 0 };
    return { clock, breaker: new Breaker(after, gap, () => clock.now) };
  }

  it('trips when the failures have lasted `after`, an answer starting the count again', () => {
    const { clock, breaker: b } = breaker(1000, 1000);
    expect(b.failed()).toBeNull();
    clock.now = 900;
    expect(b.failed()).toBeNull();
    b.answered();
    clock.now = 1500;
    expect(b.failed()).toBeNull();
    clock.now = 2400;
    expect(b.failed()).toBeNull();
    clock.now = 2500;
    expect(b.failed()).toBe(1000);
  });

  it('failures further apart than the gap are not one stretch: nothing was sent between them', () => {
    const { clock, breaker: b } = breaker(1000, 1500);
    expect(b.failed()).toBeNull();
    clock.now = 1600;
    expect(b.failed()).toBeNull();
    clock.now = 2500;
    expect(b.failed()).toBeNull();
    clock.now = 2600;
    expect(b.failed()).toBe(1000);
  });
});
