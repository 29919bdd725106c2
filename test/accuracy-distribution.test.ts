// KSI, OVER and CPI from the fixed logarithmic bins (src/accuracy/compute/stats.ts) within the stated
// bound of the values the Solar Forecast Arbiter computes (deterministic.py:
// kolmogorov_smirnov_integral, over, combined_performance_index): BIN_ERROR · (mean |actual| +
// mean |forecast|) for KSI and OVER, half that for CPI; on cases worked by hand, on values
// printed by SFA's numpy formula, and against a port of that formula over sorted arrays.
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionRunner, type SqlRunner } from '../src/accuracy/compute/metrics.js';
import type { PairsColumns } from '../src/accuracy/input/pairs.js';
import { scorePairsTable } from '../src/accuracy/score.js';
import { BIN_ERROR } from '../src/accuracy/compute/stats.js';

const COLUMNS: PairsColumns = {
  names: ['valid_time', 'actual', 'forecast'],
  forecast: true,
  reference: false,
  capacity: false,
  issueTime: false,
  site: false,
  model: false,
  flags: false,
  quantiles: [],
};
const OPTIONS = { tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

let instance: DuckDBInstance;
let sql: SqlRunner;

beforeAll(async () => {
  instance = await DuckDBInstance.create(':memory:');
  sql = connectionRunner(await instance.connect());
});
afterAll(() => instance.closeSync());

const literal = (v: number | null) => (v === null ? 'NULL' : `CAST('${v}' AS DOUBLE)`);

/** The bound of the last case scored: BIN_ERROR · (mean |actual| + mean |forecast|) of its scored pairs. */
let bound = 0;

/** Hourly pairs from 2026-01-01T01:00Z on; a NULL actual or forecast is dropped, as for every metric. */
async function score(actual: (number | null)[], forecast: (number | null)[], groups: ('total' | 'hour')[] = ['total']) {
  const kept = actual.flatMap((o, i) => (o === null || forecast[i] === null ? [] : [i]));
  const meanAbs = (x: (number | null)[]) => kept.reduce((sum, i) => sum + Math.abs(x[i] as number), 0) / kept.length;
  bound = BIN_ERROR * (meanAbs(actual) + meanAbs(forecast));
  const rows = actual.map(
    (o, i) => `(make_timestamptz(1767225600000000 + ${i + 1} * 3600000000), ${literal(o)}, ${literal(forecast[i])})`,
  );
  await sql.run(
    `CREATE OR REPLACE TABLE pairs AS SELECT * FROM (VALUES ${rows.join(', ')}) t(valid_time, actual, forecast)`,
  );
  return (await scorePairsTable(sql, 'pairs', COLUMNS, 'ending', { ...OPTIONS, groups })).rows;
}

/** Within the bound of the case (`share` of it for CPI), and 1e-9 relative for rounding. */
function expectClose(actual: number, expected: number, share = 1): void {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(share * bound + 1e-9 * Math.abs(expected));
}

/** KSI, OVER and CPI of a row within the bound of SFA's. */
function expectSfa(v: Record<string, number>, e: { ksi: number; over: number; cpi?: number }): void {
  expectClose(v.ksi, e.ksi);
  expectClose(v.over, e.over);
  if (e.cpi !== undefined) expectClose(v.cpi, e.cpi, 0.5);
}

/**
 * SFA's formula over sorted arrays: x = unique(concat(obs, fx)); ECDFs by binary search (the share
 * of values <= x, statsmodels' right-continuous ECDF); KSI = sum(D[:-1] * diff(x)); OVER the
 * same over D - Vc where D > Vc.
 */
function sfa(obs: number[], fx: number[]): { ksi: number; over: number } {
  const sorted = (a: number[]) => [...a].sort((p, q) => p - q);
  const so = sorted(obs);
  const sf = sorted(fx);
  const x = [...new Set(sorted([...obs, ...fx]))];
  const ecdf = (s: number[], t: number) => {
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (s[mid] <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo / s.length;
  };
  const vc = 1.63 / Math.sqrt(obs.length);
  let ksi = 0;
  let over = 0;
  for (let i = 0; i < x.length - 1; i++) {
    const d = Math.abs(ecdf(so, x[i]) - ecdf(sf, x[i]));
    ksi += d * (x[i + 1] - x[i]);
    if (d > vc) over += (d - vc) * (x[i + 1] - x[i]);
  }
  return { ksi, over };
}

describe("KSI, OVER and CPI within the bins' bound of SFA's values", () => {
  it('match hand-worked values for n = 1, 2 and 3, ties between sides and constant series', async () => {
    // n = 1: x = [1, 2], D = [1, 0]: KSI = 1 · 1; Vc = 1.63 > 1, OVER 0; CPI = (1 + 0 + 2 · 1) / 4
    let [v] = (await score([1], [2])).map((r) => r.values);
    expectSfa(v, { ksi: 1, over: 0, cpi: 0.75 });
    // n = 2: x = [0, 1, 2, 3], y_o = [.5, .5, 1, 1], y_f = [0, .5, .5, 1]: KSI = .5 · 1 + 0 · 1 + .5 · 1 = 1
    [v] = (await score([0, 2], [1, 3])).map((r) => r.values);
    expectSfa(v, { ksi: 1, over: 0, cpi: 0.75 });
    // n = 3, 2 tied on both sides: x = [1, 2, 5], y_o = [1/3, 1, 1], y_f = [0, 2/3, 1]: KSI = 1/3 · 1 + 1/3 · 3
    [v] = (await score([1, 2, 2], [2, 2, 5])).map((r) => r.values);
    expectClose(v.ksi, 4 / 3);
    expect(v.over).toBe(0); // 1/3 < Vc = 1.63/sqrt(3) = 0.941
    // n = 3: x = [0, 1, 2, 10, 11, 12], D = [1/3, 2/3, 1, 2/3, 1/3], dx = [1, 1, 8, 1, 1]: KSI = 10;
    // only D = 1 exceeds Vc: OVER = (1 - 1.63/sqrt(3)) · 8; RMSE 10
    [v] = (await score([0, 1, 2], [10, 11, 12])).map((r) => r.values);
    expectClose(v.ksi, 10);
    expectClose(v.over, 8 * (1 - 1.63 / Math.sqrt(3)));
    expectClose(v.cpi, (10 + 8 * (1 - 1.63 / Math.sqrt(3)) + 20) / 4, 0.5);
    // constant and equal: one value in x, an empty sum: 0 exactly (one bin; KSI is not normalised)
    [v] = (await score([5, 5, 5], [5, 5, 5])).map((r) => r.values);
    expect([v.ksi, v.over, v.cpi]).toEqual([0, 0, 0]);
    // constant actuals, constant forecasts 2 above: D = 1 on [5, 7)
    [v] = (await score([5, 5, 5], [7, 7, 7])).map((r) => r.values);
    expectClose(v.ksi, 2);
    expectClose(v.over, 2 * (1 - 1.63 / Math.sqrt(3)));
  });

  it('match the values SFA numpy formula gives (n = 1 to 30, ties, near 1e9, 1e-3 scale, large bias)', async () => {
    // printed by SFA's three functions (numpy 2.4, statsmodels' ECDF as searchsorted side='right')
    const cases: Record<string, { actual: number[]; forecast: number[]; ksi: number; over: number; cpi: number }> = {
      n1: { actual: [3.25], forecast: [1.5], ksi: 1.75, over: 0.0, cpi: 1.3125 },
      n2: { actual: [0.1, 0.7], forecast: [0.7, 0.2], ksi: 0.05, over: 0.0, cpi: 0.28863402542968153 },
      n3: {
        actual: [1.0, 2.0, 2.0],
        forecast: [2.0, 2.0, 5.0],
        ksi: 1.3333333333333333,
        over: 0.0,
        cpi: 1.2462042625086103,
      },
      ties: {
        actual: [
          5.0, 5.0, 4.0, 5.0, 0.0, 4.0, 5.0, 1.0, 1.0, 0.0, 4.0, 5.0, 3.0, 3.0, 4.0, 0.0, 5.0, 5.0, 0.0, 5.0, 5.0, 1.0,
          2.0, 4.0, 5.0,
        ],
        forecast: [
          0.0, 3.0, 2.0, 2.0, 4.0, 4.0, 2.0, 5.0, 3.0, 5.0, 0.0, 5.0, 4.0, 3.0, 2.0, 1.0, 1.0, 1.0, 4.0, 2.0, 5.0, 2.0,
          3.0, 2.0, 4.0,
        ],
        ksi: 0.8,
        over: 0.0,
        cpi: 1.6071247279470289,
      },
      near1e9: {
        actual: [
          1000000002.9782821, 1000000000.0903825, 1000000001.7969329, 1000000002.9018859, 1000000000.3520098,
          1000000000.6693045, 1000000001.6506852, 1000000002.1669819, 1000000001.6582572, 1000000001.6431054,
          1000000000.1546165, 1000000002.2176892, 1000000000.9621046, 1000000000.2218856, 1000000002.875405,
          1000000001.9790139, 1000000001.3673489, 1000000002.1979544, 1000000001.43367, 1000000000.374164,
        ],
        forecast: [
          1000000002.6160296, 1000000003.1142775, 1000000003.1045139, 1000000002.430486, 1000000003.7497203,
          1000000003.809994, 1000000003.5620438, 1000000001.8007528, 1000000001.4371953, 1000000002.354342,
          1000000002.7900858, 1000000001.0620764, 1000000002.4581258, 1000000002.0363189, 1000000000.5058268,
          1000000001.9659042, 1000000001.8996462, 1000000003.8718624, 1000000000.6908019, 1000000003.7499111,
        ],
        ksi: 0.965911763906479,
        over: 0.023857723275259927,
        cpi: 1.1922766967679739,
      },
      biased: {
        actual: [
          908.3194924222267, 599.800250076979, 187.2290474547189, 791.3043338720918, 161.5216905479747,
          320.6403846444068, 666.4230870814164, 425.2353008413222, 460.9252157924165, 303.15722537378156,
          37.23728048946706, 360.7681347214251, 826.6223901229943, 830.1617250714785, 81.06201414430546,
          552.9808291772408, 353.79305429085997, 398.95884700342043, 987.8944722755058, 809.2349746949816,
          506.979159656347, 507.48109933961695, 916.9820251078087, 375.1431315727951, 781.9015932890875,
          729.5663682628989, 737.3428426158385, 455.644593371049, 685.3336152660934, 837.3008844122413,
        ],
        forecast: [
          1095.692973789472, 1563.1672813564926, 1282.0033348551256, 1334.3144694417365, 1264.8226294716958,
          1174.877350718323, 1552.2522616715119, 1191.8673241198446, 981.2972684689063, 1587.7380644214595,
          1199.6925907105383, 1379.1395642923885, 1782.339812864665, 1447.6274821299767, 1324.3955743780132,
          1083.7995297825423, 1509.0405589928503, 1760.412713610214, 1508.3008830614438, 1569.8934412335316,
          1118.171002377015, 1113.3056029585614, 1157.6135166464367, 1278.8058593176859, 1693.2667890944913,
          1266.342077256252, 976.410941375904, 1333.1406686314472, 1059.6792531913889, 1435.9025626238108,
        ],
        ksi: 780.9456106616979,
        over: 372.14114781455135,
        cpi: 709.6247095136507,
      },
      constant: { actual: [7.5, 7.5, 7.5, 7.5], forecast: [7.5, 7.5, 7.5, 7.5], ksi: 0.0, over: 0.0, cpi: 0.0 },
      small: {
        actual: [
          0.0003386744104794799, 0.0009515292774778156, 0.0004368996076759395, 0.0005826751472313618,
          0.0005846239831347064, 0.00041382912038553644, 0.0009779562189859163, 4.3004139081292636e-5,
          0.0007436639122731936, 0.00026434611106445016, 6.0835750169881634e-5, 0.00017955021398935022,
          0.0007509052690936603, 0.0009087045247188648, 0.0007753926564869995,
        ],
        forecast: [
          0.00028479976960185205, 0.0004965432547720038, 0.00011847925323379305, 0.00041964226299439755,
          0.0002578401892960598, 3.161801427778977e-5, 0.00029120038868152564, 0.0009283868852397259,
          0.0005307137606465507, 0.0002738534779206814, 0.00011396803242364873, 0.0008978159520635121,
          9.149887827127934e-5, 3.830831744226193e-5, 0.00011211952688299942,
        ],
        ksi: 0.00020838682523335782,
        over: 0.0,
        cpi: 0.00031167327220677475,
      },
    };
    for (const [name, c] of Object.entries(cases)) {
      const [v] = (await score(c.actual, c.forecast)).map((r) => r.values);
      for (const m of ['ksi', 'over', 'cpi'] as const) {
        const share = m === 'cpi' ? 0.5 : 1;
        const ok = Math.abs(v[m] - c[m]) <= share * bound + 1e-9 * Math.abs(c[m]);
        expect({ name, m, ok }).toEqual({ name, m, ok: true });
      }
    }
  });

  it('match a port of the formula in every key of a group, with dropped pairs left out', async () => {
    // 2400 hourly pairs: 100 per hour of day, on a 0.5 grid (ties within and across sides),
    // forecasts biased by hour so that OVER is not 0 everywhere; every 7th actual missing
    const actual: (number | null)[] = [];
    const forecast: number[] = [];
    for (let i = 0; i < 2400; i++) {
      const h = (i + 1) % 24;
      actual.push(i % 7 === 3 ? null : ((i * 7919) % 41) / 2);
      forecast.push(((i * 104729) % 37) / 2 + h / 3);
    }
    const rows = await score(actual, forecast, ['total', 'hour']);
    expect(rows).toHaveLength(25);
    for (const row of rows) {
      // pair i ends at hour i + 1: its hour-of-day key (interval start) is i % 24
      const keep = actual.flatMap((o, i) =>
        o !== null && (row.group === 'total' || i % 24 === Number(row.key)) ? [i] : [],
      );
      const e = sfa(
        keep.map((i) => actual[i] as number),
        keep.map((i) => forecast[i]),
      );
      expect(row.n).toBe(keep.length);
      const meanAbs = (x: (number | null)[]) =>
        keep.reduce((sum, i) => sum + Math.abs(x[i] as number), 0) / keep.length;
      bound = BIN_ERROR * (meanAbs(actual) + meanAbs(forecast));
      expectClose(row.values.ksi, e.ksi);
      expectClose(row.values.over, e.over);
    }
    expect(rows.some((r) => r.values.over > 0)).toBe(true);
  });

  it('stay within the bound where many distinct values lie close together beside one far value', async () => {
    // 3000 values within 10 and one pair near 1e7: a linear grid of bins over the range would hold
    // every close value in one bin; logarithmic bins keep each value within BIN_ERROR of itself
    const actual = Array.from({ length: 3000 }, (_, i) => (i === 0 ? 1e7 : ((i * 7919) % 3001) / 300));
    const forecast = Array.from({ length: 3000 }, (_, i) => (i === 0 ? 1e7 + 3 : ((i * 104729) % 2999) / 250 + 0.7));
    const [v] = (await score(actual, forecast)).map((r) => r.values);
    const e = sfa(actual, forecast);
    expectClose(v.ksi, e.ksi);
    expectClose(v.over, e.over);
    expect(e.over).toBeGreaterThan(0);
  });

  it('are NaN in a group whose pairs were all dropped', async () => {
    const rows = await score([null, 1, 2], [1, 2, 3], ['hour']);
    const empty = rows.find((r) => r.values.n === 0 || r.n === 0)!;
    expect([empty.values.ksi, empty.values.over, empty.values.cpi]).toEqual([NaN, NaN, NaN]);
  });
});
