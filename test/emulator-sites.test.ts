// Sites over HTTP: the demo fleet, create/get/update/list, validation naming fields, keys and accounts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_RESPONSE_FIELDS } from '../src/api/schemas.js';
import type { Emulator } from '../src/emulator/server.js';
import { api, NOON, sitesByKind, startTestEmulator, type Api } from './emulator-support.js';
import { startEmulator } from '../src/emulator/server.js';

let emulator: Emulator;
let k1: Api;
let k2: Api;

beforeAll(async () => {
  emulator = await startTestEmulator();
  k1 = api(emulator, 'k1');
  k2 = api(emulator, 'k2');
});
afterAll(() => emulator.close());

const solarBody = {
  name: 'Roof in Lund',
  latitude: 55.7047,
  longitude: 13.191,
  type: 'solar',
  settings: { model_resolution: '15min', quantileModels: [0.25, 0.75] },
  assets: [{ mount: 'fixed', capacity: 120, tilt: 30, azimuth: 180, install_date: '2024-04-01' }],
};

describe('demo sites', () => {
  it('mixes solar fixed and tracking, wind and load, at real places, with id equal to site_id', async () => {
    const { sites, solarFixed, solarTracking, wind, load } = await sitesByKind(k1);
    expect(sites).toHaveLength(6);
    for (const found of [solarFixed, solarTracking, wind, load]) expect(found).toBeDefined();
    expect(new Set(sites.map((s) => `${s.latitude},${s.longitude}`)).size).toBe(6);
    for (const site of sites) {
      expect(site.id).toBe(site.site_id);
      expect(site.creation_timestamp_utc).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
      expect(site.capacity_kw_array[0]).toMatchObject({ dateEnd: null });
    }
    expect(wind.assets).toEqual([expect.objectContaining({ turbine_type: 'V126/3000', hub_height: 117 })]);
    expect(wind.capacity_kw_array[0].value).toBe(wind.assets[0].nr_units * 3000);
    expect(load.assets).toEqual([]);
    expect(load.capacity_kw_array[0].value).toBe(load.settings.forecast_max_value);
    expect(solarFixed.capacity_kw_array[0].value).toBe(solarFixed.assets[0].capacity);
  });

  it('three sites hold all three types', async () => {
    const small = await startEmulator({ apiKeys: ['k'], sites: 3, seed: 1, now: () => NOON });
    const { body } = await api(small, 'k').get<any[]>('/sites');
    expect(new Set(body.map((s) => s.type))).toEqual(new Set(['solar', 'wind', 'load']));
    await small.close();
  });

  it('ids are the same for the same seed and key, and differ between keys and seeds', async () => {
    const again = await startEmulator({ apiKeys: ['k2', 'k1'], sites: 6, seed: 7, now: () => NOON });
    const other = await startEmulator({ apiKeys: ['k1'], sites: 6, seed: 8, now: () => NOON });
    const ids = async (e: Emulator, key: string) =>
      (await api(e, key).get<any[]>('/sites')).body.map((s) => s.id).sort();
    expect(await ids(again, 'k1')).toEqual(await ids(emulator, 'k1'));
    const k1Ids = await ids(emulator, 'k1');
    expect((await ids(emulator, 'k2')).filter((id: string) => k1Ids.includes(id))).toEqual([]);
    expect(await ids(other, 'k1')).not.toEqual(await ids(emulator, 'k1'));
    await again.close();
    await other.close();
  });
});

describe('create, get, update', () => {
  it('creates a site that get and list return, with its models', async () => {
    const created = await k1.send('POST', '/sites', solarBody);
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ site_id: expect.any(String) });
    const id = created.body.site_id;
    const got = await k1.get(`/sites/${id}`);
    expect(got.body).toMatchObject({
      id,
      site_id: id,
      name: 'Roof in Lund',
      type: 'solar',
      capacity_kw_array: [{ value: 120, dateEnd: null }],
      assets: [{ mount: 'fixed', capacity: 120, tilt: 30, azimuth: 180 }],
      settings: { quantileModels: [0.25, 0.75] },
    });
    expect((await k1.get<any[]>('/sites')).body.map((s) => s.id)).toContain(id);
    const models = (await k1.get<any[]>(`/sites/${id}/models`)).body.map((m) => m.name).sort();
    expect(models).toEqual(['ai', 'physical', 'quantile_p25', 'quantile_p75']);
  });

  it('creates wind sites with their turbines as assets, and load sites, answering the documented site shape', async () => {
    const turbines = [
      { turbine_type: 'generic', nr_units: 2, hub_height: 90 },
      { turbine_type: 'V126/3000', nr_units: 1, hub_height: 117, install_date: '2021-01-01' },
    ];
    const wind = await k1.send('POST', '/sites', {
      name: 'W',
      latitude: 56,
      longitude: 8,
      type: 'wind',
      assets: turbines,
    });
    const load = await k1.send('POST', '/sites', {
      name: 'L',
      latitude: 59.3,
      longitude: 18,
      type: 'load',
      settings: { forecast_max_value: 900 },
    });
    const windSite = (await k1.get(`/sites/${wind.body.site_id}`)).body;
    expect(windSite).toMatchObject({ type: 'wind', assets: turbines, capacity_kw_array: [{ value: 2 * 2000 + 3000 }] });
    const loadSite = (await k1.get(`/sites/${load.body.site_id}`)).body;
    expect(loadSite).toMatchObject({ type: 'load', assets: [], capacity_kw_array: [{ value: 900 }] });
    for (const site of [windSite, loadSite]) expect(Object.keys(site).sort()).toEqual([...SITE_RESPONSE_FIELDS].sort());
  });

  it('rejects the old wind body with top-level turbine fields, naming assets', async () => {
    const answer = await k1.send('POST', '/sites', {
      name: 'W',
      latitude: 56,
      longitude: 8,
      type: 'wind',
      turbine_type: 'generic',
      turbine_count: 2,
      capacity: 6000,
    });
    expect(answer.status).toBe(400);
    expect(answer.body.errors.map((e: any) => e.field)).toContain('assets');
  });

  it('updates a site, answering a message as the guide shows; the default capacity follows the new assets', async () => {
    const id = (await k1.send('POST', '/sites', solarBody)).body.site_id;
    const updated = await k1.send('PUT', `/sites/${id}`, {
      ...solarBody,
      name: 'Roof in Lund, extended',
      assets: [...solarBody.assets, { mount: 'dual_axis_tracking', capacity: 30 }],
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({ message: 'Site updated successfully' });
    const site = (await k1.get(`/sites/${id}`)).body;
    expect(site).toMatchObject({ id, name: 'Roof in Lund, extended', capacity_kw_array: [{ value: 150 }] });
    expect(site.assets).toHaveLength(2);
  });
});

