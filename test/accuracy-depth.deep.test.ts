// Memory by design at any depth (#28): a warehouse a quarter deep (100 sites, 90 days of
// 15-minute actuals, a 48-hour hourly forecast every 6 hours), built directly in SQL, scored in
// full and then, a day later, incrementally with its report, inside the default
// accuracy.memory_limit and threads as the nightly chain scores; a month later, the catch-up that
// replaces the whole window, incrementally and equal to a full score; and a batch too large for
// the memory limit goes again in halves instead of failing the step; the histograms are summed in
// as many partitions as their rows need.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Config } from '../src/config.js';
import { runWarehouseAccuracy, settingsFromConfig, type AccuracySettings } from '../src/accuracy/score.js';
import { sumPartitionsFor } from '../src/accuracy/compute/stats-store.js';
import { DAY, HOUR, MINUTE } from '../src/time.js';
import { accuracyStepSettings, withDuckDBSettings } from '../src/warehouse/settings.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { openTestWarehouse } from './accuracy-fixture.js';
import { expectSameMetrics } from './accuracy-support.js';

vi.setConfig({ testTimeout: 180_000 });

const SITES = 100;
const HISTORY_DAYS = 90;
const WINDOW = 30 * DAY;
const START = Date.parse('2026-03-01T00:00:00Z');
const us = (ms: number) => ms * 1000;
const site = (s: string) => `'S' || lpad(${s}::VARCHAR, 3, '0')`;
const config = { ...Config.parse({}), file: null };

/**
 * The days [from, to) of every site: 15-minute actuals of a solar day (zero at night, which the
 * quality flags mark), first seen at `seen`; and the forecasts issued in those days, every 6
 * hours, hourly for 48 hours.
 */
async function addDays(wh: Warehouse, from: number, to: number, seen: number): Promise<void> {
  const solar = (t: string) => `greatest(0, 900 * sin(pi() * ((${t} / 3600000000 + 18) % 24 - 6) / 12))`;
  await wh.run(`INSERT INTO actuals SELECT ${site('s')}, make_timestamptz(t), ${solar('t')} * (0.9 + 0.1 * sin(s + t / 7.7e9)),
      make_timestamptz(${us(seen)}), NULL
    FROM range(${SITES}) a(s), (SELECT ${us(from)} + i * 900000000 AS t FROM range(${(to - from) / (15 * 60_000)}) r(i))`);
  await wh.run(`INSERT INTO forecasts SELECT ${site('s')}, 'gbm', 1, make_timestamptz(issue), make_timestamptz(issue + h * 3600000000),
      ${solar('(issue + h * 3600000000)')} * (0.95 + 0.1 * sin(h + s)), NULL
    FROM range(${SITES}) a(s), (SELECT ${us(from)} + i * 21600000000 AS issue FROM range(${(to - from) / (6 * HOUR)}) r(i)),
      range(1, 49) b(h)`);
}

let wh: Warehouse;
let dir: string;

beforeAll(async () => {
  wh = await openTestWarehouse('accuracy-depth');
  dir = wh.path.slice(0, wh.path.lastIndexOf('/'));
  await wh.run(`INSERT INTO sites SELECT ${site('s')}, 'Site ' || s, 'solar', 59.3, 18.1, 1000, NULL, NULL, NULL,
      TIMESTAMPTZ '2026-01-01T00:00:00Z' FROM range(${SITES}) r(s)`);
  await addDays(wh, START - HISTORY_DAYS * DAY, START, START);
});
afterAll(async () => {
  await wh?.close();
});

/** The nightly accuracy step's score of the last 30 days at `now`, within `memory` (default: the config's). */
function score(now: number, runId: string, extra: Partial<AccuracySettings> = {}, memory?: string) {
  const settings = {
    ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
    from: now - WINDOW,
    to: now,
    reportPath: join(dir, `${runId}.html`),
    ...extra,
  };
  const limits = accuracyStepSettings({
    memory_limit: memory ?? config.accuracy.memory_limit,
    threads: config.accuracy.threads,
  });
  return withDuckDBSettings(wh, limits, () => runWarehouseAccuracy(wh, settings, { runId, now }));
}

describe('accuracy at 100 sites x 90 days', () => {
  it('scores the next night incrementally inside the default memory limit, its flag snapshot bounded by the window', async () => {
    const first = await score(START + 2 * HOUR, 'first');
    expect(first.result.ledger).toMatchObject({ mode: 'full' });
    await addDays(wh, START, START + DAY, START + DAY);
    const next = await score(START + DAY + 2 * HOUR, 'next');
    expect(next.result.ledger).toMatchObject({ mode: 'incremental' });
    expect(next.result.ledger!.pairsAligned).toBeLessThan(next.result.ledger!.pairs / 10);
    expect(next.result.rows.length).toBeGreaterThan(0);
    // the flags the ledger keeps to compare with are those its window can read, not 90 days of them
    const [{ earliest }] = await wh.all<{ earliest: number }>(
      'SELECT epoch_ms(min(valid_time)) AS earliest FROM accuracy_ledger_flags',
    );
    expect(Number(earliest)).toBeGreaterThan(START + DAY - WINDOW - 3 * DAY);
  });

  it('a month later, scores the catch-up that replaces the whole window incrementally, as --full does', async () => {
    // the nights of a month missed: every pair of the last window leaves, a month of new ones comes
    await addDays(wh, START + DAY, START + 31 * DAY, START + 31 * DAY);
    const now = START + 31 * DAY + 2 * HOUR;
    const catchUp = await score(now, 'catch-up');
    expect(catchUp.result.ledger).toMatchObject({ mode: 'incremental' });
    expect(catchUp.result.ledger!.stats).toMatchObject({ mode: 'incremental' });
    const full = await score(now, 'catch-up-full', { full: true });
    expect(full.result.ledger).toMatchObject({ mode: 'full' });
    expectSameMetrics(catchUp.result.rows, full.result.rows);
  });

  it('aligns a batch too large for the memory limit again in halves, and goes on', async () => {
    // every site in one batch, far more than 48MB of DuckDB's memory holds at once (the interval
    // lengths given: inferring them from the data takes about that whatever the batches)
    const run = await score(
      START + DAY + 2 * HOUR,
      'halves',
      { full: true, batchPoints: 100_000_000, forecastIntervalMs: HOUR, actualIntervalMs: 15 * MINUTE },
      '48MB',
    );
    expect(run.result.ledger).toMatchObject({ mode: 'full' });
    expect(run.result.ledger!.batches).toBeGreaterThan(1);
  });
});

describe("the histograms' sum", () => {
  it("starts from as many partitions as hold at most 100,000 of the histograms' rows each", () => {
    expect(sumPartitionsFor(0, 100_000)).toEqual([1, 4, 16, 64]);
    expect(sumPartitionsFor(100_000, 100_000)).toEqual([1, 4, 16, 64]);
    // 1,000 sites: ~335,000 rows, once summed in one statement at +108 MB of RSS
    expect(sumPartitionsFor(335_376, 100_000)).toEqual([4, 16, 64]);
    expect(sumPartitionsFor(1_600_001, 100_000)).toEqual([64]);
    expect(sumPartitionsFor(50_000_000, 100_000)).toEqual([64]);
  });
});
