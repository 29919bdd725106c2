// Each deterministic metric on a four-point case worked out by hand (SFA's definitions).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toJsonRows } from '../src/accuracy/output/format.js';
import { scorePairsFile } from '../src/accuracy/score.js';
import { BIN_ERROR } from '../src/accuracy/compute/stats.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-metrics-'));
const options = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

async function score(name: string, csv: string, deadbandPct = 0) {
  const file = join(dir, name);
  writeFileSync(file, csv);
  const { rows } = await scorePairsFile(file, 'ending', { ...options, deadbandPct });
  return rows[0];
}

// actual 2 4 6 8, forecast 3 3 6 10 -> errors 1 -1 0 2; reference 2 2 4 6 -> errors 0 -2 -2 -2
// KSI and OVER come from logarithmic bins: within BIN_ERROR · (mean |o| + mean |f|) of SFA's (5 + 5.5 here)
const BOUND = BIN_ERROR * (5 + 5.5);
const CASE = `valid_time,actual,forecast,reference,capacity
2026-03-01T01:00:00Z,2,3,2,10
2026-03-01T02:00:00Z,4,3,2,10
2026-03-01T03:00:00Z,6,6,4,10
2026-03-01T04:00:00Z,8,10,6,10
`;

describe('deterministic metrics', () => {
  it('match the hand-worked values', async () => {
    const row = await score('case.csv', CASE);
    expect(row.n).toBe(4);
    const v = row.values;
    expect(v.mae).toBeCloseTo(1, 12); // (1+1+0+2)/4
    expect(v.mbe).toBeCloseTo(0.5, 12); // (1-1+0+2)/4
    expect(v.rmse).toBeCloseTo(Math.sqrt(1.5), 12); // sqrt((1+1+0+4)/4)
    expect(v.mape).toBeCloseTo(25, 12); // 100 * (1/2 + 1/4 + 0 + 2/8) / 4
    expect(v.nmae).toBeCloseTo(10, 12);
    expect(v.nmbe).toBeCloseTo(5, 12);
    expect(v.nrmse).toBeCloseTo((100 * Math.sqrt(1.5)) / 10, 12);
    expect(v.rmse_ref).toBeCloseTo(Math.sqrt(3), 12);
    expect(v.skill).toBeCloseTo(1 - Math.sqrt(0.5), 12);
    expect(v.r).toBeCloseTo(24 / Math.sqrt(33 * 20), 12); // sum of products of deviations / norms
    expect(v.r2).toBeCloseTo(1 - 6 / 20, 12);
    expect(v.crmse).toBeCloseTo(Math.sqrt(1.25), 12); // population std of the errors
    // ECDF difference 1/4 on [2,3), [3,4) and [8,10): 0.25 + 0.25 + 0.5
    expect(Math.abs(v.ksi - 1)).toBeLessThanOrEqual(BOUND);
    expect(v.over).toBe(0); // 1/4 never exceeds 1.63/sqrt(4)
    expect(Math.abs(v.cpi - (1 + 0 + 2 * Math.sqrt(1.5)) / 4)).toBeLessThanOrEqual(BOUND / 2);
  });

  it('OVER counts the ECDF difference above 1.63/sqrt(n)', async () => {
    // 9 pairs, forecasts all 10 above the actuals: D = 1 on [x, x+10) pieces, Vc = 1.63/3
    const lines = Array.from(
      { length: 9 },
      (_, i) => `2026-03-01T${String(i + 1).padStart(2, '0')}:00:00Z,${i},${i + 100}`,
    );
    const row = await score('over.csv', `valid_time,actual,forecast\n${lines.join('\n')}\n`);
    // every actual lies below every forecast: the ECDFs differ by k/9 ... the integral is 100 (mean shift);
    // within the bins' bound, BIN_ERROR · (mean |o| + mean |f|) = BIN_ERROR · (4 + 104)
    const bound = BIN_ERROR * 108;
    expect(Math.abs(row.values.ksi - 100)).toBeLessThanOrEqual(bound);
    // D = 1 on [8, 100), 8/9..1/9 steps elsewhere; OVER = sum of (D - Vc)+ * width
    const vc = 1.63 / 3;
    let over = (1 - vc) * (100 - 8);
    for (let k = 1; k <= 8; k++) over += 2 * Math.max(k / 9 - vc, 0); // [k-1,k) and [99+k, 100+k)
    expect(Math.abs(row.values.over - over)).toBeLessThanOrEqual(bound);
  });

  it('a deadband counts errors within that share of the actual as zero', async () => {
    // tolerance 30%: 0.6 1.2 1.8 2.4 -> errors 1 0 0 0; reference errors 0 -2 -2 0
    const v = (await score('deadband.csv', CASE, 30)).values;
    expect(v.mae).toBeCloseTo(0.25, 12);
    expect(v.mbe).toBeCloseTo(0.25, 12);
    expect(v.rmse).toBeCloseTo(0.5, 12);
    expect(v.skill).toBeCloseTo(1 - 0.5 / Math.sqrt(2), 12);
    // CPI, r, KSI ignore the deadband
    expect(Math.abs(v.cpi - (1 + 2 * Math.sqrt(1.5)) / 4)).toBeLessThanOrEqual(BOUND / 2);
    expect(v.r).toBeCloseTo(24 / Math.sqrt(660), 12);
  });

  it('MAPE skips (near-)zero actuals and says how many', async () => {
    // floor: 1% of capacity 10 = 0.1; actuals 0 and 0.05 are skipped, 5 vs 4 gives 20%
    const row = await score(
      'mape.csv',
      `valid_time,actual,forecast,capacity
2026-03-01T01:00:00Z,0,1,10
2026-03-01T02:00:00Z,0.05,1,10
2026-03-01T03:00:00Z,5,4,10
`,
    );
    expect(row.values.mape).toBeCloseTo(20, 12);
    expect(row.values.mape_skipped).toBe(2);
    expect(row.values.mae).toBeCloseTo((1 + 0.95 + 1) / 3, 12); // the others still count every pair
  });

  it('skill is 0 when both RMSEs are equal (0/0 too) and -Infinity when only the reference is perfect', async () => {
    const equal = await score(
      'skill0.csv',
      'valid_time,actual,forecast,reference\n2026-03-01T01:00:00Z,1,1,1\n2026-03-01T02:00:00Z,2,2,2\n',
    );
    expect(equal.values.skill).toBe(0);
    const perfectRef = await score(
      'skillinf.csv',
      'valid_time,actual,forecast,reference\n2026-03-01T01:00:00Z,1,2,1\n2026-03-01T02:00:00Z,2,2,2\n',
    );
    expect(perfectRef.values.skill).toBe(-Infinity);
    const json = toJsonRows([perfectRef])[0];
    expect(json.skill).toBe('-Infinity');
    expect(json.r).toBe('NaN'); // a constant forecast has no correlation
  });

  it('a pair missing its actual or reference is dropped and counted', async () => {
    const row = await score(
      'drops.csv',
      `valid_time,actual,forecast,reference
2026-03-01T01:00:00Z,1,2,1
2026-03-01T02:00:00Z,,2,2
2026-03-01T03:00:00Z,3,2,
2026-03-01T04:00:00Z,3,,3
`,
    );
    expect(row.n).toBe(1);
    expect(row.values).toMatchObject({ dropped: 3, dropped_actual: 1, dropped_reference: 1, dropped_forecast: 1 });
    expect(row.values.mae).toBe(1);
  });
});
