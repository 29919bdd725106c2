// Alignment over a small warehouse: 15-minute actuals resampled into an hourly forecast, an
// interval with too many missing sub-points dropped, nMAE against a capacity that changes midway.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scoreWarehouse } from '../src/accuracy/score.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { addActuals, addCapacity, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';

let wh: Warehouse;
const base = {
  groups: ['total' as const, 'hour' as const],
  tz: 'UTC',
  leadBuckets: [6 * 3_600_000],
  deadbandPct: 0,
  mapeMinActualPct: 1,
  forecastLabel: 'ending' as const,
  actualLabel: 'ending' as const,
  maxMissingPct: 10,
};

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-align');
  await addSite(wh, 'S1', 'solar', 100);
  // 100 kW until 02:00, 200 kW from then on
  await addCapacity(wh, 'S1', [
    [null, '2026-03-02T02:00:00Z', 100],
    ['2026-03-02T02:00:00Z', null, 200],
  ]);
  // hourly, interval-ending forecast issued the evening before (lead 2-5 h: the reference is the day before)
  await addForecast(wh, 'S1', '2026-03-01T23:00:00Z', [
    ['2026-03-02T01:00:00Z', 10],
    ['2026-03-02T02:00:00Z', 20],
    ['2026-03-02T03:00:00Z', 34],
    ['2026-03-02T04:00:00Z', 40],
  ]);
  // yesterday: a flat 5 kW, the persistence reference
  await addActuals(wh, 'S1', '2026-03-01T00:15:00Z', 15, Array(16).fill(5));
  // 15-minute interval-ending actuals: (00:00,01:00] mean 11; (01:00,02:00] one of four missing;
  // (02:00,03:00] 30; (03:00,04:00] one value null
  await addActuals(wh, 'S1', '2026-03-02T00:15:00Z', 15, [8, 10, 12, 14, 20, 20, 20]);
  await addActuals(wh, 'S1', '2026-03-02T02:15:00Z', 15, [30, 30, 30, 30, 40, 40, 40, null]);
});
afterAll(async () => wh.close());

describe('warehouse alignment', () => {
  it('averages 15-minute actuals into each hourly forecast interval and drops intervals missing over 10%', async () => {
    const { rows } = await scoreWarehouse(wh, base);
    const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
    expect(total.n).toBe(2);
    expect(total.values.dropped_actual).toBe(2);
    // kept: 01:00 (10 vs mean 11) and 03:00 (34 vs 30)
    expect(total.values.mae).toBeCloseTo((1 + 4) / 2, 12);
    expect(total.values.mbe).toBeCloseTo((-1 + 4) / 2, 12);
  });

  it('keeps an interval missing one of four sub-points when 25% may be missing, averaging the rest', async () => {
    const { rows } = await scoreWarehouse(wh, { ...base, maxMissingPct: 25 });
    const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
    expect(total.n).toBe(4);
    // 02:00: 20 vs 20; 04:00: 40 vs 40
    expect(total.values.mae).toBeCloseTo((1 + 0 + 4 + 0) / 4, 12);
  });

  it('normalises by the capacity at each valid time: the mean of the normalised errors', async () => {
    const { rows } = await scoreWarehouse(wh, base);
    const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
    // 01:00 ending lies in the 100 kW segment (1%), 03:00 ending in the 200 kW one (2%)
    expect(total.values.nmae).toBeCloseTo((1 + 2) / 2, 12);
    expect(total.values.nmbe).toBeCloseTo((-1 + 2) / 2, 12);
    expect(total.values.nrmse).toBeCloseTo(Math.sqrt((1 + 4) / 2), 12);
  });

  it('groups an interval-ending value into the hour it closes', async () => {
    const { rows } = await scoreWarehouse(wh, base);
    const hours = rows.filter((r) => r.subject === 'forecast' && r.group === 'hour' && r.n > 0).map((r) => r.key);
    expect(hours).toEqual(['00', '02']); // 01:00 and 03:00 ending
  });

  it('splits the site forecast by serving model and any subject by site', async () => {
    const { rows } = await scoreWarehouse(wh, { ...base, groups: ['model', 'site'] });
    expect(rows.map((r) => [r.subject, r.group, r.key, r.n])).toEqual([
      ['forecast', 'model', 'gbm', 2],
      ['forecast', 'site', 'S1', 2],
    ]);
  });

  it('scores against the day-before persistence reference', async () => {
    const { rows } = await scoreWarehouse(wh, base);
    const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
    // reference 5 at both: errors 11-5=6 and 30-5=25
    expect(total.values.rmse_ref).toBeCloseTo(Math.sqrt((36 + 625) / 2), 12);
    expect(total.values.skill).toBeCloseTo(1 - Math.sqrt(17 / 2) / Math.sqrt(661 / 2), 12);
  });
});

describe('capacity timeline with a gap and an overlap', () => {
  it('takes the latest segment begun at each time while it lasts, else the nameplate', async () => {
    const other = await openTestWarehouse('accuracy-align-capacity');
    try {
      await addSite(other, 'S2', 'solar', 50);
      // 100 kW until 01:30; nothing from then to 02:15; 400 kW from 02:15 to 04:00, overtaken by 200 kW from 02:30
      await addCapacity(other, 'S2', [
        [null, '2026-03-02T01:30:00Z', 100],
        ['2026-03-02T02:15:00Z', '2026-03-02T04:00:00Z', 400],
        ['2026-03-02T02:30:00Z', null, 200],
      ]);
      await addForecast(other, 'S2', '2026-03-01T23:00:00Z', [
        ['2026-03-02T01:00:00Z', 20],
        ['2026-03-02T02:00:00Z', 20],
        ['2026-03-02T03:00:00Z', 20],
      ]);
      await addActuals(other, 'S2', '2026-03-01T00:15:00Z', 15, Array(12).fill(5));
      await addActuals(other, 'S2', '2026-03-02T00:15:00Z', 15, Array(12).fill(10));
      const { rows } = await scoreWarehouse(other, base);
      const total = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
      expect(total.n).toBe(3);
      // an error of 10 kW against 100 kW (01:00 ending), the 50 kW nameplate (02:00) and 200 kW (03:00)
      expect(total.values.nmae).toBeCloseTo((10 + 20 + 5) / 3, 12);
    } finally {
      await other.close();
    }
  });
});
