// Event metrics (issue 13, part 3): the contingency table of a threshold or ramp event per group,
// and POD, FAR, POFD, CSI, event bias and event accuracy as SFA's metrics/event.py defines them,
// against hand-worked tables.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseEventOption, type EventDefinition } from '../src/accuracy/compute/events.js';
import { scorePairsFile, scoreWarehouse } from '../src/accuracy/score.js';
import { addActuals, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';
import { CLI } from './fixtures/runner-child.js';

const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-events-'));
const options = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

function csv(name: string, header: string, rows: (number | string)[][]): string {
  const file = join(dir, name);
  const lines = rows.map((r, i) => [`2026-03-01T${String(i + 1).padStart(2, '0')}:00:00Z`, ...r].join(','));
  writeFileSync(file, `valid_time,${header}\n${lines.join('\n')}\n`);
  return file;
}

async function total(file: string, events: EventDefinition[], groups = options.groups) {
  return (await scorePairsFile(file, 'ending', { ...options, groups, events })).rows;
}

const event = (text: string) => parseEventOption(text);
const expectClose = (actual: Record<string, number>, expected: Record<string, number>) => {
  for (const [k, v] of Object.entries(expected)) {
    if (Number.isNaN(v)) expect(actual[k], k).toBeNaN();
    else expect(Math.abs(actual[k] - v), k).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(v)));
  }
};

// (actual, forecast) against 50 kW: TP, FP, TN, FN, TP (at the threshold counts), TN
const THRESHOLD_CASE = [
  [60, 70],
  [40, 55],
  [30, 20],
  [55, 45],
  [80, 50],
  [10, 10],
];
const THRESHOLD_EXPECTED = {
  tp_high: 2,
  fp_high: 1,
  tn_high: 2,
  fn_high: 1,
  pod_high: 2 / 3,
  far_high: 1 / 3,
  pofd_high: 1 / 3,
  csi_high: 2 / 4,
  ebias_high: 3 / 3,
  ea_high: 4 / 6,
};

describe('threshold events', () => {
  it('count the 2×2 table and give the six metrics of the hand-worked case', async () => {
    const file = csv('threshold.csv', 'actual,forecast', THRESHOLD_CASE);
    const [row] = await total(file, [event('name=high,kind=threshold,threshold=50')]);
    expectClose(row.values, THRESHOLD_EXPECTED);
  });

  it('are exact at values near 1e9 with small differences', async () => {
    const file = csv(
      'threshold-large.csv',
      'actual,forecast',
      THRESHOLD_CASE.map((r) => r.map((v) => 1e9 + v)),
    );
    const [row] = await total(file, [event('name=high,kind=threshold,threshold=1000000050')]);
    expectClose(row.values, THRESHOLD_EXPECTED);
  });

  it('in % of capacity: a pair without a capacity is not judged', async () => {
    const rows = THRESHOLD_CASE.map((r) => [...r, 200]);
    const file = csv('threshold-pct.csv', 'actual,forecast,capacity', [...rows, [99, 99, '']]);
    const [row] = await total(file, [event('name=high,kind=threshold,threshold=25,unit=pct')]);
    expectClose(row.values, THRESHOLD_EXPECTED);
  });

  it('below a threshold (direction down), and 0 where a denominator is 0, as SFA returns', async () => {
    const file = csv('none.csv', 'actual,forecast', [
      [10, 20],
      [30, 40],
    ]);
    const [row] = await total(file, [event('name=low,kind=threshold,threshold=5,direction=down')]);
    expectClose(row.values, {
      tn_low: 2,
      tp_low: 0,
      pod_low: 0,
      far_low: 0,
      pofd_low: 0,
      csi_low: 0,
      ebias_low: 0,
      ea_low: 1,
    });
  });
});

