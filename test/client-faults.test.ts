// The emulator's injected faults: transient ones (500, 503, 429 with Retry-After, a response slower
// than the client's timeout, a body cut off mid-way) are retried and end in the same data a
// fault-free service gives; malformed data is reported at once, naming the path, and not retried.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import { ServiceError } from '../src/api/errors.js';
import { startEmulator, type Emulator } from '../src/emulator/server.js';
import type { FaultContext, FaultKind } from '../src/emulator/faults.js';
import { DAY, startOfUtcDay } from '../src/time.js';
import { memoryLogger } from './client-support.js';

const NOW = Date.UTC(2026, 5, 15, 10, 0, 0);
const TODAY = startOfUtcDay(NOW);
const SEED = 5;

let clean: Emulator;
let faulty: Emulator;
let reference: ServiceClient;

beforeAll(async () => {
  [clean, faulty] = await Promise.all([
    startEmulator({ apiKeys: ['k1'], sites: 3, seed: SEED, now: () => NOW }),
    startEmulator({ apiKeys: ['k1'], sites: 3, seed: SEED, now: () => NOW }),
  ]);
  reference = new ServiceClient({ baseUrl: clean.url, apiKey: 'k1' });
});

afterAll(async () => {
  await reference.close();
  await Promise.all([clean.close(), faulty.close()]);
});

/** A client with a headers timeout well below the emulator's slow answer (3 s). */
function resilientClient(log = memoryLogger()) {
  const client = new ServiceClient({
    baseUrl: faulty.url,
    apiKey: 'k1',
    log: log.log,
    timeouts: { headers: 500, body: 500 },
    retries: { attempts: 8, baseDelay: 10, maxDelay: 50, retryAfterMax: 5_000 },
  });
  return { client, log };
}

/** What the sync reads of a site: its description, models, forecast, actuals and the outputs of its models. */
async function readSite(client: ServiceClient, siteId: string) {
  const models = await client.listSiteModels(siteId, { extra: ['serving_active'] });
  return {
    site: await client.getSite(siteId),
    models,
    forecast: await client.getSiteForecast(siteId, { start: TODAY, end: TODAY + DAY }),
    actuals: await client.getSiteActuals(siteId, { start: TODAY - DAY, end: TODAY }),
    outputs: await Promise.all(
      models.map((model) => client.getModelOutput(model.id, { start: TODAY, end: TODAY + DAY })),
    ),
  };
}

/** Forces `kind` on the first request to any path ending in `suffix`, once. */
function once(kind: FaultKind | 'malformed', suffix: string) {
  let used = false;
  return (context: FaultContext) => {
    if (used || !context.path.endsWith(suffix)) return undefined;
    used = true;
    return kind;
  };
}

function retriesLogged(log: ReturnType<typeof memoryLogger>) {
  return log.lines().filter((line) => line.msg === 'service request failed, retrying');
}

describe('transient faults are retried to the right data', () => {
  it.each([
    ['http500', { status: 500 }],
    ['http503', { status: 503 }],
    ['http429', { status: 429 }],
    ['slow', { code: 'UND_ERR_HEADERS_TIMEOUT' }],
    ['cut', { code: 'UND_ERR_SOCKET', reason: expect.stringContaining('response body cut off after HTTP 200') }],
  ] as [FaultKind, Record<string, unknown>][])('%s on the forecast', async (kind, expected) => {
    const [site] = await reference.listSites();
    const { client, log } = resilientClient();
    faulty.setFaults({ faultHook: once(kind, '/forecast') });
    try {
      const series = await client.getSiteForecast(site.id, { start: TODAY, end: TODAY + DAY });
      expect(series).toEqual(await reference.getSiteForecast(site.id, { start: TODAY, end: TODAY + DAY }));
      const retries = retriesLogged(log);
      expect(retries).toHaveLength(1);
      expect(retries[0]).toMatchObject({
        endpoint: 'GET /platform/v2/sites/{site_id}/forecast',
        attempt: 1,
        ...expected,
      });
      if (kind === 'http429') expect(retries[0].delayMs).toBe(1000); // the emulator's Retry-After: 1
    } finally {
      faulty.setFaults({ faultHook: null });
      await client.close();
    }
  });

  it('a fault rate of 30% over everything the sync reads ends in the fault-free data', async () => {
    const { client, log } = resilientClient();
    faulty.setFaults({ faultRate: 0.3 });
    try {
      const sites = await client.listSites();
      expect(sites).toEqual(await reference.listSites());
      for (const site of sites) {
        expect(await readSite(client, site.id)).toEqual(await readSite(reference, site.id));
      }
      const reasons = retriesLogged(log).map((line) => String(line.status ?? line.code));
      expect(reasons.length).toBeGreaterThan(5);
      expect(new Set(reasons).size).toBeGreaterThan(2);
    } finally {
      faulty.setFaults({ faultRate: 0 });
      await client.close();
    }
  });
});

