// The endpoints beyond the first ten, through the client against the emulator over loopback:
// Delete Site; Get/Upload/Delete Site Actuals with `type`; Get/Delete Site Capacity (and an upload
// that merges); Get Site Forecast Updates; Train Site Models; Get Model Input. Then the client's
// tolerant reading of their other documented forms, and the retry policy of the new calls, on a
// scripted server.
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import type { SiteRequest } from '../src/api/schemas.js';
import { startEmulator, type Emulator } from '../src/emulator/server.js';
import { DAY, HOUR, formatMinute, parseInstant, startOfUtcDay } from '../src/time.js';
import { json, scriptedClients, serviceFailure } from './client-support.js';

const NOW = Date.UTC(2026, 5, 15, 10, 7, 0);
const TODAY = startOfUtcDay(NOW);
const at = (text: string) => parseInstant(text);

let emu: Emulator;
let client: ServiceClient;

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ['k1', 'k2'], sites: 3, seed: 1, now: () => NOW });
  client = new ServiceClient({ baseUrl: emu.url, apiKey: 'k1' });
});

afterAll(async () => {
  await client.close();
  await emu.close();
});

const loadSite: SiteRequest = {
  name: 'Bakery load',
  latitude: 48.1,
  longitude: 11.6,
  type: 'load',
  settings: { forecast_max_value: 800 },
};

describe('Delete Site', () => {
  it('removes the site with its models and data; a second delete finds nothing', async () => {
    const { site_id } = await client.createSite(loadSite);
    const [model] = await client.listSiteModels(site_id);
    await expect(client.deleteSite(site_id)).resolves.toEqual({ message: 'Site deleted successfully' });
    expect((await client.listSites()).map((s) => s.site_id)).not.toContain(site_id);
    expect((await serviceFailure(client.getSite(site_id))).status).toBe(404);
    expect((await serviceFailure(client.getModelOutput(model.id))).status).toBe(404);
    expect((await serviceFailure(client.deleteSite(site_id))).status).toBe(404);
  });

  it("cannot delete another account's site", async () => {
    const other = new ServiceClient({ baseUrl: emu.url, apiKey: 'k2' });
    try {
      const [site] = await other.listSites();
      expect((await serviceFailure(client.deleteSite(site.site_id))).status).toBe(404);
      await expect(other.getSite(site.site_id)).resolves.toMatchObject({ site_id: site.site_id });
    } finally {
      await other.close();
    }
  });
});

