// Brier score and its decomposition per quantile level, the quantile skill score and the CRPS
// skill score against the reference (issue 13, part 3), as SFA's metrics/probabilistic.py
// scores a constant-percentile forecast, against hand-worked values.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scorePairsFile } from '../src/accuracy/score.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-probabilistic-'));
const options = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

function csv(name: string, header: string, rows: (number | string)[][]): string {
  const file = join(dir, name);
  const time = (i: number) => new Date(Date.UTC(2026, 2, 1) + (i + 1) * 3_600_000).toISOString();
  writeFileSync(file, `valid_time,${header}\n${rows.map((r, i) => [time(i), ...r].join(',')).join('\n')}\n`);
  return file;
}

const close = (actual: number, expected: number) =>
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(expected)));

// quantiles 5 (25%) and 15 (75%), reference 10; actuals 8, 20, 0
const CASE = [
  [8, 5, 15, 10],
  [20, 5, 15, 10],
  [0, 5, 15, 10],
];

async function caseValues(name: string, offset: number) {
  const file = csv(
    name,
    'actual,q25,q75,reference',
    CASE.map((r) => r.map((v) => v + offset)),
  );
  return (await scorePairsFile(file, 'ending', options)).rows[0].values;
}

describe('Brier score per quantile level', () => {
  for (const offset of [0, 1e9]) {
    it(`the event "actual at or below the quantile" forecast with the level's probability (offset ${offset})`, async () => {
      const v = await caseValues(`case-${offset}.csv`, offset);
      // 25%: one actual (0) at or below 5; 75%: two (8, 0) at or below 15
      close(v.below_q25, 100 / 3);
      close(v.below_q75, 200 / 3);
      close(v.bs_q25, (2 * 0.25 ** 2 + 0.75 ** 2) / 3);
      close(v.bs_q75, (0.75 ** 2 + 2 * 0.25 ** 2) / 3);
      // one probability, one bin: fewer than 1000 pairs round it to tenths, as SFA (0.25 -> 0.2, 0.75 -> 0.8)
      close(v.rel_q25, (0.2 - 1 / 3) ** 2);
      close(v.rel_q75, (0.8 - 2 / 3) ** 2);
      close(v.res_q25, 0);
      close(v.unc_q25, (1 / 3) * (2 / 3));
      close(v.unc_q75, (2 / 3) * (1 / 3));
    });

    it(`quantile and CRPS skill against the reference as a single value (offset ${offset})`, async () => {
      const v = await caseValues(`skill-${offset}.csv`, offset);
      // pinball of the reference at 25%: (2·0.25 + 10·0.75 + 10·0.25)/3 = 3.5; at 75%: 11.5/3
      close(v.qss_q25, 1 - 14.75 / 3 / 3.5);
      close(v.qss_q75, 1 - 17.75 / 11.5);
      close(v.crps_ref, 22 / 3); // the reference's mean absolute error
      close(v.crpss, 1 - v.crps / (22 / 3));
    });
  }

  it('rounds the level to hundredths from 1000 pairs on, as SFA bins forecast probabilities', async () => {
    // 30% of the actuals at or below the 25% quantile
    const rows = (n: number) => Array.from({ length: n }, (_, i) => [i % 10 < 3 ? -1 : 1, 0]);
    const many = (await scorePairsFile(csv('many.csv', 'actual,q25', rows(1000)), 'ending', options)).rows[0];
    close(many.values.rel_q25, (0.25 - 0.3) ** 2);
    const few = (await scorePairsFile(csv('few.csv', 'actual,q25', rows(990)), 'ending', options)).rows[0];
    close(few.values.rel_q25, (0.2 - 0.3) ** 2);
    expect(few.values.qss_q25).toBeUndefined(); // no reference, no skill
    expect(few.values.crpss).toBeUndefined();
  });

  it('skill is 0 when forecast and reference score alike and -Infinity when only the reference is perfect', async () => {
    // both quantiles at the reference's value: the same pinball as the reference; SFA's CRPS of
    // the two equal quantiles (x 1 3 3 3, f 0 .1 .5 1, all at or above the actual) is
    // 2 (1 + .9²)/2 = 1.81, below the reference's absolute error of 2
    const same = (await scorePairsFile(csv('same.csv', 'actual,q10,q50,reference', [[1, 3, 3, 3]]), 'ending', options))
      .rows[0];
    expect(same.values.qss_q50).toBe(0);
    expect(same.values.crpss).toBeCloseTo(1 - 1.81 / 2, 12);
    const perfect = (await scorePairsFile(csv('perfect.csv', 'actual,q50,reference', [[1, 3, 1]]), 'ending', options))
      .rows[0];
    expect(perfect.values.qss_q50).toBe(-Infinity);
  });

  it('a group whose pairs were all dropped has every probabilistic field NaN', async () => {
    const file = csv('empty.csv', 'actual,q25,q75,reference', [CASE[0], ['', 5, 15, 10]]);
    const rows = (await scorePairsFile(file, 'ending', { ...options, groups: ['hour'] })).rows;
    const empty = rows.find((r) => r.key === '01')!;
    expect(empty.n).toBe(0);
    for (const f of ['bs_q25', 'rel_q25', 'res_q25', 'unc_q75', 'below_q75', 'qss_q25', 'crpss', 'crps_ref'])
      expect(empty.values[f], f).toBeNaN();
  });
});
