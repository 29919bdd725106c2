// Asking for tz=Europe/Stockholm changes only how instants are written (+01:00 / +02:00), never
// which instants come back: on both DST days of 2026 the series equal the UTC answer exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import { startEmulator, type Emulator } from '../src/emulator/server.js';
import { parseInstant } from '../src/time.js';
import { scriptedServer } from './client-support.js';

const ZONE = 'Europe/Stockholm';

const DST_DAYS = [
  // The local day 2026-03-29 has 23 hours (clocks go forward at 02:00 CET).
  { name: 'spring forward', start: '2026-03-29T00:00:00+01:00', end: '2026-03-30T00:00:00+02:00', hours: 23 },
  // The local day 2026-10-25 has 25 hours (clocks go back at 03:00 CEST).
  { name: 'fall back', start: '2026-10-25T00:00:00+02:00', end: '2026-10-26T00:00:00+01:00', hours: 25 },
];

describe.each(DST_DAYS)('the DST day ($name) in $start', ({ start: startText, end: endText, hours }) => {
  const start = parseInstant(startText);
  const end = parseInstant(endText);
  // The emulator's clock: the evening after, so that the day has actuals and past forecasts.
  const now = end + 18 * 3_600_000;
  let emu: Emulator;
  let client: ServiceClient;
  let siteId: string;

  beforeAll(async () => {
    emu = await startEmulator({ apiKeys: ['k1'], sites: 3, seed: 2, now: () => now });
    client = new ServiceClient({ baseUrl: emu.url, apiKey: 'k1' });
    siteId = (await client.listSites())[0].id;
  });

  afterAll(async () => {
    await client.close();
    await emu.close();
  });

  it(`actuals: ${hours} hours of quarter hours, identical to the UTC answer`, async () => {
    const utc = await client.getSiteActuals(siteId, { start, end });
    const local = await client.getSiteActuals(siteId, { start, end, tz: ZONE });
    // The day's quarter hours, each labelled by its beginning (the first at local 00:00), and the
    // next day's 00:00: a range includes both of its ends.
    expect(utc.valid_time).toHaveLength(hours * 4 + 1);
    expect(utc.valid_time.every((t, i) => t === start + i * 900_000)).toBe(true);
    expect(utc.valid_time.at(-1)).toBe(end);
    expect(local).toEqual(utc);
  });

  it('site forecast as of the day before, identical to the UTC answer', async () => {
    const asOf = start - 6 * 3_600_000;
    const utc = await client.getSiteForecast(siteId, { start, end, asOf });
    const local = await client.getSiteForecast(siteId, { start, end, asOf, tz: ZONE });
    expect(utc.valid_time.length).toBeGreaterThan(0);
    expect(local).toEqual(utc);
    expect(local.valid_time.every((t) => t >= start && t <= end)).toBe(true);
    expect(local.valid_time[0]).toBe(start);
  });

  it('model output, identical to the UTC answer', async () => {
    const [model] = await client.listSiteModels(siteId, { modelType: 'physical' });
    const asOf = start - 3_600_000;
    const utc = await client.getModelOutput(model.id, { start, end, asOf });
    const local = await client.getModelOutput(model.id, { start, end, asOf, tz: ZONE });
    expect(utc.valid_time.length).toBeGreaterThan(0);
    expect(local).toEqual(utc);
  });
});

describe('what the service writes in a zone', () => {
  it('the offsets on the wire change across the DST change while the instants stay 15 minutes apart', async () => {
    const now = Date.UTC(2026, 2, 30, 18);
    const emu = await startEmulator({ apiKeys: ['k1'], sites: 3, seed: 2, now: () => now });
    // Read the raw text once through a pass-through server, to see the wire form itself.
    const texts: string[] = [];
    const proxy = await scriptedServer(async (request, _n, res) => {
      const upstream = await fetch(emu.url + request.url, {
        headers: { authorization: String(request.headers.authorization) },
      });
      const text = await upstream.text();
      texts.push(text);
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(text);
    });
    const client = new ServiceClient({ baseUrl: proxy.url, apiKey: 'k1' });
    try {
      const [site] = await client.listSites();
      const start = parseInstant('2026-03-29T01:00:00+01:00');
      const actuals = await client.getSiteActuals(site.id, { start, end: start + 2 * 3_600_000, tz: ZONE });
      const wire = JSON.parse(texts.at(-1)!) as { valid_time: string[] };
      // Values are labelled by the beginning of their interval: the first is 01:00 local, the start;
      // 01:45 CET is followed by 03:00 CEST.
      expect(wire.valid_time[0]).toBe('2026-03-29T01:00:00+01:00');
      expect(wire.valid_time.slice(3, 5)).toEqual(['2026-03-29T01:45:00+01:00', '2026-03-29T03:00:00+02:00']);
      expect(actuals.valid_time.every((t, i) => t === start + i * 900_000)).toBe(true);
    } finally {
      await client.close();
      await proxy.close();
      await emu.close();
    }
  });
});
