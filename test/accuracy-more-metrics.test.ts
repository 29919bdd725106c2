// The reference's remaining metrics (issue 13, part 3), each against hand-worked values.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scorePairsFile } from '../src/accuracy/score.js';
import { BIN_ERROR } from '../src/accuracy/compute/stats.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-more-'));
const options = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

async function total(name: string, actual: number[], forecast: number[]) {
  const lines = actual.map((o, i) => `2026-03-01T${String(i + 1).padStart(2, '0')}:00:00Z,${o},${forecast[i]}`);
  const file = join(dir, name);
  writeFileSync(file, `valid_time,actual,forecast\n${lines.join('\n')}\n`);
  return (await scorePairsFile(file, 'ending', options)).rows[0].values;
}

describe('relative Euclidean distance', () => {
  it('combines the mean ratio, the spread ratio and the correlation (Wu et al. 2012, as SFA)', async () => {
    // means 0.5 and 1.5: ratio 3; spreads equal; r 1 -> sqrt((3-1)²) = 2
    expect((await total('shift.csv', [0, 1], [1, 2])).red).toBeCloseTo(2, 12);
    // means 0 and 0: ratio 1; spreads 2 and 3: ratio 1.5; r -1 -> sqrt(0.25 + 4)
    expect((await total('mirror.csv', [-2, 2], [3, -3])).red).toBeCloseTo(Math.sqrt(4.25), 12);
    // the actuals' mean is 0 and the forecast's is not: infinitely far
    expect((await total('zero-mean.csv', [-1, 1], [2, 3])).red).toBe(Infinity);
    // constant actuals: no correlation, no distance
    expect((await total('constant.csv', [1, 1], [2, 3])).red).toBeNaN();
  });
});

describe('season and year groups', () => {
  it('put December with the next January and February (DJF), as SFA does, and split years', async () => {
    const file = join(dir, 'seasons.csv');
    writeFileSync(
      file,
      `valid_time,actual,forecast
2025-12-15T12:00:00Z,1,2
2026-01-15T12:00:00Z,1,4
2026-04-15T12:00:00Z,1,1
2026-07-15T12:00:00Z,1,5
2026-10-15T12:00:00Z,1,7
`,
    );
    const { rows } = await scorePairsFile(file, 'ending', { ...options, groups: ['season', 'year'] });
    expect(rows.map((r) => [r.group, r.key, r.n, r.values.mae])).toEqual([
      ['season', 'DJF', 2, 2],
      ['season', 'MAM', 1, 0],
      ['season', 'JJA', 1, 4],
      ['season', 'SON', 1, 6],
      ['year', '2025', 1, 1],
      ['year', '2026', 4, 3.25],
    ]);
  });
});

describe('summary statistics per group', () => {
  // actuals 1, 3, 8, 4 and forecasts 2, 1, 4, 9, as SFA's metrics/summary.py (numpy's nanmean,
  // nanmin, nanmax, nanmedian and nanstd, the population standard deviation)
  const actual = [1, 3, 8, 4];
  const forecast = [2, 1, 4, 9];
  const expected = (offset: number) => ({
    actual_mean: offset + 4,
    actual_min: offset + 1,
    actual_max: offset + 8,
    actual_median: offset + 3.5,
    actual_std: Math.sqrt(26 / 4),
    forecast_mean: offset + 4,
    forecast_min: offset + 1,
    forecast_max: offset + 9,
    forecast_median: offset + 3,
    forecast_std: Math.sqrt(38 / 4),
  });

  for (const offset of [0, 1e9]) {
    it(`mean, min, max, median and std of the scored actuals and forecasts (offset ${offset})`, async () => {
      const values = await total(
        `summary-${offset}.csv`,
        actual.map((v) => v + offset),
        forecast.map((v) => v + offset),
      );
      // r and RED read the same standard deviations: centred first, they keep their digits at 1e9
      const r = 2.25 / Math.sqrt(6.5 * 9.5);
      const red = Math.sqrt((Math.sqrt(9.5 / 6.5) - 1) ** 2 + (r - 1) ** 2);
      for (const [field, value] of Object.entries({ ...expected(offset), r, red })) {
        // medians come from the logarithmic bins: within BIN_ERROR of the middle values
        const tolerance = field.endsWith('_median') ? BIN_ERROR * Math.abs(value) : 1e-9 * Math.abs(value);
        expect(Math.abs(values[field] - value), field).toBeLessThanOrEqual(tolerance);
      }
    });
  }

  it('are NaN in a group whose pairs were all dropped, and only of actuals for a quantile set', async () => {
    const file = join(dir, 'summary-empty.csv');
    writeFileSync(
      file,
      'valid_time,actual,forecast,q10,q90\n2026-03-01T01:00:00Z,1,2,0,3\n2026-03-01T02:00:00Z,,2,0,3\n',
    );
    const { rows } = await scorePairsFile(file, 'ending', { ...options, groups: ['hour'] });
    const empty = rows.find((r) => r.key === '01')!;
    expect(empty.n).toBe(0);
    for (const field of Object.keys(expected(0))) expect(empty.values[field], field).toBeNaN();
    const quantiles = join(dir, 'summary-quantiles.csv');
    writeFileSync(quantiles, 'valid_time,actual,q10,q90\n2026-03-01T01:00:00Z,1,0,3\n2026-03-01T02:00:00Z,5,0,3\n');
    const [set] = (await scorePairsFile(quantiles, 'ending', options)).rows;
    expect(Math.abs(set.values.actual_median - 3)).toBeLessThanOrEqual(3 * BIN_ERROR);
    expect(set.values.forecast_mean).toBeUndefined();
  });
});
