// Scores that hold on every input: instants read as UTC whatever the process's time zone, CRMSE
// without cancellation under a large bias, NaN for groups whose pairs were all dropped, and
// values too large to square rejected with their line.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { scorePairsFile } from '../src/accuracy/score.js';
import { CLI } from './fixtures/runner-child.js';
import { builtChild } from './built.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'efsync-accuracy-exact-'));
const ROOT = join(import.meta.dirname, '..');
const options = { groups: ['total' as const], tz: 'UTC', leadBuckets: [], deadbandPct: 0, mapeMinActualPct: 1 };

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function efsync(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI, ...args], {
      cwd: dir,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function total(name: string, csv: string) {
  const { rows } = await scorePairsFile(file(name, csv), 'ending', options);
  return rows[0].values;
}

const relative = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

describe('a process outside UTC', () => {
  const NEW_YORK = { TZ: 'America/New_York' };

  it("reads a pairs file's offset-less times as UTC and groups hours in UTC", async () => {
    const pairs = file(
      'hours.csv',
      `valid_time,actual,forecast
2026-01-31 14:00,1,2
2026-01-31 15:00,1,4
2026-01-31T16:00:00Z,1,1
`,
    );
    const { code, stdout, stderr } = await efsync(
      NEW_YORK,
      'accuracy',
      '--pairs',
      pairs,
      '--by',
      'hour',
      '--json',
      '--interval-label',
      'ending',
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // interval-ending: 14:00 closes hour 13
    const rows = (JSON.parse(stdout) as { key: string; mae: number }[]).map((r) => [r.key, r.mae]);
    expect(rows).toEqual([
      ['13', 1],
      ['14', 3],
      ['15', 0],
    ]);
  });

  it('opens the warehouse, as writer and as reader, in UTC', async () => {
    const { stdout } = await run('node', [builtChild('test/timezone-child.ts'), join(dir, 'warehouse.duckdb')], {
      cwd: ROOT,
      env: { ...process.env, ...NEW_YORK },
    });
    const expected = { tz: 'UTC', parsed: '2026-01-31 14:00:00+00', hour: 14, day: '2026-01-31' };
    expect(JSON.parse(stdout)).toEqual({ writer: expected, reader: expected });
  });
});

describe('CRMSE', () => {
  it.each([
    [
      "a large bias (SFA's two-pass definition)",
      // errors 10000, 10000.001, 10000: population std sqrt(2/9) · 0.001 (numpy: 4.714045208870694e-4)
      { file: 'bias.csv', forecasts: [10000, 10001.001, 10002], crmse: 4.714045208870694e-4 },
    ],
    [
      'a bias of 1e9 times its spread (the centred pass)',
      // errors 1e9, 1e9 + 1, 1e9 + 3: deviations -4/3, -1/3, 5/3, population std sqrt(42/27)
      { file: 'huge-bias.csv', forecasts: [1000000000, 1000000002, 1000000005], crmse: Math.sqrt(42 / 27) },
    ],
  ])('keeps its digits under %s', async (_what, { file, forecasts, crmse }) => {
    // actuals 0, 1, 2 at 01:00, 02:00, 03:00
    const rows = forecasts.map((f, i) => `2026-03-01T0${i + 1}:00:00Z,${i},${f}`);
    const v = await total(file, `valid_time,actual,forecast\n${rows.join('\n')}\n`);
    expect(relative(v.crmse, crmse)).toBeLessThan(1e-9);
  });

  it('takes (f − mean f) − (o − mean o), as SFA, where f − o itself would round at 1e9', async () => {
    const o = [0.1, 1.7, 3.3, 2.9];
    const f = [1000000000.2, 1000000001.9, 1000000003.05, 1000000001.45];
    const mean = (x: number[]) => x.reduce((a, b) => a + b) / x.length;
    const d = f.map((fi, i) => fi - mean(f) - (o[i] - mean(o)));
    const expected = Math.sqrt(mean(d.map((x) => x * x)));
    const rows = o.map((oi, i) => `2026-03-01T0${i + 1}:00:00Z,${oi},${f[i]}`);
    const v = await total('rounding-bias.csv', `valid_time,actual,forecast\n${rows.join('\n')}\n`);
    expect(relative(v.crmse, expected)).toBeLessThan(1e-9);
  });

  it('is zero, to rounding of the values, for a constant error', async () => {
    const lines = Array.from({ length: 7 }, (_, i) => `2026-03-01T0${i}:00:00Z,${i},${i + 999.7}`);
    const v = await total('constant.csv', `valid_time,actual,forecast\n${lines.join('\n')}\n`);
    // the one-pass sqrt(E[e²] − E[e]²) gave about 1e-5 here
    expect(v.crmse).toBeLessThan(1e-9);
    expect(v.mbe).toBeCloseTo(999.7, 9);
  });
});

describe('a group whose pairs were all dropped', () => {
  it('has NaN for every metric, CRMSE included, and counts its drops', async () => {
    const pairs = file(
      'empty-hour.csv',
      `valid_time,actual,forecast,reference,capacity,q10,q90
2026-03-01T01:00:00Z,2,3,2,10,1,4
2026-03-01T02:00:00Z,4,3,2,10,2,5
2026-03-01T05:00:00Z,,3,2,10,2,5
`,
    );
    const { rows } = await scorePairsFile(pairs, 'ending', { ...options, groups: ['hour'] });
    const empty = rows.find((r) => r.key === '04')!;
    expect(empty.n).toBe(0);
    expect(empty.values.dropped_actual).toBe(1);
    const metrics = Object.entries(empty.values).filter(
      ([name]) => !name.startsWith('dropped') && name !== 'mape_skipped',
    );
    expect(metrics.map(([name]) => name)).toEqual(
      expect.arrayContaining(['mae', 'rmse', 'crmse', 'r2', 'ksi', 'skill', 'crps', 'coverage', 'pinball_q10']),
    );
    for (const [name, value] of metrics) expect([name, value]).toEqual([name, NaN]);
    const scored = rows.find((r) => r.key === '00')!;
    expect(scored.values.crmse).toBe(0);
  });
});

describe('values too large to square', () => {
  it('are rejected with their file, line and column, not a crash', async () => {
    const pairs = file(
      'huge.csv',
      `valid_time,actual,forecast
2026-03-01T01:00:00Z,2,3
2026-03-01T02:00:00Z,1e300,3
`,
    );
    const { code, stdout, stderr } = await efsync({}, 'accuracy', '--pairs', pairs);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(`${pairs}:3:22: column "actual": 1e300 is too large to score`);
  });
});