describe('malformed data', () => {
  it('fails at once, naming the endpoint, the site and the first offending path, without retrying', async () => {
    const [site] = await reference.listSites();
    const requests: string[] = [];
    faulty.setFaults({
      malformedSites: [site.id],
      faultHook: (context) => {
        requests.push(context.path);
        return undefined;
      },
    });
    const { client, log } = resilientClient();
    try {
      const messages: string[] = [];
      for (let i = 0; i < 6; i++) {
        const error = await client.getSiteForecast(site.id).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ServiceError);
        expect(error).toMatchObject({ kind: 'malformed', status: 200, attempts: 1, siteId: site.id });
        messages.push((error as ServiceError).message);
      }
      expect(requests).toHaveLength(6);
      expect(retriesLogged(log)).toHaveLength(0);
      const prefix = `GET /platform/v2/sites/{site_id}/forecast (site ${site.id}): malformed response: `;
      for (const message of messages) expect(message.startsWith(prefix)).toBe(true);
      // Both ways the emulator breaks a body: a column one value short, and a column missing.
      expect(messages.some((m) => /: forecast: has \d+ values where valid_time has \d+$/.test(m))).toBe(true);
      expect(messages.some((m) => /: valid_time: Invalid input: expected array, received undefined$/.test(m))).toBe(
        true,
      );
    } finally {
      faulty.setFaults({ malformedSites: [], faultHook: null });
      await client.close();
    }
  });

  it('of a model output names the model', async () => {
    const [site] = await reference.listSites();
    const [model] = await reference.listSiteModels(site.id);
    faulty.setFaults({ faultHook: once('malformed', '/output') });
    const { client } = resilientClient();
    try {
      const error = await client.getModelOutput(model.id).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({
        kind: 'malformed',
        modelId: model.id,
        endpoint: 'GET /platform/v2/models/{model_id}/output',
      });
      expect((error as Error).message).toMatch(
        new RegExp(
          `^GET /platform/v2/models/\\{model_id\\}/output \\(model ${model.id}\\): malformed response: (forecast|as_of): `,
        ),
      );
    } finally {
      faulty.setFaults({ faultHook: null });
      await client.close();
    }
  });

  it('at a malformed rate, the other responses still come through', async () => {
    const [site] = await reference.listSites();
    faulty.setFaults({ malformedRate: 0.5 });
    const { client } = resilientClient();
    try {
      const outcomes = [];
      for (let i = 0; i < 10; i++) {
        outcomes.push(
          await client.getSiteActuals(site.id, { start: TODAY - DAY, end: TODAY }).then(
            (actuals) => ({ ok: actuals }),
            (error: ServiceError) => ({ kind: error.kind }),
          ),
        );
      }
      const good = outcomes.filter((o) => 'ok' in o);
      expect(good.length).toBeGreaterThan(0);
      expect(outcomes.length - good.length).toBeGreaterThan(0);
      expect(outcomes.filter((o) => 'kind' in o).every((o) => 'kind' in o && o.kind === 'malformed')).toBe(true);
      const expected = await reference.getSiteActuals(site.id, { start: TODAY - DAY, end: TODAY });
      for (const o of good) expect('ok' in o && o.ok).toEqual(expected);
    } finally {
      faulty.setFaults({ malformedRate: 0 });
      await client.close();
    }
  });
});
