// The interval lengths read from the data where no option or site setting gives them: the most
// common step of each forecast's latest vintage, and of the actuals' last days.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseSites } from '../src/accuracy/input/align.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { addActuals, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';

let wh: Warehouse;
const options = { forecastLabel: 'ending' as const, actualLabel: 'ending' as const, maxMissingPct: 10 };

/** `count` points every `minutes` from `first`, as addForecast takes them. */
function points(first: string, minutes: number, count: number): [string, number][] {
  return Array.from({ length: count }, (_, i) => [new Date(Date.parse(first) + i * minutes * 60_000).toISOString(), i]);
}

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-steps');
  await addSite(wh, 'S1', 'solar', 100);
  // Early vintages every 15 minutes, more points than the latest vintage's hourly ones.
  await addForecast(wh, 'S1', '2026-03-01T00:00:00Z', points('2026-03-01T01:00:00Z', 15, 40));
  await addForecast(wh, 'S1', '2026-03-01T06:00:00Z', points('2026-03-01T07:00:00Z', 15, 40));
  await addForecast(wh, 'S1', '2026-03-02T00:00:00Z', points('2026-03-02T01:00:00Z', 60, 24));
  // Actuals every 5 minutes a week ago, every 15 minutes in the last days.
  await addActuals(wh, 'S1', '2026-02-20T00:05:00Z', 5, Array(500).fill(1));
  await addActuals(wh, 'S1', '2026-02-28T00:15:00Z', 15, Array(200).fill(1));
});
afterAll(async () => wh.close());

describe('interval lengths read from the data', () => {
  it("takes the forecast's step from its latest vintage and the actuals' from their last days", async () => {
    await chooseSites(wh, options);
    const [site] = await wh.all<{ f_len: bigint; a_len: bigint }>('SELECT f_len, a_len FROM acc_site');
    expect(Number(site.f_len)).toBe(3_600_000_000);
    expect(Number(site.a_len)).toBe(900_000_000);
  });
});
