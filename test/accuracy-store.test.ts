// The warehouse path end to end on a small warehouse: `efsync accuracy --db` stores the run and
// its results for analysts and prints JSON; the accuracy job (as the nightly chain runs it) does
// the same through the runner and writes the report.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import accuracyJob from '../jobs/accuracy.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import { storeAccuracy } from '../src/accuracy/output/store.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { addActuals, addForecast, addModel, addOutput, addSite, openTestWarehouse } from './accuracy-fixture.js';
import { CLI } from './fixtures/runner-child.js';

const run = promisify(execFile);
let path: string;

beforeAll(async () => {
  const wh = await openTestWarehouse('accuracy-store');
  path = wh.path;
  await addSite(wh, 'S1', 'wind', 1000);
  await addActuals(
    wh,
    'S1',
    '2026-03-01T00:15:00Z',
    15,
    Array.from({ length: 2 * 96 }, (_, i) => 100 + (i % 96)),
  );
  const valid = Array.from({ length: 8 }, (_, h) =>
    new Date(Date.parse('2026-03-02T01:00:00Z') + h * 900_000).toISOString(),
  );
  await addForecast(
    wh,
    'S1',
    '2026-03-01T23:00:00Z',
    valid.map((t, i) => [t, 110 + i]),
  );
  await addModel(wh, 'S1', 'm1', 'gbm');
  await addOutput(
    wh,
    'S1',
    'm1',
    'gbm',
    '2026-03-01T23:00:00Z',
    valid.map((t, i) => [t, 90 + i]),
  );
  await wh.publish();
  await wh.close();
});

describe('accuracy over the warehouse', () => {
  it('stores the run and one result row per subject, group key and metric, and prints JSON', async () => {
    const { stdout } = await run(process.execPath, [
      ...CLI,
      'accuracy',
      '--db',
      path,
      '--from',
      '2026-03-02',
      '--to',
      '2026-03-03',
      '--by',
      'total,hour',
      '--json',
    ]);
    const rows = JSON.parse(stdout);
    const forecast = rows.find(
      (r: { subject: string; group: string }) => r.subject === 'forecast' && r.group === 'total',
    );
    const model = rows.find((r: { model: string; group: string }) => r.model === 'gbm' && r.group === 'total');
    expect(forecast).toMatchObject({ model: null, key: 'all', n: 8, dropped: 0 });
    expect(model).toMatchObject({ subject: 'model', n: 8 });
    // the actual at 00:15 + 15 min * i is 100 + i, so at 01:00 + 15 min * k it is 103 + k
    expect(forecast.mbe).toBeCloseTo(110 - 103, 9);
    expect(model.mbe).toBeCloseTo(90 - 103, 9);
    // wind: day-ahead persistence repeats an identical day, so only the reference is perfect
    expect(forecast.rmse_ref).toBe(0);
    expect(forecast.skill).toBe('-Infinity');

    const reader = await Warehouse.open({ path, readOnly: true });
    try {
      const [runRow] = await reader.all<{ source: string; pairs: bigint; groups: string[] }>(
        'SELECT source, pairs, groups FROM accuracy_runs',
      );
      expect(runRow).toMatchObject({ source: 'warehouse', pairs: 16n, groups: ['total', 'hour'] });
      const latest = await reader.all<{ metric: string; value: number }>(
        `SELECT metric, value FROM accuracy_latest WHERE subject = 'model' AND model = 'gbm' AND group_name = 'total' AND metric IN ('n', 'mbe') ORDER BY metric`,
      );
      expect(latest).toEqual([
        { metric: 'mbe', value: -13 },
        { metric: 'n', value: 8 },
      ]);
    } finally {
      await reader.close();
    }
  });

  it('runs as the accuracy job: headline table and report path in the summary, the report written', async () => {
    const config = loadConfig(undefined, {});
    const report = join(dirname(path), 'report.html');
    const result = await runJob(accuracyJob, {
      config: { ...config, warehouse: { ...config.warehouse, path }, accuracy: { ...config.accuracy, report } },
      now: () => Date.parse('2026-03-02T06:00:00Z'),
      log: createLogger({ level: 'silent' }),
    });
    expect(result.status).toBe('ok');
    expect(result.rows.accuracy_runs).toBe(1);
    expect(result.summary.join('\n')).toMatch(/site forecast\s+8\s+0/);
    expect(result.summary.at(-1)).toBe(`report: ${report}`);
    expect(existsSync(report)).toBe(true);
    expect(readFileSync(report, 'utf8')).toContain('Error by lead time');
  });
});

describe('storeAccuracy', () => {
  it('stores a metric past the range of a 64-bit integer, and NaN and infinities, as DOUBLE', async () => {
    const wh = await openTestWarehouse('accuracy-store-doubles');
    try {
      const values = { r2: -5.0268451656710135e29, rmse: 1e19, red: Number.POSITIVE_INFINITY, r: Number.NaN, mae: 3 };
      await storeAccuracy(
        wh,
        {
          runId: 'doubles',
          scoredAt: Date.parse('2026-03-02T00:00:00Z'),
          source: 'warehouse',
          groups: ['hour'],
          tz: 'UTC',
          forecastLabel: 'beginning',
          actualLabel: 'beginning',
          deadbandPct: 0,
          maxMissingPct: 10,
          mapeMinActualPct: 5,
          skipped: [],
        },
        [{ subject: 'forecast', model: null, group: 'hour', key: '16', keyOrder: 16, n: 40, values }],
      );
      const stored = await wh.all<{ metric: string; value: number }>(
        `SELECT metric, value FROM accuracy_results WHERE run_id = 'doubles' ORDER BY metric`,
      );
      expect(Object.fromEntries(stored.map((row) => [row.metric, row.value]))).toEqual({ ...values, n: 40 });
    } finally {
      await wh.close();
    }
  });
});