describe('validation', () => {
  const cases: [string, unknown, string][] = [
    ['latitude 91', { ...solarBody, latitude: 91 }, 'latitude'],
    ['longitude -181', { ...solarBody, longitude: -181 }, 'longitude'],
    ['empty assets', { ...solarBody, assets: [] }, 'assets'],
    ['unknown type', { ...solarBody, type: 'hydro' }, 'type'],
    ['unknown mount', { ...solarBody, assets: [{ mount: 'floating', capacity: 1 }] }, 'assets.0.mount'],
    ['an undocumented key', { ...solarBody, owner: 'ops' }, 'owner'],
    ['an undocumented asset key', { ...solarBody, assets: [{ ...solarBody.assets[0], tlit: 30 }] }, 'assets.0.tlit'],
  ];
  for (const [what, body, field] of cases) {
    it(`rejects ${what} with 400 naming ${field}`, async () => {
      const answer = await k1.send('POST', '/sites', body);
      expect(answer.status).toBe(400);
      expect(answer.body.errors.map((e: any) => e.field)).toContain(field);
      expect(answer.body.errors[0].message).toEqual(expect.any(String));
    });
  }

  it('rejects the same on update', async () => {
    const { solarFixed } = await sitesByKind(k1);
    const answer = await k1.send('PUT', `/sites/${solarFixed.id}`, { ...solarBody, latitude: 91 });
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].field).toBe('latitude');
  });

  it('rejects malformed JSON with 400', async () => {
    const answer = await k1.send('POST', '/sites', '{"name": "half');
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].field).toBe('(body)');
  });

  it('answers 404 on an unknown path and 405 on a wrong method', async () => {
    expect((await k1.get('/nothing-here')).status).toBe(404);
    const wrong = await k1.send('DELETE', '/sites');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, POST');
    expect(wrong.body.errors).toHaveLength(1);
  });
});

describe('keys and accounts', () => {
  it('answers 401 with the error body for a missing or unknown key', async () => {
    for (const key of [undefined, 'not-a-key']) {
      const answer = await api(emulator, key).get('/sites');
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ errors: [{ field: 'Authorization', message: expect.any(String) }] });
      expect(JSON.stringify(answer.body)).not.toContain('not-a-key');
    }
  });

  it('shows each key only its own sites and models, and 404 for the others', async () => {
    const mine = (await k1.get<any[]>('/sites')).body.map((s) => s.id);
    const theirs = (await k2.get<any[]>('/sites')).body.map((s) => s.id);
    expect(mine.filter((id: string) => theirs.includes(id))).toEqual([]);
    const site = theirs[0];
    const model = (await k2.get<any[]>(`/sites/${site}/models`)).body[0].id;
    const paths = [`/sites/${site}`, `/sites/${site}/models`, `/sites/${site}/forecast`, `/models/${model}/output`];
    for (const path of paths) {
      const answer = await k1.get(path);
      expect(answer.status, path).toBe(404);
      expect(answer.body.errors[0].field).toMatch(/site_id|model_id/);
    }
    expect((await k1.get(`/sites/${site}/actual`, { start_date: '2026-03-28', end_date: '2026-03-29' })).status).toBe(
      404,
    );
    expect((await k1.send('PUT', `/models/${model}`, { settings: { serving_active: false } })).status).toBe(404);
    expect(
      (await k1.send('POST', `/sites/${site}/capacity`, { data: [{ valid_time: '2026-04-01T00:00Z', value: 1 }] }))
        .status,
    ).toBe(404);
    expect((await k1.send('PUT', `/sites/${site}`, solarBody)).status).toBe(404);
  });
});