describe('ramp events', () => {
  // hourly actuals and forecasts; changes over 1h: actual 15, 5, -15, 25; forecast 5, 13, -8, 10
  const RAMP = [
    [0, 0],
    [15, 5],
    [20, 18],
    [5, 10],
    [30, 20],
  ];

  it('up: a change of at least the threshold over the span; the first pair has none before it', async () => {
    const file = csv('ramp.csv', 'actual,forecast', RAMP);
    const [row] = await total(file, [event('name=ramp,kind=ramp,threshold=10,span=1h')]);
    // (forecast, observed): (no, yes) FN, (yes, no) FP, (no, no) TN, (yes, yes) TP
    expectClose(row.values, {
      tp_ramp: 1,
      fp_ramp: 1,
      tn_ramp: 1,
      fn_ramp: 1,
      pod_ramp: 0.5,
      far_ramp: 0.5,
      pofd_ramp: 0.5,
      csi_ramp: 1 / 3,
      ebias_ramp: 1,
      ea_ramp: 0.5,
    });
  });

  it('both directions, exact at values near 1e9', async () => {
    const file = csv(
      'ramp-large.csv',
      'actual,forecast',
      RAMP.map((r) => r.map((v) => 1e9 + v)),
    );
    const [row] = await total(file, [event('name=swing,kind=ramp,threshold=10,direction=both')]);
    // observed |change| >= 10: yes, no, yes, yes; forecast: no, yes, no, yes -> FN, FP, FN, TP
    expectClose(row.values, {
      tp_swing: 1,
      fp_swing: 1,
      tn_swing: 0,
      fn_swing: 2,
      pod_swing: 1 / 3,
      far_swing: 0.5,
      pofd_swing: 1,
      csi_swing: 0.25,
      ebias_swing: 2 / 3,
      ea_swing: 0.25,
    });
  });
});

describe('event groups', () => {
  it('a group whose pairs were all dropped has counts 0 and every event metric NaN', async () => {
    const file = csv('empty.csv', 'actual,forecast', [
      [60, 70],
      ['', 70],
    ]);
    const rows = await total(file, [event('name=high,kind=threshold,threshold=50')], ['hour'] as never);
    const empty = rows.find((r) => r.key === '01')!;
    expect(empty.n).toBe(0);
    expectClose(empty.values, { tp_high: 0, fp_high: 0, tn_high: 0, fn_high: 0, pod_high: NaN, ea_high: NaN });
    expectClose(rows.find((r) => r.key === '00')!.values, { tp_high: 1, pod_high: 1, ea_high: 1 });
  });
});

describe('efsync accuracy --event', () => {
  it('scores the event given on the command line, in a process outside UTC, as JSON fields', async () => {
    const file = csv('cli.csv', 'actual,forecast', THRESHOLD_CASE);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        ...CLI,
        'accuracy',
        '--pairs',
        file,
        '--by',
        'total',
        '--json',
        '--event',
        'name=high,kind=threshold,threshold=50',
      ],
      { cwd: dir, env: { ...process.env, TZ: 'America/New_York' } },
    );
    const [row] = JSON.parse(stdout) as Record<string, number>[];
    expectClose(row, THRESHOLD_EXPECTED);
  });

  it('names the field that is wrong', () => {
    expect(() => event('name=x,kind=threshold,threshold=5,direction=both')).toThrow(/field direction: .*ramps only/);
    expect(() => event('name=x,kind=spike,threshold=5')).toThrow(/field kind/);
    expect(() => event('name=x,kind=ramp')).toThrow(/field threshold/);
    expect(() => event('high')).toThrow(/not field=value/);
  });
});

describe('ramp events in the warehouse', () => {
  it('compare each point with the point an hour earlier of the same issued forecast', async () => {
    const wh = await openTestWarehouse('accuracy-events');
    try {
      await addSite(wh, 'S1', 'solar', 100);
      await addActuals(wh, 'S1', '2026-03-01T01:00:00Z', 60, Array(24).fill(1)); // the reference day
      await addActuals(wh, 'S1', '2026-03-02T01:00:00Z', 60, [0, 20, 25, 50]); // changes 20, 5, 25
      // issued 00:00: changes 15, 25, 5 -> hit, false alarm, miss
      await addForecast(wh, 'S1', '2026-03-02T00:00:00Z', [
        ['2026-03-02T01:00:00Z', 0],
        ['2026-03-02T02:00:00Z', 15],
        ['2026-03-02T03:00:00Z', 40],
        ['2026-03-02T04:00:00Z', 45],
      ]);
      // issued 02:00: its first point has no earlier point of its own; then 30 -> hit
      await addForecast(wh, 'S1', '2026-03-02T02:00:00Z', [
        ['2026-03-02T03:00:00Z', 30],
        ['2026-03-02T04:00:00Z', 60],
      ]);
      const { rows } = await scoreWarehouse(wh, {
        ...options,
        forecastLabel: 'ending',
        actualLabel: 'ending',
        maxMissingPct: 10,
        events: [event('name=ramp,kind=ramp,threshold=10')],
      });
      const site = rows.find((r) => r.subject === 'forecast' && r.group === 'total')!;
      expect(site.n).toBe(6);
      expectClose(site.values, { tp_ramp: 2, fp_ramp: 1, tn_ramp: 0, fn_ramp: 1, pod_ramp: 2 / 3, far_ramp: 1 / 3 });
    } finally {
      await wh.close();
    }
  });
});
