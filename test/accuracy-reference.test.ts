// The reference forecasts: day-ahead persistence for solar and wind, week-ahead for load, always
// the latest same time of day (of week) already measured when the forecast was issued.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alignWarehouse, dropAlignment } from '../src/accuracy/input/align.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { addActuals, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';

let wh: Warehouse;
// two forecast points a day apart: the hourly interval is given, not inferred from them
const options = {
  forecastLabel: 'ending' as const,
  actualLabel: 'ending' as const,
  maxMissingPct: 10,
  forecastIntervalMs: 3_600_000,
};
const DAY_VALUES = (day: number) => Array.from({ length: 24 }, (_, h) => day * 100 + h + 1); // value at hour h+1 ending

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-reference');
  await addSite(wh, 'SOL', 'solar', 100);
  await addSite(wh, 'LOAD', 'load', 100);
  // hourly actuals for 1..10 March: day d, hour-ending h+1 holds d*100 + h + 1
  for (let day = 1; day <= 10; day++) {
    const first = `2026-03-${String(day).padStart(2, '0')}T01:00:00Z`;
    await addActuals(wh, 'SOL', first, 60, DAY_VALUES(day));
    await addActuals(wh, 'LOAD', first, 60, DAY_VALUES(day));
  }
  // issued 9 March 06:00: 9 March 12:00 (lead 6 h) and 10 March 12:00 (lead 30 h)
  for (const site of ['SOL', 'LOAD']) {
    await addForecast(wh, site, '2026-03-09T06:00:00Z', [
      ['2026-03-09T12:00:00Z', 1],
      ['2026-03-10T12:00:00Z', 1],
    ]);
  }
});
afterAll(async () => wh.close());

async function references(site: string) {
  await alignWarehouse(wh, { ...options, sites: [site] });
  const rows = await wh.all<{ valid: string; reference: number }>(
    `SELECT strftime(valid_time, '%d %H') AS valid, reference FROM acc_pairs ORDER BY valid_time`,
  );
  await dropAlignment(wh);
  return rows;
}

describe('reference forecasts', () => {
  it('solar: yesterday at the same time, or the day before when yesterday was not yet measured at issue', async () => {
    expect(await references('SOL')).toEqual([
      { valid: '09 12', reference: 812 }, // 8 March 12:00 (hour-ending 12 of day 8)
      { valid: '10 12', reference: 812 }, // 9 March 12:00 was after the issue time: 8 March again
    ]);
  });

  it('load: the same time a week earlier', async () => {
    expect(await references('LOAD')).toEqual([
      { valid: '09 12', reference: 212 }, // 2 March 12:00
      { valid: '10 12', reference: 312 }, // 3 March 12:00
    ]);
  });
});
