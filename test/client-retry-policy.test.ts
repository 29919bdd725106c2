// Which failures the client repeats and which it reports at once, on a scripted server that
// answers each request as the test says (the emulator's faults are random by design; these are
// exact sequences).
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { retryAfterMs, ServiceClient, type ServiceClientOptions } from '../src/api/client.js';
import { json, memoryLogger, scriptedClients, serviceFailure } from './client-support.js';

const SERIES = {
  valid_time: ['2026-06-15T00:00:00Z', '2026-06-15T00:15:00Z'],
  value: [1.5, 2.5],
};
const RANGE = { start: Date.UTC(2026, 5, 15), end: Date.UTC(2026, 5, 16) };

const scripted = scriptedClients({
  apiKey: 'policy-key',
  retries: { attempts: 3, baseDelay: 5, maxDelay: 20, retryAfterMax: 5_000 },
});

/** A server answering request n with `answers[n - 1]` (the last answer repeats). */
function serve(answers: ((res: ServerResponse) => void)[], options: Partial<ServiceClientOptions> = {}) {
  return scripted((_request, n, res) => answers[Math.min(n, answers.length) - 1](res), options);
}

const ok = (res: ServerResponse) => json(res, 200, SERIES);
const status =
  (code: number, headers: Record<string, string> = {}) =>
  (res: ServerResponse) =>
    json(res, code, { errors: [{ field: '(service)', message: `status ${code}` }] }, headers);

describe('idempotent requests (GET, PUT)', () => {
  it.each([429, 500, 502, 503, 504])('retry %i and end with the data', async (code) => {
    const { server, client } = await serve([status(code), ok]);
    const series = await client.getSiteActuals('s1', RANGE);
    expect(series.value).toEqual([1.5, 2.5]);
    expect(server.requests).toHaveLength(2);
  });

  it('honour Retry-After given as an HTTP date', async () => {
    const { server, client } = await serve([
      status(429, { 'retry-after': new Date(Date.now() + 1000).toUTCString() }),
      ok,
    ]);
    await expect(client.getSiteActuals('s1', RANGE)).resolves.toMatchObject({ value: [1.5, 2.5] });
    expect(server.requests).toHaveLength(2);
  });

  it('fail at once, saying why, when Retry-After is longer than allowed', async () => {
    const { server, client } = await serve([status(503, { 'retry-after': '120' }), ok]);
    const error = await serviceFailure(client.getSiteActuals('s1', RANGE));
    expect(server.requests).toHaveLength(1);
    expect(error.kind).toBe('http');
    expect(error.status).toBe(503);
    expect(error.retryAfterMs).toBe(120_000);
    expect(error.message).toContain('retry after 120 s, longer than the 5 s allowed');
  });

  it('give up after the configured attempts, reporting how many were made', async () => {
    const { server, client } = await serve([status(503)]);
    const error = await serviceFailure(client.getSiteActuals('s1', RANGE));
    expect(server.requests).toHaveLength(4);
    expect(error.attempts).toBe(4);
    expect(error.status).toBe(503);
    expect(error.errors).toEqual([{ field: '(service)', message: 'status 503' }]);
  });

  it('do not retry client errors', async () => {
    const { server, client } = await serve([status(404), ok]);
    const error = await serviceFailure(client.getSite('s1'));
    expect(server.requests).toHaveLength(1);
    expect(error).toMatchObject({
      kind: 'http',
      status: 404,
      siteId: 's1',
      endpoint: 'GET /platform/v2/sites/{site_id}',
      attempts: 1,
    });
  });

  it('retry a body cut off mid-way', async () => {
    const cut = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"valid_time": ["2026-06-15T00:00:00Z"');
      setImmediate(() => res.socket?.destroy());
    };
    const { server, client } = await serve([cut, ok]);
    await expect(client.getSiteActuals('s1', RANGE)).resolves.toMatchObject({ value: [1.5, 2.5] });
    expect(server.requests).toHaveLength(2);
  });

  it('retry a chunked body cut off mid-way', async () => {
    const cut = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"valid_time": ["2026-06-15T00:00:00Z"');
      setImmediate(() => res.socket?.destroy());
    };
    const { server, client } = await serve([cut, ok]);
    await expect(client.getSiteActuals('s1', RANGE)).resolves.toMatchObject({ value: [1.5, 2.5] });
    expect(server.requests).toHaveLength(2);
  });

  it('retry a body that is not JSON at all (cut or rewritten on the way)', async () => {
    const html = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>gateway</html>');
    };
    const { server, client } = await serve([html, ok]);
    await expect(client.getSiteActuals('s1', RANGE)).resolves.toMatchObject({ value: [1.5, 2.5] });
    expect(server.requests).toHaveLength(2);
  });

  it('time out a response slower than the headers timeout, then retry', async () => {
    const hang = () => undefined; // never answers
    const { server, client } = await serve([hang, ok], { timeouts: { headers: 100 } });
    await expect(client.getSiteActuals('s1', RANGE)).resolves.toMatchObject({ value: [1.5, 2.5] });
    expect(server.requests).toHaveLength(2);
  });

  it('time out a body that stalls mid-way, then retry', async () => {
    const stall = (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"valid_time": [');
    };
    const logs = memoryLogger();
    const { server, client } = await serve([stall, ok], { timeouts: { body: 100 }, log: logs.log });
    await expect(client.getSiteActuals('s1', RANGE)).resolves.toMatchObject({ value: [1.5, 2.5] });
    expect(server.requests).toHaveLength(2);
    const retry = logs.lines().find((line) => line.msg === 'service request failed, retrying');
    expect(retry).toMatchObject({
      code: 'UND_ERR_BODY_TIMEOUT',
      reason: expect.stringContaining('response body stalled after HTTP 200'),
    });
  });

  it("report 'timeout' when every attempt times out", async () => {
    const { client } = await serve([() => undefined], {
      timeouts: { headers: 100 },
      retries: { attempts: 1, baseDelay: 1 },
    });
    const error = await serviceFailure(client.getSiteActuals('s1', RANGE));
    expect(error).toMatchObject({ kind: 'timeout', status: null, code: 'UND_ERR_HEADERS_TIMEOUT', attempts: 2 });
  });

  it('retry the PUT of Update Model', async () => {
    const { server, client } = await serve([
      status(502),
      (res) => json(res, 200, { message: 'Model updated successfully' }),
    ]);
    await expect(client.updateModel('m1', { settings: { serving_priority: 2 } })).resolves.toEqual({
      message: 'Model updated successfully',
    });
    expect(server.requests).toHaveLength(2);
  });
});