describe('Site Actuals with type', () => {
  const range = { start: TODAY, end: TODAY + 6 * HOUR };

  it('reads power by default; an upload replaces the values at its times and leaves the others', async () => {
    const { site_id } = await client.createSite(loadSite);
    const before = await client.getSiteActuals(site_id, range);
    // Quarter hours labelled by their beginning, 00:00 to 06:00 with both ends included.
    expect(before.valid_time).toHaveLength(25);
    expect([before.valid_time[0], before.valid_time.at(-1)]).toEqual([range.start, range.end]);
    const answer = await client.uploadSiteActuals(site_id, {
      data: [
        { valid_time: '2026-06-15T01:00:00Z', value: 123.5 },
        { valid_time: '2026-06-15T02:00:00Z', value: 0 },
      ],
    });
    expect(answer).toHaveProperty('message');
    const after = await client.getSiteActuals(site_id, { ...range, type: 'power' });
    const valueAt = (series: typeof after, t: number) => series.value[series.valid_time.indexOf(t)];
    expect(after.valid_time).toEqual(before.valid_time);
    expect(valueAt(after, at('2026-06-15T01:00Z'))).toBe(123.5);
    expect(valueAt(after, at('2026-06-15T02:00Z'))).toBe(0);
    expect(valueAt(after, at('2026-06-15T03:00Z'))).toBe(valueAt(before, at('2026-06-15T03:00Z')));
  });

  it('keeps other series types apart: only what was uploaded, each type alone', async () => {
    const { site_id } = await client.createSite(loadSite);
    expect(await client.getSiteActuals(site_id, { ...range, type: 'availability' })).toMatchObject({
      valid_time: [],
      value: [],
    });
    await client.uploadSiteActuals(site_id, {
      type: 'availability',
      data: [
        { valid_time: '2026-06-15T00:15:00Z', value: 1 },
        { valid_time: '2026-06-15T00:30:00Z', value: 0.5 },
      ],
    });
    await client.uploadSiteActuals(site_id, {
      type: 'curtailment',
      data: [{ valid_time: '2026-06-15T00:15:00Z', value: 40 }],
    });
    expect(await client.getSiteActuals(site_id, { ...range, type: 'availability' })).toMatchObject({
      valid_time: [at('2026-06-15T00:15Z'), at('2026-06-15T00:30Z')],
      value: [1, 0.5],
    });
    expect(await client.getSiteActuals(site_id, { ...range, type: 'curtailment' })).toMatchObject({ value: [40] });
    const power = await client.getSiteActuals(site_id, range);
    expect(power.value).not.toContain(40);
  });

  it('deletes a range (both ends included) of one type; a later upload fills it again', async () => {
    const { site_id } = await client.createSite(loadSite);
    await client.uploadSiteActuals(site_id, {
      type: 'availability',
      data: [{ valid_time: '2026-06-15T01:00:00Z', value: 1 }],
    });
    await client.deleteSiteActuals(site_id, { start: at('2026-06-15T01:00Z'), end: at('2026-06-15T02:00Z') });
    const power = await client.getSiteActuals(site_id, range);
    const hours = (series: typeof power) => series.valid_time.map((t) => formatMinute(t).slice(11, 16));
    expect(hours(power)).not.toContain('01:00');
    expect(hours(power)).not.toContain('02:00');
    expect(hours(power)).toContain('00:45');
    expect(hours(power)).toContain('02:15');
    expect(power.valid_time).toHaveLength(25 - 5);
    // The other type was not touched by the power delete.
    expect((await client.getSiteActuals(site_id, { ...range, type: 'availability' })).value).toEqual([1]);
    await client.deleteSiteActuals(site_id, {
      start: at('2026-06-15T00:00Z'),
      end: at('2026-06-15T06:00Z'),
      type: 'availability',
    });
    expect((await client.getSiteActuals(site_id, { ...range, type: 'availability' })).value).toEqual([]);
    await client.uploadSiteActuals(site_id, { data: [{ valid_time: '2026-06-15T01:30:00Z', value: 77 }] });
    expect(hours(await client.getSiteActuals(site_id, range))).toContain('01:30');
  });

  it('rejects a delete without its range, naming the parameter', async () => {
    const { site_id } = await client.createSite(loadSite);
    const error = await serviceFailure(
      client.deleteSiteActuals(site_id, { start: at('2026-06-15T02:00Z'), end: at('2026-06-15T01:00Z') }),
    );
    expect(error.status).toBe(400);
    expect(error.errors).toEqual([{ field: 'end_date', message: 'must not be before start_date' }]);
  });
});

