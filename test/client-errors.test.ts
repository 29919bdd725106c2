// Every error path of the interface surfaces as one ServiceError carrying the status, the
// endpoint, the id and the service's errors[]; accounts are isolated; the key never leaks.
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import type { ServiceError } from '../src/api/errors.js';
import type { SiteRequest } from '../src/api/schemas.js';
import { startEmulator, type Emulator } from '../src/emulator/server.js';
import { memoryLogger, serviceFailure } from './client-support.js';

const NOW = Date.UTC(2026, 5, 15, 10, 0, 0);
const KEY_A = 'SECRET-alpha-7f3a9c';
const KEY_B = 'SECRET-bravo-4e1d2b';
const WRONG_KEY = 'SECRET-wrong-0c5e8a';

let emu: Emulator;
const logs = memoryLogger();
let alice: ServiceClient;
let bob: ServiceClient;
let siteA: string;
let modelA: string;

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [KEY_A, KEY_B], sites: 3, seed: 3, now: () => NOW });
  alice = new ServiceClient({ baseUrl: emu.url, apiKey: KEY_A, log: logs.log, retries: { attempts: 1, baseDelay: 1 } });
  bob = new ServiceClient({ baseUrl: emu.url, apiKey: KEY_B, log: logs.log, retries: { attempts: 1, baseDelay: 1 } });
  siteA = (await alice.listSites())[0].id;
  modelA = (await alice.listSiteModels(siteA))[0].id;
});

afterAll(async () => {
  await alice.close();
  await bob.close();
  await emu.close();
});

const errorsSeen: ServiceError[] = [];

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await serviceFailure(promise);
  errorsSeen.push(error);
  return error;
}

const goodSolar: SiteRequest = {
  name: 'ok',
  latitude: 10,
  longitude: 10,
  type: 'solar',
  assets: [{ mount: 'fixed', capacity: 100, azimuth: 180, tilt: 20 }],
};

describe('400: the service names the offending field', () => {
  it.each([
    ['latitude 91', { ...goodSolar, latitude: 91 }, 'latitude'],
    ['longitude -181', { ...goodSolar, longitude: -181 }, 'longitude'],
    ['empty assets', { ...goodSolar, assets: [] }, 'assets'],
  ] as [string, SiteRequest, string][])('create site with %s', async (_name, body, field) => {
    const error = await failure(alice.createSite(body));
    expect(error).toMatchObject({ kind: 'http', status: 400, endpoint: 'POST /platform/v2/sites', attempts: 1 });
    expect(error.errors.map((e) => e.field)).toContain(field);
    expect(error.message).toMatch(new RegExp(`^POST /platform/v2/sites: HTTP 400: .*${field}`));
  });

  it('create site with an unknown type', async () => {
    const error = await failure(alice.createSite({ ...goodSolar, type: 'hydro' } as unknown as SiteRequest));
    expect(error.status).toBe(400);
    expect(error.errors.map((e) => e.field)).toContain('type');
  });

  it('update site with a bad latitude names the site', async () => {
    const error = await failure(alice.updateSite(siteA, { ...goodSolar, latitude: 91 }));
    expect(error).toMatchObject({ status: 400, siteId: siteA, endpoint: 'PUT /platform/v2/sites/{site_id}' });
    expect(error.message).toContain(`(site ${siteA})`);
  });

  it('capacity upload without points, or with a time not in UTC', async () => {
    const empty = await failure(alice.uploadSiteCapacity(siteA, { data: [] }));
    expect(empty).toMatchObject({ status: 400, siteId: siteA, endpoint: 'POST /platform/v2/sites/{site_id}/capacity' });
    expect(empty.errors.map((e) => e.field)).toContain('data');
    const offset = await failure(
      alice.uploadSiteCapacity(siteA, { data: [{ valid_time: '2026-06-15T12:00+02:00', value: 1 }] }),
    );
    expect(offset.status).toBe(400);
    expect(offset.errors[0].field).toMatch(/^data\.0\.valid_time/);
  });

  it('an unknown model_type', async () => {
    const error = await failure(alice.listSiteModels(siteA, { modelType: 'hybrid' as 'ai' }));
    expect(error).toMatchObject({ status: 400, siteId: siteA });
    expect(error.errors.map((e) => e.field)).toContain('model_type');
  });

  it('an unknown time zone in a query', async () => {
    const error = await failure(alice.getSiteForecast(siteA, { tz: 'Mars/Olympus_Mons' }));
    expect(error).toMatchObject({ status: 400, endpoint: 'GET /platform/v2/sites/{site_id}/forecast' });
    expect(error.errors.map((e) => e.field)).toContain('tz');
  });

  it('an unknown priority conflict resolution', async () => {
    const error = await failure(
      alice.updateModel(modelA, {
        settings: { serving_priority: 1 },
        priority_conflict_resolution: 'overwrite' as 'swap',
      }),
    );
    expect(error).toMatchObject({ status: 400, modelId: modelA, endpoint: 'PUT /platform/v2/models/{model_id}' });
    expect(error.errors.map((e) => e.field)).toContain('priority_conflict_resolution');
  });

  it('an instant that is not one fails before anything is sent', async () => {
    await expect(alice.getSiteActuals(siteA, { start: Number.NaN, end: NOW })).rejects.toThrow(/start: not an instant/);
  });
});

