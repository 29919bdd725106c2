// Accuracy over the cold store: with a hot window of 3 days and 10 days of emulator history, a
// score whose window (and the week-ahead reference before it) lies mostly in cold Parquet files
// reads exactly the rows a warehouse keeping every day hot holds. The nightly incremental score's
// ledger equals a full alignment row for row, and its metrics equal a full score's and those of
// the same warehouse with a 40-day hot window, to 1e-9; so does a full alignment in batches,
// which moves each closed day of its ledger to the cold store as it goes, and a catch-up whose
// first new days go cold as it aligns them. And at 100 sites, a 30-day nightly score
// that reads 30 days of cold files scores inside the default accuracy.memory_limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameMetrics, ledgerRows } from './accuracy-support.js';
import { join } from 'node:path';
import { runWarehouseAccuracy, settingsFromConfig, type AccuracySettings } from '../src/accuracy/score.js';
import { Config, type LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import { DAY, HOUR, MINUTE, startOfUtcDay } from '../src/time.js';
import { hotCutoff } from '../src/warehouse/cold.js';
import { instantLiteral } from '../src/warehouse/sql.js';
import { accuracyStepSettings, withDuckDBSettings } from '../src/warehouse/settings.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { emulator, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

let emu: Emulator;
let emulatorNow = NOW;

beforeAll(async () => {
  emu = await emulator({ sites: 3, now: () => emulatorNow });
});
afterAll(async () => {
  await emu?.close();
});

function configWithHotDays(days: number): LoadedConfig {
  const config = testConfig({ dir: tempDir('efsync-accuracy-cold-'), url: emu.url, sync: { initial_history: '10d' } });
  return { ...config, warehouse: { ...config.warehouse, hot_window: days * DAY } };
}

async function syncAt(configs: LoadedConfig[], now: number): Promise<void> {
  emulatorNow = now;
  for (const config of configs) expect((await runSync(config, {}, now)).status).toBe('ok');
}

function settingsOf(config: LoadedConfig, now: number, full: boolean, batchPoints?: number): AccuracySettings {
  return {
    ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
    groups: ['total', 'lead', 'hour', 'site', 'model'],
    // eight days: all but the last three are cold at a hot window of 3 days
    from: startOfUtcDay(now - 8 * DAY),
    to: now,
    full,
    batchPoints: batchPoints ?? (full ? undefined : 1),
  };
}

/**
 * Scores, publishes (closed days move to the cold store), and returns the metrics, the ledger as
 * rows, and the closed days the score left in the ledger's hot table.
 */
async function score(config: LoadedConfig, now: number, full = false, batchPoints?: number) {
  const wh = await Warehouse.open({
    path: config.warehouse.path,
    hotWindowMs: config.warehouse.hot_window,
    now: () => now,
  });
  try {
    const run = await runWarehouseAccuracy(wh, settingsOf(config, now, full, batchPoints), {
      runId: `accuracy-${now}-${full}-${batchPoints}`,
      now,
    });
    const ledger = await ledgerRows(wh);
    const [{ hotClosedDays }] = await wh.all<{ hotClosedDays: bigint }>(
      `SELECT count(DISTINCT valid_time::DATE) AS hotClosedDays FROM accuracy_pairs
       WHERE valid_time < ${instantLiteral(hotCutoff(now, config.warehouse.hot_window!))}`,
    );
    // the score's own rewrites of the ledger's cold days, before the publish moves more
    const [rewrites] = await wh.all<{ days: bigint; most: bigint | null }>(
      `SELECT count(*) AS days, max(n) AS most FROM (
         SELECT day, count(*) AS n FROM cold_files
         WHERE table_name = 'accuracy_pairs' AND superseded_at = ${instantLiteral(now)} GROUP BY day)`,
    );
    await wh.publish();
    return {
      rows: run.result.rows,
      ledger,
      mode: run.result.ledger?.mode,
      rewrites,
      hotClosedDays: Number(hotClosedDays),
    };
  } finally {
    await wh.close();
  }
}

describe('accuracy over cold days', () => {
  it('a nightly incremental score equals a full one and the same warehouse keeping 40 days hot', async () => {
    const [cold, hot] = [configWithHotDays(3), configWithHotDays(40)];
    await syncAt([cold, hot], NOW);
    const first = [await score(cold, NOW + MINUTE), await score(hot, NOW + MINUTE)];
    expect(first.map((s) => s.mode)).toEqual(['full', 'full']);
    expect(first[0].ledger).toEqual(first[1].ledger);

    // the next night: a day later, the window moved by a day, one more day gone cold
    const next = NOW + DAY + 2 * HOUR;
    await syncAt([cold, hot], next);
    const incremental = await score(cold, next + MINUTE);
    const allHot = await score(hot, next + MINUTE);
    expect([incremental.mode, allHot.mode]).toEqual(['incremental', 'incremental']);
    // the day that left the window was dropped before the batches (a site each), and no cold day
    // was rewritten more than once, not once per batch
    expect(Number(incremental.rewrites.days)).toBeGreaterThan(0);
    expect(Number(incremental.rewrites.most)).toBe(1);
    const full = await score(cold, next + MINUTE, true);
    expect(full.mode).toBe('full');
    // a full alignment in batches goes day after day and moves each closed day to the cold store
    // as it completes it: its hot table never holds the window, and its pairs are the same
    const byDays = await score(cold, next + MINUTE, true, 200);
    expect(byDays.mode).toBe('full');
    expect(full.hotClosedDays).toBeGreaterThan(0);
    expect(byDays.hotClosedDays).toBe(0);
    expect(byDays.ledger).toEqual(full.ledger);
    expectSameMetrics(byDays.rows, full.rows);

    expect(incremental.ledger.length).toBeGreaterThan(0);
    expect(incremental.ledger).toEqual(full.ledger);
    expect(incremental.ledger).toEqual(allHot.ledger);
    expectSameMetrics(incremental.rows, full.rows);
    expectSameMetrics(incremental.rows, allHot.rows);

    // the cold warehouse's window really lay in Parquet files: every day before the last three
    const [{ days }] = await query<{ days: bigint }>(
      cold.warehouse.path,
      "SELECT count(DISTINCT day) AS days FROM cold_files WHERE table_name = 'forecasts' AND superseded_at IS NULL",
    );
    expect(Number(days)).toBeGreaterThanOrEqual(8);
    const [{ n }] = await query<{ n: bigint }>(hot.warehouse.path, 'SELECT count(*) AS n FROM cold_files');
    expect(Number(n)).toBe(0);

    // and so did its ledger's closed days: the day that left the window was removed from its file,
    // and the published file reads the whole ledger through its view
    const [ledger] = await query<{ days: bigint; rewritten: bigint }>(
      cold.warehouse.path,
      `SELECT count(DISTINCT day) FILTER (WHERE superseded_at IS NULL) AS days, count(*) FILTER (WHERE superseded_at IS NOT NULL) AS rewritten
       FROM cold_files WHERE table_name = 'accuracy_pairs'`,
    );
    expect(Number(ledger.days)).toBeGreaterThanOrEqual(5);
    expect(Number(ledger.rewritten)).toBeGreaterThan(0);
    const [{ pairs }] = await query<{ pairs: bigint }>(
      cold.warehouse.path,
      'SELECT count(*) AS pairs FROM accuracy_pairs',
    );
    expect(Number(pairs)).toBe(full.ledger.length);
    // two warehouses synced twice and scored six times: ~2 minutes alone, twice that beside another file
  }, 600_000);

  it('a catch-up whose new days reach past the hot window scores them all, as --full does', async () => {
    const config = configWithHotDays(3);
    await syncAt([config], NOW);
    expect((await score(config, NOW + MINUTE)).mode).toBe('full');
    // five nights missed: the days after the ledger's window are aligned day by day, and those
    // before the hot window's cutoff go to the cold store as each is done
    const later = NOW + 5 * DAY + 2 * HOUR;
    await syncAt([config], later);
    const catchUp = await score(config, later + MINUTE);
    expect(catchUp.mode).toBe('incremental');
    expect(catchUp.hotClosedDays).toBe(0);
    const full = await score(config, later + MINUTE, true, 200);
    expect(full.mode).toBe('full');
    expect(catchUp.ledger).toEqual(full.ledger);
    expectSameMetrics(catchUp.rows, full.rows);
  }, 600_000);
});

describe('accuracy over cold days at 100 sites', () => {
  const SITES = 100;
  const START = Date.parse('2026-03-01T00:00:00Z');
  const site = (s: string) => `'S' || lpad(${s}::VARCHAR, 3, '0')`;
  const us = (ms: number) => ms * 1000;
  const defaults = { ...Config.parse({}), file: null };

  /** Days [from, to) of every site: 15-minute solar actuals first seen at `seen`, a 48-hour hourly forecast every 6 hours. */
  async function addDays(wh: Warehouse, from: number, to: number, seen: number): Promise<void> {
    const solar = (t: string) => `greatest(0, 900 * sin(pi() * ((${t} / 3600000000 + 18) % 24 - 6) / 12))`;
    await wh.run(`INSERT INTO actuals SELECT ${site('s')}, make_timestamptz(t), ${solar('t')} * (0.9 + 0.1 * sin(s + t / 7.7e9)),
        make_timestamptz(${us(seen)}), NULL
      FROM range(${SITES}) a(s), (SELECT ${us(from)} + i * 900000000 AS t FROM range(${(to - from) / (15 * MINUTE)}) r(i))`);
    await wh.run(`INSERT INTO forecasts SELECT ${site('s')}, 'gbm', 1, make_timestamptz(issue), make_timestamptz(issue + h * 3600000000),
        ${solar('(issue + h * 3600000000)')} * (0.95 + 0.1 * sin(h + s)), NULL
      FROM range(${SITES}) a(s), (SELECT ${us(from)} + i * 21600000000 AS issue FROM range(${(to - from) / (6 * HOUR)}) r(i)),
        range(1, 49) b(h)`);
  }

  /** The nightly step's score of the last 30 days at `now`, in the default accuracy memory limit and threads; then the day moves. */
  async function nightly(wh: Warehouse, now: number) {
    const settings = {
      ...settingsFromConfig(defaults.accuracy, defaults.service.interval_label, defaults.capacity.dir),
      from: startOfUtcDay(now - 30 * DAY),
      to: now,
    };
    const run = await withDuckDBSettings(wh, accuracyStepSettings(defaults.accuracy), () =>
      runWarehouseAccuracy(wh, settings, { runId: `nightly-${now}`, now }),
    );
    await wh.cold.moveClosedDays(hotCutoff(now, defaults.warehouse.hot_window), now);
    return run;
  }

  it('scores a night whose window is 30 days of cold files inside the default memory limit', async () => {
    const dir = tempDir('efsync-accuracy-cold-depth-');
    const wh = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
    try {
      await wh.run(`INSERT INTO sites SELECT ${site('s')}, 'Site ' || s, 'solar', 59.3, 18.1, 1000, NULL, NULL, NULL,
          TIMESTAMPTZ '2026-01-01T00:00:00Z' FROM range(${SITES}) r(s)`);
      await addDays(wh, START - 45 * DAY, START, START);
      await wh.cold.moveClosedDays(hotCutoff(START, defaults.warehouse.hot_window), START);
      const first = await nightly(wh, START + 2 * HOUR);
      expect(first.result.ledger).toMatchObject({ mode: 'full' });
      await addDays(wh, START, START + DAY, START + DAY);
      const next = await nightly(wh, START + DAY + 2 * HOUR);
      expect(next.result.ledger).toMatchObject({ mode: 'incremental' });
      expect(next.result.ledger!.pairsAligned).toBeLessThan(next.result.ledger!.pairs / 10);
      const [{ days }] = await wh.all<{ days: bigint }>(
        "SELECT count(*) AS days FROM cold_files WHERE table_name = 'forecasts' AND superseded_at IS NULL",
      );
      expect(Number(days)).toBeGreaterThanOrEqual(38);
    } finally {
      await wh.close();
    }
  }, 300_000);
});