describe('Site Capacity: get (sampled), merge, delete', () => {
  /** The capacity in force at `time`, as Get Site Capacity samples it. */
  async function capacityAt(siteId: string, time: string): Promise<number> {
    const t = at(time);
    const sample = await client.getSiteCapacity(siteId, { start: t, end: t });
    expect(sample.valid_time).toEqual([t]);
    return sample.value[0];
  }

  it('samples the capacity in force every freq over the range, both ends included', async () => {
    const { site_id } = await client.createSite(loadSite);
    expect(await client.getSiteCapacity(site_id, { start: TODAY, end: TODAY + 2 * HOUR })).toEqual({
      valid_time: [TODAY, TODAY + HOUR, TODAY + 2 * HOUR],
      value: [800, 800, 800],
      nulls: 0,
    });
    const quarter = await client.getSiteCapacity(site_id, { start: TODAY, end: TODAY + HOUR, freq: '15min' });
    expect(quarter.valid_time).toHaveLength(5);
    expect(
      (await client.getSiteCapacity(site_id, { start: TODAY + 60_000, end: TODAY + HOUR, freq: '5min' })).valid_time[0],
    ).toBe(TODAY + 5 * 60_000);
  });

  it('merges an upload into the timeline: points at other times stay', async () => {
    const { site_id } = await client.createSite(loadSite);
    await client.uploadSiteCapacity(site_id, {
      data: [
        { valid_time: '2026-07-01T00:00Z', value: 600 },
        { valid_time: '2026-07-10T00:00Z', value: 800 },
      ],
    });
    await client.uploadSiteCapacity(site_id, {
      data: [
        { valid_time: '2026-07-05T00:00Z', value: 0 },
        { valid_time: '2026-07-10T00:00Z', value: 900 },
      ],
    });
    expect(await capacityAt(site_id, '2026-06-20T00:00Z')).toBe(800);
    expect(await capacityAt(site_id, '2026-07-01T00:00Z')).toBe(600);
    expect(await capacityAt(site_id, '2026-07-04T23:00Z')).toBe(600);
    expect(await capacityAt(site_id, '2026-07-05T00:00Z')).toBe(0);
    expect(await capacityAt(site_id, '2026-07-11T00:00Z')).toBe(900);
    // The site response's segments show the same points.
    const segments = (await client.getSite(site_id)).capacity_kw_array;
    expect(segments.map((s) => s.value)).toEqual([800, 600, 0, 900]);
  });

  it('deletes the points of a range; the value before holds forward over it', async () => {
    const { site_id } = await client.createSite(loadSite);
    await client.uploadSiteCapacity(site_id, {
      data: [
        { valid_time: '2026-06-16T00:00Z', value: 0 },
        { valid_time: '2026-06-16T12:00Z', value: 800 },
      ],
    });
    const window = { start: at('2026-06-16T06:00Z'), end: at('2026-06-16T18:00Z') };
    let forecast = await client.getSiteForecast(site_id, window);
    expect(new Set(forecast.capacity.slice(0, 20))).toEqual(new Set([0]));
    await client.deleteSiteCapacity(site_id, { start: at('2026-06-16T00:00Z'), end: at('2026-06-16T12:00Z') });
    expect(await capacityAt(site_id, '2026-06-16T06:00Z')).toBe(800);
    forecast = await client.getSiteForecast(site_id, window);
    expect(new Set(forecast.capacity)).toEqual(new Set([800]));
  });

  it('a timeline deleted whole leaves the nameplate in force', async () => {
    const { site_id } = await client.createSite(loadSite);
    await client.uploadSiteCapacity(site_id, { data: [{ valid_time: '2026-06-15T00:00Z', value: 100 }] });
    await client.deleteSiteCapacity(site_id, { start: 0, end: at('2100-01-01T00:00Z') });
    expect((await client.getSite(site_id)).capacity_kw_array).toEqual([]);
    expect(await capacityAt(site_id, '2026-06-15T12:00Z')).toBe(800);
    const forecast = await client.getSiteForecast(site_id, { start: TODAY, end: TODAY + DAY });
    expect(new Set(forecast.capacity)).toEqual(new Set([800]));
  });
});

describe('Site Actual Types', () => {
  it('lists power and every uploaded type with the span of its valid times', async () => {
    const { site_id } = await client.createSite(loadSite);
    await client.uploadSiteActuals(site_id, {
      type: 'availability',
      data: [
        { valid_time: '2026-06-14T00:15:00Z', value: 1 },
        { valid_time: '2026-06-15T00:30:00Z', value: 0.5 },
      ],
    });
    const types = await client.getSiteActualTypes(site_id);
    expect(types.map((t) => t.type)).toEqual(['power', 'availability']);
    expect(types[1]).toEqual({ type: 'availability', min: at('2026-06-14T00:15Z'), max: at('2026-06-15T00:30Z') });
    expect(types[0].max).toBeLessThanOrEqual(NOW);
  });
});

describe('Site Forecast Updates', () => {
  it('lists every issue time of the serving models, oldest first, each readable as a vintage', async () => {
    const [site] = await client.listSites();
    const updates = await client.getSiteForecastUpdates(site.site_id);
    expect([...updates]).toEqual([...updates].sort((a, b) => a - b));
    expect(new Set(updates).size).toBe(updates.length);
    expect(updates.at(-1)).toBeLessThanOrEqual(NOW);
    // The demo's AI model issues at :30 every 3 hours, the physical model every 6 hours on the hour,
    // the quantile models every 6 hours at :15.
    const today = updates.filter((t) => t >= TODAY).map((t) => formatMinute(t).slice(11, 16));
    expect(today).toEqual(['00:00', '00:15', '00:30', '03:30', '06:00', '06:15', '06:30', '09:30']);
    const newest = updates.at(-1)!;
    const vintage = await client.getSiteForecast(site.site_id, { asOf: newest, start: newest, end: newest + DAY });
    expect(Math.max(...vintage.update_time)).toBe(newest);
  });

  it('leaves out a model that does not serve', async () => {
    const { site_id } = await client.createSite(loadSite);
    const physical = (await client.listSiteModels(site_id)).find((m) => m.name === 'physical')!;
    await client.updateModel(physical.id, { settings: { serving_active: false } });
    const today = (await client.getSiteForecastUpdates(site_id))
      .filter((t) => t >= TODAY)
      .map((t) => formatMinute(t).slice(11, 16));
    expect(today).toEqual(['00:30', '03:30', '06:30', '09:30']);
  });

  it('lists hourly issues of an hourly model', async () => {
    const hourly = await startEmulator({
      apiKeys: ['h'],
      sites: 1,
      seed: 2,
      now: () => NOW,
      schedules: { ai: '0 * * * *' },
    });
    const hourlyClient = new ServiceClient({ baseUrl: hourly.url, apiKey: 'h' });
    try {
      const [site] = await hourlyClient.listSites();
      const today = (await hourlyClient.getSiteForecastUpdates(site.site_id)).filter((t) => t >= TODAY);
      expect(today.map((t) => formatMinute(t).slice(11, 16))).toEqual([
        '00:00',
        '00:15',
        '01:00',
        '02:00',
        '03:00',
        '04:00',
        '05:00',
        '06:00',
        '06:15',
        '07:00',
        '08:00',
        '09:00',
        '10:00',
      ]);
    } finally {
      await hourlyClient.close();
      await hourly.close();
    }
  });
});