describe('409: strict priority collision', () => {
  it('names the model and the field', async () => {
    const models = await alice.listSiteModels(siteA);
    const [holder, mover] = models;
    const error = await failure(
      alice.updateModel(mover.id, {
        settings: { serving_priority: holder.priority },
        priority_conflict_resolution: 'strict',
      }),
    );
    expect(error).toMatchObject({ kind: 'http', status: 409, modelId: mover.id, attempts: 1 });
    expect(error.errors[0].field).toBe('settings.serving_priority');
    expect(error.message).toContain(`(model ${mover.id}): HTTP 409: settings.serving_priority:`);
  });
});

describe('401: a missing or wrong key', () => {
  it('is an http error naming Authorization', async () => {
    const stranger = new ServiceClient({ baseUrl: emu.url, apiKey: WRONG_KEY, log: logs.log });
    try {
      const error = await failure(stranger.listSites());
      expect(error).toMatchObject({ kind: 'http', status: 401, endpoint: 'GET /platform/v2/sites', attempts: 1 });
      expect(error.errors[0].field).toBe('Authorization');
    } finally {
      await stranger.close();
    }
  });
});

describe('accounts are isolated', () => {
  it("another account's sites are not listed", async () => {
    const mine = new Set((await alice.listSites()).map((s) => s.id));
    const theirs = (await bob.listSites()).map((s) => s.id);
    expect(theirs.length).toBe(3);
    expect(theirs.filter((id) => mine.has(id))).toEqual([]);
  });

  it.each([
    ['get site', () => bob.getSite(siteA), 'GET /platform/v2/sites/{site_id}'],
    ['update site', () => bob.updateSite(siteA, goodSolar), 'PUT /platform/v2/sites/{site_id}'],
    ['list models', () => bob.listSiteModels(siteA), 'GET /platform/v2/sites/{site_id}/models'],
    ['forecast', () => bob.getSiteForecast(siteA), 'GET /platform/v2/sites/{site_id}/forecast'],
    [
      'actuals',
      () => bob.getSiteActuals(siteA, { start: NOW - 86_400_000, end: NOW }),
      'GET /platform/v2/sites/{site_id}/actual',
    ],
    [
      'capacity',
      () => bob.uploadSiteCapacity(siteA, { data: [{ valid_time: '2026-06-15T00:00Z', value: 1 }] }),
      'POST /platform/v2/sites/{site_id}/capacity',
    ],
  ] as [string, () => Promise<unknown>, string][])(
    "%s of another account's site is 404 naming the site",
    async (_name, call, endpoint) => {
      const error = await failure(call());
      expect(error).toMatchObject({ kind: 'http', status: 404, endpoint, siteId: siteA, attempts: 1 });
      expect(error.errors[0].field).toBe('site_id');
    },
  );

  it.each([
    [
      'update model',
      () => bob.updateModel(modelA, { settings: { serving_active: false } }),
      'PUT /platform/v2/models/{model_id}',
    ],
    ['model output', () => bob.getModelOutput(modelA), 'GET /platform/v2/models/{model_id}/output'],
  ] as [string, () => Promise<unknown>, string][])(
    "%s of another account's model is 404 naming the model",
    async (_name, call, endpoint) => {
      const error = await failure(call());
      expect(error).toMatchObject({ kind: 'http', status: 404, endpoint, modelId: modelA });
      expect(error.message).toContain(`(model ${modelA}): HTTP 404`);
    },
  );

  it("the other account's model stays as it was", async () => {
    const model = (await alice.listSiteModels(siteA, { extra: ['serving_active'] })).find((m) => m.id === modelA);
    expect(model?.serving_active).toBe(true);
  });
});

describe('the API key never leaks', () => {
  it('is in no error (message, stack, JSON, inspection) and in no log line', async () => {
    const down = new ServiceClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: KEY_A,
      log: logs.log,
      retries: { attempts: 1, baseDelay: 1 },
    });
    try {
      await failure(down.listSites());
    } finally {
      await down.close();
    }
    expect(errorsSeen.length).toBeGreaterThan(15);
    expect(logs.lines().some((line) => line.msg === 'service request')).toBe(true);
    const everything = [
      logs.text(),
      ...errorsSeen.flatMap((error) => [
        String(error),
        error.stack ?? '',
        JSON.stringify(error),
        inspect(error, { depth: 10, showHidden: true }),
      ]),
    ].join('\n');
    for (const key of [KEY_A, KEY_B, WRONG_KEY]) expect(everything).not.toContain(key);
  });
});
