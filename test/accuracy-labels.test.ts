// Interval labels as the service's guides show them (interval-beginning, the default of
// service.interval_label): 15-minute actuals averaged into hourly forecasts by the interval each
// value begins, and hours and dates grouped by where each interval begins, across the night
// Europe/Stockholm springs forward (2026-03-29, 02:00 local skipped).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scoreWarehouse, settingsFromConfig } from '../src/accuracy/score.js';
import { Config } from '../src/config.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { addActuals, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';

let wh: Warehouse;
const defaults = settingsFromConfig(
  Config.parse({}).accuracy,
  Config.parse({}).service.interval_label,
  Config.parse({}).capacity.dir,
);
const base = {
  ...defaults,
  groups: ['total' as const, 'hour' as const, 'date' as const],
  tz: 'Europe/Stockholm',
  deadbandPct: 0,
};

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-labels');
  await addSite(wh, 'S1', 'load', 100);
  // Hourly interval-beginning forecast: 23:00 UTC (00:00 local, the 29th) to 02:00 UTC (04:00 local, summer time).
  await addForecast(wh, 'S1', '2026-03-28T12:00:00Z', [
    ['2026-03-28T23:00:00Z', 10],
    ['2026-03-29T00:00:00Z', 20],
    ['2026-03-29T01:00:00Z', 30],
    ['2026-03-29T02:00:00Z', 40],
  ]);
  // The week before, for the persistence reference of a load site.
  await addActuals(wh, 'S1', '2026-03-21T23:00:00Z', 15, Array(16).fill(5));
  // 15-minute interval-beginning actuals from 23:00 UTC: each hour's four values average to forecast + 1.
  await addActuals(wh, 'S1', '2026-03-28T23:00:00Z', 15, [
    9,
    11,
    11,
    13, // [23:00, 00:00) mean 11
    21,
    21,
    21,
    21, // [00:00, 01:00) mean 21
    30,
    32,
    30,
    32, // [01:00, 02:00) mean 31
    41,
    41,
    41,
    41, // [02:00, 03:00) mean 41
  ]);
});
afterAll(async () => wh.close());

describe('interval-beginning labels (the default)', () => {
  it('are the default of service.interval_label, for forecasts and actuals', () => {
    expect([defaults.forecastLabel, defaults.actualLabel]).toEqual(['beginning', 'beginning']);
  });

  it('average the four quarter hours that begin in each forecast hour', async () => {
    const { rows } = await scoreWarehouse(wh, base);
    const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
    expect(total.n).toBe(4);
    expect(total.values.mbe).toBeCloseTo(-1, 12);
    expect(total.values.mae).toBeCloseTo(1, 12);
  });

  it('group each hour by the local hour it begins in, across the spring-forward night', async () => {
    const { rows } = await scoreWarehouse(wh, base);
    const hours = rows.filter((r) => r.subject === 'forecast' && r.group === 'hour' && r.n > 0).map((r) => r.key);
    expect(hours).toEqual(['00', '01', '03', '04']); // 02 local never happens on 2026-03-29
    const dates = rows
      .filter((r) => r.subject === 'forecast' && r.group === 'date' && r.n > 0)
      .map((r) => [r.key, r.n]);
    expect(dates).toEqual([['2026-03-29', 4]]); // 23:00 UTC on the 28th begins the 29th in Stockholm
  });

  it('pair other quarter hours and hours when read as interval-ending', async () => {
    const { rows } = await scoreWarehouse(wh, { ...base, forecastLabel: 'ending', actualLabel: 'ending' });
    // Read as ending, 23:00 UTC closes (22:00, 23:00]: only one of its quarter hours is there, so it
    // is dropped; every other hour takes the quarter hours of the hour before and groups an hour earlier.
    const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
    expect(total.n).toBe(3);
    expect(total.values.mbe).not.toBeCloseTo(-1, 3);
    const hours = rows.filter((r) => r.subject === 'forecast' && r.group === 'hour' && r.n > 0).map((r) => r.key);
    expect(hours).toEqual(['00', '01', '03']);
  });
});
