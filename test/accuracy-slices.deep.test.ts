// A site whose alignment alone does not fit DuckDB's memory limit (#28): its batch goes again in
// halves of its window, down to an hour, and the ledger and scores equal those of a score with
// memory to spare.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Config } from '../src/config.js';
import { runWarehouseAccuracy, settingsFromConfig, type AccuracySettings } from '../src/accuracy/score.js';
import { DAY, HOUR, MINUTE } from '../src/time.js';
import { withDuckDBSettings } from '../src/warehouse/settings.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { openTestWarehouse } from './accuracy-fixture.js';
import { expectSameMetrics, ledgerRows } from './accuracy-support.js';

vi.setConfig({ testTimeout: 180_000 });

const DAYS = 20;
const START = Date.parse('2026-03-01T00:00:00Z');
const LATER = START + 10 * DAY;
const us = (ms: number) => ms * 1000;
const config = { ...Config.parse({}), file: null };

let wh: Warehouse;
let dir: string;

/** The dense site's days [from, to): one-minute actuals; a 48-hour forecast at 15-minute steps issued every 15 minutes. */
async function addDays(from: number, to: number): Promise<void> {
  const solar = (t: string) => `greatest(0, 900 * sin(pi() * ((${t} / 3600000000 + 18) % 24 - 6) / 12))`;
  // varying from day to day, so that persistence is not exact and skill well-conditioned
  await wh.run(`INSERT INTO actuals SELECT 'D', make_timestamptz(t), ${solar('t')} * (0.9 + 0.1 * sin(t / 7.7e9)), make_timestamptz(${us(to)}), NULL
    FROM (SELECT ${us(from)} + i * 60000000 AS t FROM range(${(to - from) / MINUTE}) r(i))`);
  await wh.run(`INSERT INTO forecasts SELECT 'D', 'gbm', 1, make_timestamptz(issue), make_timestamptz(issue + h * 900000000),
      ${solar('(issue + h * 900000000)')} * (0.95 + 0.1 * sin(h)), NULL
    FROM (SELECT ${us(from)} + i * 900000000 AS issue FROM range(${(to - from) / (15 * MINUTE)}) r(i)), range(1, 193) b(h)`);
}

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-slices');
  dir = wh.path.slice(0, wh.path.lastIndexOf('/'));
  await wh.run(
    `INSERT INTO sites VALUES ('D', 'Dense', 'solar', 59.3, 18.1, 1000, NULL, NULL, NULL, TIMESTAMPTZ '2026-01-01T00:00:00Z')`,
  );
  await addDays(START - DAYS * DAY, START);
});
afterAll(async () => {
  await wh?.close();
});

/**
 * The ledgers row for row, the values within 1e-12 relative: a slice resamples an interval's
 * one-minute actuals in another order than the whole window does, and the mean differs in its
 * last bit.
 */
function expectSameLedger(a: string[], b: string[]): void {
  const parse = (rows: string[]) => {
    const parts = rows.map((row) => row.split('/'));
    parts.sort((x, y) => x.slice(0, 8).join('/').localeCompare(y.slice(0, 8).join('/')));
    return parts;
  };
  const [x, y] = [parse(a), parse(b)];
  expect(x.length).toBe(y.length);
  for (const [i, row] of x.entries()) {
    for (const [j, field] of row.entries()) {
      const [p, q] = [Number(field), Number(y[i][j])];
      if (field === '' || Number.isNaN(p)) expect(field).toBe(y[i][j]);
      else expect(Math.abs(p - q)).toBeLessThanOrEqual(1e-12 * Math.max(Math.abs(p), Math.abs(q)));
    }
  }
}

/** The score of the DAYS before `to` within `memory`: 48MB aligns the site in one batch, 32MB does not (40MB its catch-up). */
async function score(runId: string, to: number, memory: string, extra: Partial<AccuracySettings> = {}) {
  const settings = {
    ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
    from: to - DAYS * DAY,
    to,
    reportPath: join(dir, `${runId}.html`),
    forecastIntervalMs: 15 * MINUTE,
    actualIntervalMs: MINUTE,
    ...extra,
  };
  const run = await withDuckDBSettings(wh, { memory_limit: memory, threads: 2 }, () =>
    runWarehouseAccuracy(wh, settings, { runId, now: to + HOUR }),
  );
  return { run, ledger: await ledgerRows(wh) };
}

describe('a site whose alignment does not fit the memory limit', () => {
  it('is aligned in halves of its window, the ledger and scores those of one batch', async () => {
    // one batch of the whole window planned (a full alignment in batches plans by days too)
    const spare = await score('spare', START, '512MB', { full: true, batchPoints: undefined });
    expect(spare.run.result.ledger).toMatchObject({ mode: 'full', batches: 1 });
    const sliced = await score('sliced', START, '32MB', { full: true, batchPoints: undefined });
    expect(sliced.run.result.ledger!.batches).toBeGreaterThan(4);
    expect(sliced.ledger).toEqual(spare.ledger);
    expectSameMetrics(sliced.run.result.rows, spare.run.result.rows);
  });

  it('and so is its catch-up of ten days, incrementally, as a full score with memory to spare', async () => {
    await addDays(START, LATER);
    const catchUp = await score('catch-up', LATER, '40MB');
    expect(catchUp.run.result.ledger).toMatchObject({ mode: 'incremental' });
    expect(catchUp.run.result.ledger!.batches).toBeGreaterThan(2);
    const spare = await score('catch-up-spare', LATER, '512MB', { full: true, batchPoints: undefined });
    expect(spare.run.result.ledger!.batches).toBe(1);
    expectSameLedger(catchUp.ledger, spare.ledger);
    expectSameMetrics(catchUp.run.result.rows, spare.run.result.rows);
  });
});
