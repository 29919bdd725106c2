// What the client puts on the wire (paths, query names, instants, headers, bodies), and how it reads
// the timestamp forms a real service may send but the emulator does not: `+0000`, `+00:00`,
// fractional seconds, `YYYY-MM-DD HH:MM`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import { json, scriptedServer, type ScriptedServer } from './client-support.js';

const T0 = Date.UTC(2026, 2, 29, 0, 0, 0);

const forecastBody = {
  valid_time: [
    '2026-03-29T00:00:00Z',
    '2026-03-29T00:15:00+0000',
    '2026-03-29T00:30:00+00:00',
    '2026-03-29T02:45:00.000+02:00',
  ],
  forecast: [1, 2, null, 4],
  capacity: [10, 10, 10, 10],
  model_name: ['a', 'a', 'b', 'b'],
  model_version: [1, 1, 2, 2],
  update_time: [
    '2026-03-28T21:00:00.123456Z',
    '2026-03-28 21:00',
    '2026-03-28T21:00:00.5+0000',
    '2026-03-28T23:00:00+02',
  ],
};

let server: ScriptedServer;
let client: ServiceClient;

beforeAll(async () => {
  server = await scriptedServer((request, _n, res) => {
    const path = request.url.split('?')[0];
    if (path.endsWith('/forecast')) return json(res, 200, forecastBody);
    if (path.endsWith('/actual')) return json(res, 200, { valid_time: [], value: [] });
    if (path.endsWith('/models')) return json(res, 200, []);
    if (path.endsWith('/output')) {
      return json(res, 200, {
        model_id: 'm1',
        model_version: 1,
        model_name: 'physical',
        model_label: 'physical',
        priority: 1,
        as_of: '2026-03-29T00:00:00.000+00:00',
        forecast: [],
        valid_time: [],
        capacity: [],
      });
    }
    if (path.endsWith('/capacity')) return json(res, 200, { message: 'ok' });
    if (path === '/platform/v2/sites' && request.method === 'POST') return json(res, 201, { site_id: 'new' });
    return json(res, 404, { errors: [{ field: 'path', message: 'not here' }] });
  });
  client = new ServiceClient({ baseUrl: server.url, apiKey: 'wire-key', outputFillParam: 'gap_fill' });
});

afterAll(async () => {
  await client.close();
  await server.close();
});

function lastQuery(): URLSearchParams {
  const url = server.requests.at(-1)!.url;
  return new URL(url, server.url).searchParams;
}

describe('requests', () => {
  it('sends the bare key in Authorization and asks for JSON', async () => {
    await client.listSiteModels('s1');
    const { headers } = server.requests.at(-1)!;
    expect(headers.authorization).toBe('wire-key');
    expect(headers.accept).toBe('application/json');
  });

  it('names forecast parameters as the interface does, with instants as YYYY-MM-DDTHH:MM:SSZ', async () => {
    await client.getSiteForecast('site/1', {
      start: T0,
      end: T0 + 86_400_000 + 1500,
      asOf: T0 - 3_600_000,
      tz: 'Europe/Stockholm',
      modelId: 'm 7',
      normalized: true,
    });
    expect(server.requests.at(-1)!.url.split('?')[0]).toBe('/platform/v2/sites/site%2F1/forecast');
    expect(Object.fromEntries(lastQuery())).toEqual({
      start_date: '2026-03-29T00:00:00Z',
      end_date: '2026-03-30T00:00:01Z',
      as_of: '2026-03-28T23:00:00Z',
      tz: 'Europe/Stockholm',
      model_id: 'm 7',
      return_normalized: 'true',
    });
  });

  it('leaves out parameters that were not given', async () => {
    await client.getSiteForecast('s1');
    expect(server.requests.at(-1)!.url).toBe('/platform/v2/sites/s1/forecast');
  });

  it('sends actuals parameters', async () => {
    await client.getSiteActuals('s1', { start: T0, end: T0 + 3_600_000, type: 'power' });
    expect(server.requests.at(-1)!.url.split('?')[0]).toBe('/platform/v2/sites/s1/actual');
    expect(Object.fromEntries(lastQuery())).toEqual({
      start_date: '2026-03-29T00:00:00Z',
      end_date: '2026-03-29T01:00:00Z',
      type: 'power',
    });
  });

  it('sends the disabled/auto parameter under the configured wire name', async () => {
    await client.getModelOutput('m1', { asOf: T0, outputType: 'clearsky', fill: 'auto' });
    expect(server.requests.at(-1)!.url.split('?')[0]).toBe('/platform/v2/models/m1/output');
    expect(Object.fromEntries(lastQuery())).toEqual({
      as_of: '2026-03-29T00:00:00Z',
      output_type: 'clearsky',
      gap_fill: 'auto',
    });
  });

  it('sends extra comma-separated and model_type', async () => {
    await client.listSiteModels('s1', { modelType: 'ai', extra: ['serving_active', 'other'] });
    expect(Object.fromEntries(lastQuery())).toEqual({ model_type: 'ai', extra: 'serving_active,other' });
  });

  it('sends JSON bodies with their content type', async () => {
    const upload = { data: [{ valid_time: '2026-03-29T00:00Z', value: 500 }] };
    await client.uploadSiteCapacity('s1', upload);
    const request = server.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual(upload);
  });

  it('accepts any 2xx status (201 for a created site)', async () => {
    await expect(client.createSite({ name: 'x', latitude: 1, longitude: 2, type: 'load' })).resolves.toMatchObject({
      site_id: 'new',
    });
  });
});

describe('timestamps in responses', () => {
  it('reads Z, +0000, +00:00, +02:00 and fractional seconds to the same instants', async () => {
    const series = await client.getSiteForecast('s1');
    expect(series.valid_time).toEqual([T0, T0 + 900_000, T0 + 1_800_000, T0 + 2_700_000]);
    const issue = Date.UTC(2026, 2, 28, 21, 0, 0);
    expect(series.update_time).toEqual([issue + 123.456, issue, issue + 500, issue]);
    expect(series.forecast).toEqual([1, 2, null, 4]);
  });

  it('reads as_of with fractional seconds and +00:00', async () => {
    const output = await client.getModelOutput('m1');
    expect(output.as_of).toBe(T0);
  });
});
