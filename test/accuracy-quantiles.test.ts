// Quantile forecasts: pinball loss per level, CRPS as SFA computes it (trapezoids over the
// quantiles, with the actual's side nodes at probability 0 and 1; and its 2 x mean pinball
// approximation), interval coverage.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scorePairsFile, scoreWarehouse } from '../src/accuracy/score.js';
import { addActuals, addModel, addOutput, addSite, openTestWarehouse } from './accuracy-fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-quantiles-'));
const options = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

async function score(name: string, csv: string) {
  const file = join(dir, name);
  writeFileSync(file, csv);
  return (await scorePairsFile(file, 'ending', options)).rows[0];
}

// quantiles 5 (25%) and 15 (75%); actuals inside (8), above (20) and below (0) the range
const CASE = `valid_time,actual,q25,q75
2026-03-01T01:00:00Z,8,5,15
2026-03-01T02:00:00Z,20,5,15
2026-03-01T03:00:00Z,0,5,15
`;

describe('quantile metrics', () => {
  it('pinball loss per level, CRPS, the pinball approximation and coverage match the hand-worked values', async () => {
    const v = (await score('case.csv', CASE)).values;
    expect(v.pinball_q25).toBeCloseTo((2.25 + 11.25 + 1.25) / 3, 12); // (q - o)(0.25 - 1{o > q})
    expect(v.pinball_q75).toBeCloseTo((5.25 + 1.25 + 11.25) / 3, 12);
    // SFA's nodes x, probabilities f and indicators 1{x >= o} (the last 0 when o is beyond q75):
    //   actual 8:  x 5 5 15 15, f 0 .25 .75 1, 1{} 0 0 1 1: 10 (.25² + .25²)/2 = 0.625
    //   actual 20: x 5 5 15 20, 1{} 0 0 0 0: 10 (.25² + .75²)/2 + 5 (.75² + 1)/2 = 3.125 + 3.90625
    //   actual 0:  x 0 5 15 15, 1{} 1 1 1 1: 5 (1 + .75²)/2 + 10 (.75² + .25²)/2 = 3.90625 + 3.125
    expect(v.crps).toBeCloseTo((0.625 + 7.03125 + 7.03125) / 3, 12);
    expect(v.crps_pinball).toBeCloseTo((2 * (v.pinball_q25 + v.pinball_q75)) / 2, 12); // 2 x mean over levels
    expect(v.coverage).toBeCloseTo(100 / 3, 12);
    expect(v.coverage_nominal).toBeCloseTo(50, 12);
  });

  it('CRPS of equal quantiles and of crossing quantiles, as SFA (trapezoids, quantiles in level order)', async () => {
    const equal = await score(
      'equal.csv',
      'valid_time,actual,q10,q90\n2026-03-01T01:00:00Z,8,5,5\n2026-03-01T02:00:00Z,2,5,5\n',
    );
    // actual 8: x 5 5 5 8, f 0 .1 .9 1, 1{} 0 0 0 0 → 3 (.9² + 1)/2; actual 2: x 2 5 5 5, 1{} 1 1 1 1 → 3 (1 + .9²)/2
    expect(equal.values.crps).toBeCloseTo(2.715, 12);
    // actual 8 under q25 = 15, q75 = 5: x 8 15 5 8, f 0 .25 .75 1, 1{} 1 1 0 0 (5 < 8: the last is 0):
    //   7 (1 + .75²)/2 − 10 (.75² + .75²)/2 + 3 (.75² + 1)/2 = 5.46875 − 5.625 + 2.34375
    const crossing = await score('crossing.csv', 'valid_time,actual,q25,q75\n2026-03-01T01:00:00Z,8,15,5\n');
    expect(crossing.values.crps).toBeCloseTo(2.1875, 12);
  });

  it('scores the quantile models of a site as one set and drops a time where a level is missing', async () => {
    const wh = await openTestWarehouse('accuracy-quantiles');
    try {
      await addSite(wh, 'S1', 'solar', 100);
      await addModel(wh, 'S1', 'm25', 'quantile_p25', 0.25);
      await addModel(wh, 'S1', 'm75', 'quantile_p75', 0.75);
      const asOf = '2026-03-02T00:00:00Z';
      await addOutput(wh, 'S1', 'm25', 'quantile_p25', asOf, [
        ['2026-03-02T01:00:00Z', 5],
        ['2026-03-02T02:00:00Z', 5],
        ['2026-03-02T03:00:00Z', 5],
      ]);
      await addOutput(wh, 'S1', 'm75', 'quantile_p75', asOf, [
        ['2026-03-02T01:00:00Z', 15],
        ['2026-03-02T02:00:00Z', 15],
      ]);
      await addActuals(wh, 'S1', '2026-03-01T01:00:00Z', 60, Array(24).fill(1)); // the reference day
      await addActuals(wh, 'S1', '2026-03-02T01:00:00Z', 60, [8, 20, 0]);
      const { rows } = await scoreWarehouse(wh, {
        ...options,
        forecastLabel: 'ending',
        actualLabel: 'ending',
        maxMissingPct: 10,
      });
      const set = rows.find((r) => r.subject === 'quantiles' && r.group === 'total')!;
      expect(set.n).toBe(2);
      expect(set.values.dropped_quantiles).toBe(1);
      expect(set.values.pinball_q25).toBeCloseTo((2.25 + 11.25) / 2, 12);
      expect(set.values.coverage).toBeCloseTo(50, 12);
      expect(set.values.mae).toBeUndefined(); // a quantile set has no single-value forecast
      // against day-ahead persistence (1): pinball 6.75 against (5.25 + 14.25) / 2 at 25%; CRPS against |1 - o|
      expect(set.values.qss_q25).toBeCloseTo(1 - 6.75 / 9.75, 12);
      expect(set.values.crps_ref).toBeCloseTo((7 + 19) / 2, 12);
      expect(set.values.bs_q75).toBeCloseTo((0.25 ** 2 + 0.75 ** 2) / 2, 12); // 8 at or below 15, 20 not
    } finally {
      await wh.close();
    }
  });
});