describe('malformed responses', () => {
  it('are not retried and name the endpoint, the id and the first offending path', async () => {
    const broken = (res: ServerResponse) => json(res, 200, { valid_time: ['2026-06-15T00:00:00Z'], value: [1, 2] });
    const { server, client } = await serve([broken, ok]);
    const error = await serviceFailure(client.getSiteActuals('s1', RANGE));
    expect(server.requests).toHaveLength(1);
    expect(error.kind).toBe('malformed');
    expect(error.message).toBe(
      'GET /platform/v2/sites/{site_id}/actual (site s1): malformed response: value: has 2 values where valid_time has 1',
    );
  });

  it('name a nested path', async () => {
    const output = {
      model_id: 'm1',
      model_version: 1,
      model_name: 'ai',
      model_label: 'ai',
      priority: 1,
      as_of: null,
      forecast: [1, 'x'],
      valid_time: ['2026-06-15T00:00:00Z', '2026-06-15T00:15:00Z'],
    };
    const { client } = await serve([(res) => json(res, 200, output)]);
    const error = await serviceFailure(client.getModelOutput('m1'));
    expect(error.message).toMatch(
      /^GET \/platform\/v2\/models\/\{model_id\}\/output \(model m1\): malformed response: forecast\[1\]: /,
    );
    expect(error.fieldPath).toBe('forecast[1]');
  });

  it('reject a malformed item of a list alone, naming its index and path', async () => {
    const models = [
      {
        id: 'm1',
        name: 'ai',
        label: 'ai',
        version: 1,
        priority: 1,
        state: [{ state: 'complete', timestamp_utc: 'yesterday' }],
      },
      { id: 'm2', name: 'physical', label: 'physical', version: 'one', priority: 2, state: [] },
    ];
    const { client } = await serve([(res) => json(res, 200, models)]);
    const listed = await client.listSiteModels('s9');
    // An unreadable state time is tolerated (state entries are typed only as objects); a version that is no integer is not.
    expect(listed.map((m) => m.id)).toEqual(['m1']);
    expect(listed[0].state).toEqual([
      { state: 'complete', timestamp_utc: null, details: { state: 'complete', timestamp_utc: 'yesterday' } },
    ]);
    expect(listed.rejected).toEqual([{ index: 1, id: 'm2', fieldPath: 'version', reason: expect.any(String) }]);
  });
});