describe('Train Site Models', () => {
  it('starts training the models of the given sites: their states go queued, training, complete again', async () => {
    const { site_id } = await client.createSite(loadSite);
    const before = await client.listSiteModels(site_id);
    const answer = await client.trainSiteModels({
      site_ids: [site_id],
      splits: [{ start_date: '2026-06-01T00:00Z', end_date: '2026-06-10T00:00Z' }],
    });
    expect(answer).toHaveProperty('message');
    const after = await client.listSiteModels(site_id);
    for (const model of after) {
      const added = model.state.slice(before.find((m) => m.id === model.id)!.state.length);
      expect(added.map((s) => s.state)).toEqual(['queued', 'training', 'complete']);
      expect(added[0].timestamp_utc).toBe(NOW);
    }
  });

  it('rejects an unknown site and a split that ends before it starts, training nothing', async () => {
    const { site_id } = await client.createSite(loadSite);
    expect((await serviceFailure(client.trainSiteModels({ site_ids: [site_id, 'no-such-site'] }))).status).toBe(404);
    const split = await serviceFailure(
      client.trainSiteModels({
        site_ids: [site_id],
        splits: [{ start_date: '2026-06-10T00:00Z', end_date: '2026-06-01T00:00Z' }],
      }),
    );
    expect(split.status).toBe(400);
    expect(split.errors[0].field).toBe('splits.0.end_date');
    expect((await client.listSiteModels(site_id)).every((m) => m.state.length === 3)).toBe(true);
  });
});

describe('Get Model Input', () => {
  it("answers the latest vintage's input data frame and its metadata", async () => {
    const [site] = await client.listSites();
    const [model] = await client.listSiteModels(site.site_id);
    const input = await client.getModelInput(model.id);
    expect(input.metadata).toMatchObject({ model_id: model.id, model_name: model.name, site_id: site.site_id });
    const frame = input.dataframe as Record<string, unknown[]>;
    const columns = Object.keys(frame);
    expect(columns).toContain('valid_time');
    expect(columns).toHaveLength(2);
    expect(frame.valid_time.length).toBeGreaterThan(0);
    expect(frame[columns[1]]).toHaveLength(frame.valid_time.length);
    expect((await serviceFailure(client.getModelInput('no-such-model'))).status).toBe(404);
  });
});

