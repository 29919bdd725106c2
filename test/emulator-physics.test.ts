// The emulator's data is plausible physics, the same for a seed: the sun for solar (zero at
// night, never above capacity, trackers unlike fixed panels), a power curve for wind, and the
// working day for load.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { startEmulator } from '../src/emulator/server.js';
import { api, NOON, sitesByKind, startTestEmulator, type Api } from './emulator-support.js';

let emulator: Emulator;
let k1: Api;
let kinds: Awaited<ReturnType<typeof sitesByKind>>;

/** Eight whole UTC days: the quarter hours beginning 2026-03-21T00:00 to 2026-03-28T23:45, both included. */
const WEEK = { start_date: '2026-03-21T00:00Z', end_date: '2026-03-28T23:45Z' };

beforeAll(async () => {
  emulator = await startTestEmulator();
  k1 = api(emulator, 'k1');
  kinds = await sitesByKind(k1);
});
afterAll(() => emulator.close());

async function actuals(siteId: string, query = WEEK): Promise<{ t: number; value: number | null }[]> {
  const { body } = await k1.get(`/sites/${siteId}/actual`, query);
  return body.valid_time.map((time: string, i: number) => ({ t: Date.parse(time), value: body.value[i] }));
}

/** Local mean solar hour at a longitude, for the middle of the interval that begins at `t`. */
function solarHour(t: number, longitude: number): number {
  const hours = (((t + 450_000) % 86_400_000) / 3_600_000 + longitude / 15) % 24;
  return hours < 0 ? hours + 24 : hours;
}

function capacityOf(site: any): number {
  return site.capacity_kw_array[0].value;
}

describe('solar', () => {
  it('is zero at night and never above capacity, in actuals and forecasts', async () => {
    for (const site of kinds.sites.filter((s) => s.type === 'solar')) {
      const points = await actuals(site.id);
      expect(points).toHaveLength(8 * 96);
      const night = points.filter((p) => {
        const h = solarHour(p.t, site.longitude);
        return h > 21 || h < 3;
      });
      expect(night.length).toBeGreaterThan(100);
      expect(night.every((p) => p.value === 0 || p.value === null)).toBe(true);
      const values = points.map((p) => p.value ?? 0);
      expect(Math.max(...values)).toBeLessThanOrEqual(capacityOf(site));
      expect(Math.max(...values)).toBeGreaterThan(0.2 * capacityOf(site));
      const forecast = (await k1.get(`/sites/${site.id}/forecast`)).body;
      expect(Math.max(...forecast.forecast)).toBeLessThanOrEqual(capacityOf(site));
      expect(Math.min(...forecast.forecast)).toBe(0);
    }
  });

  it('gives a single-axis tracker more energy and a flatter day than a fixed panel at the same place', async () => {
    const place = { latitude: 37.39, longitude: -5.98, type: 'solar' };
    const fixed = (
      await k1.send('POST', '/sites', {
        ...place,
        name: 'fixed',
        assets: [{ mount: 'fixed', capacity: 1000, tilt: 30, azimuth: 180 }],
      })
    ).body.site_id;
    const tracker = (
      await k1.send('POST', '/sites', {
        ...place,
        name: 'tracker',
        assets: [{ mount: 'single_axis_tracking', capacity: 1000 }],
      })
    ).body.site_id;
    const day = { start_date: '2026-03-20T00:00Z', end_date: '2026-03-27T00:00Z' };
    const [f, t] = [await actuals(fixed, day), await actuals(tracker, day)];
    const energy = (points: typeof f) => points.reduce((sum, p) => sum + (p.value ?? 0), 0);
    expect(energy(t)).toBeGreaterThan(energy(f) * 1.05);
    // At 08:00 local solar time the tracker faces the sun; a south-facing panel sees it at a slant.
    const morning = (points: typeof f) =>
      energy(points.filter((p) => Math.abs(solarHour(p.t, place.longitude) - 8.1) < 0.2));
    expect(morning(t)).toBeGreaterThan(morning(f) * 1.25);
  });
});

describe('wind', () => {
  it('follows a power curve of a varying wind: between zero and capacity, reaching both ends of the range', async () => {
    const points = await actuals(kinds.wind.id);
    const values = points.map((p) => p.value).filter((v): v is number => v !== null);
    const capacity = capacityOf(kinds.wind);
    expect(Math.max(...values)).toBeLessThanOrEqual(capacity);
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(new Set(values.map((v) => Math.round((v / capacity) * 10))).size).toBeGreaterThanOrEqual(5);
    const forecast = (await k1.get(`/sites/${kinds.wind.id}/forecast`)).body;
    expect(Math.max(...forecast.forecast)).toBeLessThanOrEqual(capacity);
  });
});

describe('load', () => {
  it('has a daily cycle in local time (evening above night) and stays under its capacity', async () => {
    const points = await actuals(kinds.load.id);
    const mean = (from: number, to: number) => {
      const chosen = points.filter((p) => {
        const h = solarHour(p.t, kinds.load.longitude);
        return h >= from && h < to && p.value !== null;
      });
      return chosen.reduce((sum, p) => sum + (p.value as number), 0) / chosen.length;
    };
    expect(mean(18, 20)).toBeGreaterThan(mean(2, 4) * 1.4);
    expect(Math.max(...points.map((p) => p.value ?? 0))).toBeLessThanOrEqual(capacityOf(kinds.load));
  });
});

describe('determinism', () => {
  it('serves the same data for the same seed and clock, and other data for another seed', async () => {
    const read = async (seed: number) => {
      const other = await startEmulator({ apiKeys: ['k1'], sites: 6, seed, now: () => NOON });
      const client = api(other, 'k1');
      const { sites } = await sitesByKind(client);
      const body = (await client.get(`/sites/${sites[0].id}/actual`, WEEK)).body;
      const forecast = (await client.get(`/sites/${sites[1].id}/forecast`)).body;
      await other.close();
      return { body, forecast };
    };
    const first = await read(7);
    expect(await read(7)).toEqual(first);
    expect((await read(8)).body.value).not.toEqual(first.body.value);
  });

  it('leaves a few seeded gaps (null) in the actuals', async () => {
    let nulls = 0;
    for (const site of kinds.sites) {
      nulls += (await actuals(site.id, { start_date: '2026-03-15T00:00Z', end_date: '2026-03-29T00:00Z' })).filter(
        (p) => p.value === null,
      ).length;
    }
    expect(nulls).toBeGreaterThan(0);
    expect(nulls).toBeLessThan(6 * 14 * 96 * 0.05);
  });
});