describe('Create Site (POST, not idempotent)', () => {
  const created = (res: ServerResponse) => json(res, 200, { site_id: 'new-site' });
  const body = { name: 'n', latitude: 1, longitude: 1, type: 'load' as const };

  it('is not repeated after a 5xx: the site may exist already', async () => {
    const { server, client } = await serve([status(500), created]);
    const error = await serviceFailure(client.createSite(body));
    expect(server.requests).toHaveLength(1);
    expect(error).toMatchObject({ kind: 'http', status: 500, endpoint: 'POST /platform/v2/sites' });
  });

  it('is not repeated after a cut-off answer', async () => {
    const cut = (res: ServerResponse) => res.socket?.destroy();
    const { server, client } = await serve([cut, created]);
    const error = await serviceFailure(client.createSite(body));
    expect(server.requests).toHaveLength(1);
    expect(error.kind).toBe('network');
  });

  it('is repeated after a 429: the service did nothing', async () => {
    const { server, client } = await serve([status(429, { 'retry-after': '0' }), created]);
    await expect(client.createSite(body)).resolves.toMatchObject({ site_id: 'new-site' });
    expect(server.requests).toHaveLength(2);
  });
});

describe('Upload Site Capacity (POST of a whole timeline)', () => {
  it('is repeated after a 5xx: sending the same timeline again changes nothing', async () => {
    const { server, client } = await serve([status(500), (res) => json(res, 200, { message: 'capacity updated' })]);
    const upload = { data: [{ valid_time: '2026-06-15T00:00Z', value: 100 }] };
    await expect(client.uploadSiteCapacity('s1', upload)).resolves.toMatchObject({ message: 'capacity updated' });
    expect(server.requests.map((r) => JSON.parse(r.body))).toEqual([upload, upload]);
  });
});

describe('connection failures', () => {
  it('retry a refused connection and report it as network', async () => {
    const { server, client } = await serve([ok]);
    const url = server.url;
    await server.close();
    await client.close();
    const logs = memoryLogger();
    const refused = new ServiceClient({
      baseUrl: url,
      apiKey: 'policy-key',
      retries: { attempts: 2, baseDelay: 1, maxDelay: 2 },
      log: logs.log,
    });
    try {
      const error = await serviceFailure(refused.listSites());
      expect(error).toMatchObject({
        kind: 'network',
        code: 'ECONNREFUSED',
        attempts: 3,
        status: null,
        endpoint: 'GET /platform/v2/sites',
      });
      expect(logs.lines().filter((line) => line.msg === 'service request failed, retrying')).toHaveLength(2);
    } finally {
      await refused.close();
    }
  });
});

describe('a closed client', () => {
  it('fails at once rather than retrying', async () => {
    const { server, client } = await serve([ok]);
    await client.close();
    const error = await serviceFailure(client.listSites());
    expect(error).toMatchObject({
      kind: 'network',
      code: expect.stringMatching(/^UND_ERR_(CLOSED|DESTROYED)$/),
      attempts: 1,
    });
    expect(server.requests).toHaveLength(0);
  });
});

describe('cancellation', () => {
  it('an abort during a Retry-After wait ends the call at once', async () => {
    const controller = new AbortController();
    const { client } = await serve(
      [
        (res) => {
          status(503, { 'retry-after': '30' })(res);
          setTimeout(() => controller.abort(), 50);
        },
      ],
      { retries: { retryAfterMax: 60_000 } },
    );
    const error = await serviceFailure(client.getSiteActuals('s1', { ...RANGE, signal: controller.signal }));
    expect(error).toMatchObject({ kind: 'aborted', siteId: 's1' });
  });

  it("the client's own signal aborts a call in flight", async () => {
    const controller = new AbortController();
    const { client } = await serve([() => setTimeout(() => controller.abort(), 20)], { signal: controller.signal });
    const error = await serviceFailure(client.listSites());
    expect(error.kind).toBe('aborted');
  });

  it('many calls in flight on one shutdown signal raise no listener warnings, and abort together', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const shutdown = new AbortController();
    const perCall = new AbortController();
    const never = () => undefined;
    const { client } = await serve([never], { connections: 4, signal: shutdown.signal });
    try {
      const calls = Array.from({ length: 40 }, (_, i) =>
        serviceFailure(client.getSite(`s${i}`, { signal: perCall.signal })),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      shutdown.abort();
      const errors = await Promise.all(calls);
      expect(errors.every((error) => error.kind === 'aborted')).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('an already aborted signal sends nothing', async () => {
    const { server, client } = await serve([ok]);
    const error = await serviceFailure(client.listSites({ signal: AbortSignal.abort() }));
    expect(error).toMatchObject({ kind: 'aborted', attempts: 0 });
    expect(server.requests).toHaveLength(0);
  });
});

describe('retryAfterMs', () => {
  it('reads delta seconds and HTTP dates, and ignores nonsense', () => {
    const now = Date.UTC(2026, 5, 15, 12, 0, 0);
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs('0', now)).toBe(0);
    expect(retryAfterMs('Mon, 15 Jun 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('Mon, 15 Jun 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs('soon', now)).toBeNull();
    expect(retryAfterMs(['2', '5'], now)).toBe(2000);
  });
});
