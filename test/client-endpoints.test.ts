// Every endpoint of the interface through the client, against the emulator over loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import type { SiteRequest } from '../src/api/schemas.js';
import { startEmulator, type Emulator } from '../src/emulator/server.js';
import { DAY, HOUR, startOfUtcDay } from '../src/time.js';

const NOW = Date.UTC(2026, 5, 15, 10, 7, 0);
const TODAY = startOfUtcDay(NOW);

let emu: Emulator;
let client: ServiceClient;

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ['k1'], sites: 6, seed: 1, now: () => NOW });
  client = new ServiceClient({ baseUrl: emu.url, apiKey: 'k1' });
});

afterAll(async () => {
  await client.close();
  await emu.close();
});

const solarThreeMounts: SiteRequest = {
  name: 'Roof, tracker and dish',
  latitude: 59.33,
  longitude: 18.07,
  type: 'solar',
  settings: { model_resolution: '15min', quantileModels: [0.1, 0.9] },
  assets: [
    { mount: 'fixed', capacity: 400, azimuth: 180, tilt: 30, install_date: '2024-04-01' },
    { mount: 'single_axis_tracking', capacity: 1000, axis_tilt: 0, axis_azimuth: 180, max_angle: 50 },
    { mount: 'dual_axis_tracking', capacity: 100 },
  ],
};

// Wind turbines are the site's assets (guide "How to create a wind site"); the body has no capacity.
const windFarm: SiteRequest = {
  name: 'Coast wind',
  latitude: 55.5,
  longitude: 8.4,
  type: 'wind',
  assets: [{ turbine_type: 'V126/3000', nr_units: 4, hub_height: 117, install_date: '2020-01-01' }],
};

const loadSite: SiteRequest = {
  name: 'Factory load',
  latitude: 48.1,
  longitude: 11.6,
  type: 'load',
  settings: { forecast_max_value: 2500 },
};

async function newSite(body: SiteRequest): Promise<string> {
  const { site_id } = await client.createSite(body);
  return site_id;
}

describe('sites', () => {
  it('lists the demo sites of every type, with instants as epoch ms', async () => {
    const sites = await client.listSites();
    expect(sites.length).toBeGreaterThanOrEqual(6);
    expect(new Set(sites.map((site) => site.type))).toEqual(new Set(['solar', 'wind', 'load']));
    for (const site of sites) {
      expect(site.id).toBe(site.site_id);
      expect(typeof site.creation_timestamp_utc).toBe('number');
      expect(site.creation_timestamp_utc).toBeLessThanOrEqual(NOW);
      expect(site.capacity_kw_array.length).toBeGreaterThan(0);
    }
  });

  it('creates a solar site with the three PV mounts and reads it back', async () => {
    const id = await newSite(solarThreeMounts);
    const site = await client.getSite(id);
    expect(site).toMatchObject({
      id,
      name: 'Roof, tracker and dish',
      type: 'solar',
      latitude: 59.33,
      longitude: 18.07,
    });
    expect(site.assets.map((asset) => asset.mount)).toEqual(['fixed', 'single_axis_tracking', 'dual_axis_tracking']);
    expect(site.capacity_kw_array[0].value).toBe(1500);
    expect((await client.listSites()).map((s) => s.id)).toContain(id);
  });

  it('creates a wind site with turbines as assets and a load site, each with its capacity timeline', async () => {
    const wind = await client.getSite(await newSite(windFarm));
    expect(wind).toMatchObject({
      type: 'wind',
      assets: [{ turbine_type: 'V126/3000', nr_units: 4, hub_height: 117, install_date: '2020-01-01' }],
    });
    expect(wind.capacity_kw_array.at(-1)?.value).toBe(12_000); // 4 × 3000 kW
    expect(wind).not.toHaveProperty('turbine_count');
    const load = await client.getSite(await newSite(loadSite));
    expect(load).toMatchObject({ type: 'load', name: 'Factory load', assets: [] });
    expect(load.capacity_kw_array.at(-1)?.value).toBe(2500);
  });

  it('rejects a wind site with top-level turbine fields instead of assets', async () => {
    const error = await client
      .createSite({
        name: 'Old style',
        latitude: 55,
        longitude: 8,
        type: 'wind',
        turbine_type: 'V126/3000',
        turbine_count: 2,
      } as unknown as SiteRequest)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'http', status: 400 });
    expect((error as { errors: { field: string }[] }).errors.map((e) => e.field)).toContain('assets');
  });

  it('updates a site, answered with a message as the guide shows', async () => {
    const id = await newSite(solarThreeMounts);
    const updated = await client.updateSite(id, {
      ...solarThreeMounts,
      name: 'Roof only',
      assets: [{ mount: 'fixed', capacity: 250, azimuth: 170, tilt: 25 }],
    });
    expect(updated).toEqual({ message: 'Site updated successfully' });
    expect(await client.getSite(id)).toMatchObject({
      id,
      name: 'Roof only',
      assets: [{ mount: 'fixed', capacity: 250, azimuth: 170, tilt: 25 }],
    });
  });
});