describe('reading their other forms', () => {
  const scripted = scriptedClients();
  const serve = (answer: (n: number, res: ServerResponse) => void) => scripted((_request, n, res) => answer(n, res));

  it('reads a capacity timeline in the documented envelope, as bare columns, or as rows, sorted by time', async () => {
    const columns = { valid_time: ['2026-07-10T00:00:00Z', '2026-07-01T00:00:00+00:00'], value: [900, 600] };
    const bodies = [
      { meta: { site_name: 'x', site_id: 's1', unit: 'kW' }, data: columns },
      columns,
      [
        { valid_time: '2026-07-10T00:00Z', value: 900, note: 'extra keys are kept' },
        { valid_time: '2026-07-01T00:00Z', value: 600 },
      ],
    ];
    const { server: s, client: c } = await serve((n, res) => json(res, 200, bodies[n - 1]));
    const range = { start: at('2026-07-01T00:00Z'), end: at('2026-07-10T00:00Z'), freq: '1h' as const };
    for (let i = 0; i < bodies.length; i++) {
      expect(await c.getSiteCapacity('s1', range)).toEqual({
        valid_time: [at('2026-07-01T00:00Z'), at('2026-07-10T00:00Z')],
        value: [600, 900],
        nulls: 0,
      });
    }
    expect(s.requests[0].url).toBe(
      '/platform/v2/sites/s1/capacity?freq=1h&start_date=2026-07-01T00%3A00%3A00Z&end_date=2026-07-10T00%3A00%3A00Z',
    );
  });

  it('rejects a capacity timeline whose columns differ in length', async () => {
    const { client: c } = await serve((_n, res) =>
      json(res, 200, { data: { valid_time: ['2026-07-01T00:00Z'], value: [1, 2] } }),
    );
    const error = await serviceFailure(c.getSiteCapacity('s1', { start: 0, end: 1 }));
    expect(error.kind).toBe('malformed');
  });

  it('takes an empty answer to a DELETE (204) and any object as success', async () => {
    const { client: c } = await serve((n, res) => {
      if (n === 1) {
        res.writeHead(204);
        res.end();
      } else json(res, 200, {});
    });
    await expect(c.deleteSiteCapacity('s1', { start: 0, end: 1 })).resolves.toEqual({ message: null });
    await expect(c.deleteSite('s1')).resolves.toEqual({ message: null });
  });

  it('reads null dataframe and metadata of a model input as empty', async () => {
    const { client: c } = await serve((_n, res) => json(res, 200, { dataframe: null }));
    expect(await c.getModelInput('m1')).toEqual({ dataframe: {}, metadata: {} });
  });

  it('sends the documented query and body of each call', async () => {
    const { server: s, client: c } = await serve((n, res) => json(res, 200, n === 1 ? [] : {}));
    await c.getSiteForecastUpdates('s 1');
    await c.deleteSiteActuals('s1', {
      start: at('2026-06-15T00:00Z'),
      end: at('2026-06-16T00:00Z'),
      type: 'availability',
    });
    await c.trainSiteModels({ site_ids: ['s1', 's2'] });
    await c.uploadSiteActuals('s1', { type: 'availability', data: [{ valid_time: '2026-06-15T00:15:00Z', value: 1 }] });
    expect(s.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /platform/v2/sites/s%201/forecast/updates',
      'DELETE /platform/v2/sites/s1/actual?start_date=2026-06-15T00%3A00%3A00Z&end_date=2026-06-16T00%3A00%3A00Z&type=availability',
      'POST /platform/v2/sites/models/train',
      'POST /platform/v2/sites/s1/actual',
    ]);
    expect(JSON.parse(s.requests[2].body)).toEqual({ site_ids: ['s1', 's2'] });
    expect(JSON.parse(s.requests[3].body)).toEqual({
      type: 'availability',
      data: [{ valid_time: '2026-06-15T00:15:00Z', value: 1 }],
    });
  });
});

describe('retry policy of the new calls', () => {
  const serve = scriptedClients();
  const firstFailing = (status: number) =>
    serve((_request, n, res) =>
      n === 1
        ? json(res, status, { errors: [{ field: '(server)', message: 'busy' }] })
        : json(res, 200, { message: 'ok' }),
    );

  it.each([
    ['Delete Site', (c: ServiceClient) => c.deleteSite('s1')],
    ['Delete Site Actuals', (c: ServiceClient) => c.deleteSiteActuals('s1', { start: 0, end: 1 })],
    ['Delete Site Capacity', (c: ServiceClient) => c.deleteSiteCapacity('s1', { start: 0, end: 1 })],
    [
      'Upload Site Actuals (a merge)',
      (c: ServiceClient) => c.uploadSiteActuals('s1', { data: [{ valid_time: '2026-06-15T00:15:00Z', value: 1 }] }),
    ],
    [
      'Upload Site Capacity (a merge)',
      (c: ServiceClient) => c.uploadSiteCapacity('s1', { data: [{ valid_time: '2026-06-15T00:15Z', value: 1 }] }),
    ],
  ])('%s is repeated after a 503', async (_name, call) => {
    const { server: s, client: c } = await firstFailing(503);
    await expect(call(c)).resolves.toEqual({ message: 'ok' });
    expect(s.requests).toHaveLength(2);
  });

  it('Train Site Models is not repeated after a 503 (the service may have started it), but is after a 429', async () => {
    let { server: s, client: c } = await firstFailing(503);
    expect((await serviceFailure(c.trainSiteModels({ site_ids: ['s1'] }))).status).toBe(503);
    expect(s.requests).toHaveLength(1);
    await c.close();
    await s.close();
    ({ server: s, client: c } = await firstFailing(429));
    await expect(c.trainSiteModels({ site_ids: ['s1'] })).resolves.toEqual({ message: 'ok' });
    expect(s.requests).toHaveLength(2);
  });
});