describe('models', () => {
  it('lists a site models with training state and cron schedule; quantile models as asked', async () => {
    const id = await newSite(solarThreeMounts);
    const models = await client.listSiteModels(id);
    expect(models.map((model) => model.name).sort()).toEqual(['ai', 'physical', 'quantile_p10', 'quantile_p90']);
    for (const model of models) {
      expect(model.schedule?.type).toBe('cron');
      expect(model.state.length).toBeGreaterThan(0);
      expect(typeof model.state[0].timestamp_utc).toBe('number');
      expect(model.serving_active).toBeUndefined();
    }
    expect(new Set(models.map((model) => model.priority)).size).toBe(models.length);
  });

  it('filters by model_type and adds serving_active when asked through extra', async () => {
    const [site] = await client.listSites();
    const physical = await client.listSiteModels(site.id, { modelType: 'physical', extra: ['serving_active'] });
    expect(physical.length).toBeGreaterThan(0);
    for (const model of physical) {
      expect(model.label).toBe('physical');
      expect(model.serving_active).toBe(true);
    }
    const ai = await client.listSiteModels(site.id, { modelType: 'ai' });
    expect(ai.every((model) => model.label === 'ai')).toBe(true);
  });

  it('updates a priority with strict (409 on collision), auto_increment and swap', async () => {
    const id = await newSite(solarThreeMounts);
    const priorities = async () =>
      Object.fromEntries((await client.listSiteModels(id)).map((model) => [model.name, model.priority]));
    const before = await priorities();
    const byName = Object.fromEntries((await client.listSiteModels(id)).map((model) => [model.name, model.id]));
    const [first, second] = Object.entries(before)
      .sort((a, b) => a[1] - b[1])
      .map(([name]) => name);

    const conflict = await client.updateModel(byName[second], { settings: { serving_priority: before[first] } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(conflict).toMatchObject({ kind: 'http', status: 409, modelId: byName[second] });
    expect(await priorities()).toEqual(before);

    await client.updateModel(byName[second], {
      settings: { serving_priority: before[first] },
      priority_conflict_resolution: 'swap',
    });
    expect(await priorities()).toMatchObject({ [first]: before[second], [second]: before[first] });

    // auto_increment: the holder of the wanted priority moves up one, and so does whoever it then collides with.
    const swappedState = await priorities();
    const target = Object.keys(swappedState).find((name) => name !== first && name !== second)!;
    const lowest = Math.min(...Object.values(swappedState));
    const expected: Record<string, number> = { ...swappedState, [target]: lowest };
    let taken = lowest;
    for (const [name, priority] of Object.entries(swappedState)
      .filter(([name]) => name !== target)
      .sort((a, b) => a[1] - b[1])) {
      if (priority === taken) expected[name] = taken = priority + 1;
    }
    await client.updateModel(byName[target], {
      settings: { serving_priority: lowest },
      priority_conflict_resolution: 'auto_increment',
    });
    expect(await priorities()).toEqual(expected);
    expect(Object.values(expected).filter((p) => p > lowest).length).toBe(3);
  });

  it('switches serving off', async () => {
    const id = await newSite(loadSite);
    const [model] = await client.listSiteModels(id);
    await client.updateModel(model.id, { settings: { serving_active: false } });
    const listed = await client.listSiteModels(id, { extra: ['serving_active'] });
    expect(listed.find((m) => m.id === model.id)?.serving_active).toBe(false);
  });
});

describe('forecasts, outputs and actuals', () => {
  it('reads a site forecast from 00:00 UTC today by default, in equal columns', async () => {
    const [site] = await client.listSites();
    const series = await client.getSiteForecast(site.id);
    expect(series.valid_time.length).toBeGreaterThan(0);
    expect(series.valid_time[0]).toBeGreaterThanOrEqual(TODAY);
    for (const column of [
      series.forecast,
      series.capacity,
      series.model_name,
      series.model_version,
      series.update_time,
    ]) {
      expect(column).toHaveLength(series.valid_time.length);
    }
    expect(series.update_time.every((t) => t <= NOW)).toBe(true);
  });

  it('reads the forecast as it was known at as_of', async () => {
    const [site] = await client.listSites();
    const asOf = NOW - 12 * HOUR;
    const series = await client.getSiteForecast(site.id, { start: TODAY - DAY, end: TODAY + DAY, asOf });
    expect(series.valid_time.length).toBeGreaterThan(0);
    expect(series.update_time.every((t) => t <= asOf)).toBe(true);
    const current = await client.getSiteForecast(site.id, { start: TODAY - DAY, end: TODAY + DAY });
    expect(Math.max(...current.update_time)).toBeGreaterThan(Math.max(...series.update_time));
  });

  it('reads one model of a site, and values normalised by capacity', async () => {
    const [site] = await client.listSites();
    const [model] = await client.listSiteModels(site.id, { modelType: 'physical' });
    const series = await client.getSiteForecast(site.id, { modelId: model.id, normalized: true });
    expect(new Set(series.model_name)).toEqual(new Set([model.name]));
    expect(series.forecast.every((v) => v === null || (v >= 0 && v <= 1))).toBe(true);
  });

  it("reads actuals for a past range at 15-minute steps, each value labelled by its interval's beginning: [start, end]", async () => {
    const [site] = await client.listSites();
    const start = TODAY - 2 * DAY;
    const actuals = await client.getSiteActuals(site.id, { start, end: start + DAY });
    // A day's 96 quarter hours from 00:00, and the next day's 00:00: both ends are included.
    expect(actuals.valid_time.length).toBe(97);
    expect(actuals.valid_time.every((t, i) => t === start + i * 15 * 60_000)).toBe(true);
    expect(actuals.value.filter((v) => v !== null).length).toBeGreaterThan(80);
  });

  it('reads a model output: the vintage current at as_of', async () => {
    const [site] = await client.listSites();
    const [model] = await client.listSiteModels(site.id, { modelType: 'ai' });
    const asOf = NOW - 5 * HOUR;
    const output = await client.getModelOutput(model.id, { start: TODAY - DAY, end: TODAY + 2 * DAY, asOf });
    expect(output).toMatchObject({ model_id: model.id, model_name: model.name, priority: model.priority });
    expect(output.as_of).toBeLessThanOrEqual(asOf);
    expect(output.as_of).toBeGreaterThan(asOf - 3 * HOUR); // the AI model issues every 3 hours
    expect(output.valid_time.length).toBeGreaterThan(0);
    expect(output.forecast).toHaveLength(output.valid_time.length);

    const filled = await client.getModelOutput(model.id, {
      start: TODAY - DAY,
      end: TODAY + 2 * DAY,
      asOf,
      fill: 'auto',
    });
    expect(filled.valid_time.length).toBeGreaterThanOrEqual(output.valid_time.length);
  });

  it('reads the clear-sky output of a solar model', async () => {
    const solar = (await client.listSites()).find((site) => site.type === 'solar')!;
    const [model] = await client.listSiteModels(solar.id);
    const clearsky = await client.getModelOutput(model.id, { outputType: 'clearsky' });
    expect(clearsky.forecast.some((v) => v !== null && v > 0)).toBe(true);
  });
});

describe('capacity', () => {
  it('uploads a timeline that shows in the site and caps the forecast', async () => {
    const id = await newSite(solarThreeMounts);
    const from = TODAY + 12 * HOUR;
    const reply = await client.uploadSiteCapacity(id, {
      data: [{ valid_time: '2026-06-15T12:00Z', value: 200 }],
    });
    expect(reply.message).toEqual(expect.any(String));

    const site = await client.getSite(id);
    expect(site.capacity_kw_array.at(-1)).toMatchObject({ value: 200, dateStart: from, dateEnd: null });

    const series = await client.getSiteForecast(id, { start: TODAY, end: TODAY + DAY });
    series.valid_time.forEach((t, i) => {
      expect(series.capacity[i]).toBe(t >= from ? 200 : 1500);
      if (t >= from) expect(series.forecast[i] ?? 0).toBeLessThanOrEqual(200);
    });
  });
});
