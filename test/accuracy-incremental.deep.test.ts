// Incremental accuracy: after a second sync (new vintages, new actuals), revised actuals and a
// new flag, the incremental score aligns only the new and changed pairs, its ledger holds exactly
// the pairs a full alignment makes, and every metric equals the full rescore's.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectSameMetrics, ledgerRows } from './accuracy-support.js';
import { DEFAULT_QUALITY } from './warehouse-support.js';
import accuracyJob from '../jobs/accuracy.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import { Config } from '../src/config.js';
import { runWarehouseAccuracy, settingsFromConfig, type AccuracySettings } from '../src/accuracy/score.js';
import type { LoadedConfig } from '../src/config.js';
import { loadActuals } from '../src/warehouse/loader.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { DAY, HOUR, MINUTE } from '../src/time.js';
import { CLI } from './fixtures/runner-child.js';
import { addSite, openTestWarehouse } from './accuracy-fixture.js';
import { emuForFile, NOW, query, runSync, tempDir, testConfig, writeConfigFile } from './sync-support.js';

let emulatorNow = NOW;
const served = emuForFile({ sites: 3, now: () => emulatorNow });

async function syncAt(config: LoadedConfig, now: number): Promise<void> {
  emulatorNow = now;
  expect((await runSync(config, {}, now)).status).toBe('ok');
}

function settingsOf(config: LoadedConfig, now: number, extra: Partial<AccuracySettings> = {}): AccuracySettings {
  return {
    ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
    groups: ['total', 'lead', 'hour', 'site', 'model'],
    from: now - 3 * DAY,
    to: now,
    // every site a batch of its own
    batchPoints: 1,
    // a ramp reads the pair an hour before: a day's statistics read the day before it too
    events: [{ name: 'ramp', kind: 'ramp', threshold: 20, unit: 'kw', direction: 'both', span: HOUR }],
    ...extra,
  };
}

/** The ledger tables' DDL and comments, and their columns', in the writer at `path`. */
async function ledgerCatalog(path: string) {
  const wh = await Warehouse.open({ path });
  try {
    return await wh.all(`
      SELECT table_name AS name, sql, comment FROM duckdb_tables()
      WHERE database_name = current_database() AND table_name IN ('accuracy_pairs', 'accuracy_pair_quantiles')
      UNION ALL SELECT table_name || '.' || column_name, data_type || is_nullable::VARCHAR, comment FROM duckdb_columns()
      WHERE database_name = current_database() AND table_name IN ('accuracy_pairs', 'accuracy_pair_quantiles')
      ORDER BY name`);
  } finally {
    await wh.close();
  }
}

let runs = 0;

async function score(config: LoadedConfig, now: number, extra: Partial<AccuracySettings> = {}) {
  const runId = `accuracy-${++runs}`;
  const wh = await Warehouse.open({ path: config.warehouse.path });
  try {
    const run = await runWarehouseAccuracy(wh, settingsOf(config, now, extra), {
      runId,
      now,
    });
    const ledger = await ledgerRows(wh);
    const [stored] = await wh.all<{ mode: string; pairs_aligned: bigint }>(
      'SELECT mode, pairs_aligned FROM accuracy_runs WHERE run_id = $1',
      [runId],
    );
    await wh.publish();
    return { run, ledger, stored };
  } finally {
    await wh.close();
  }
}

describe('incremental accuracy', () => {
  it('after a second sync, revised actuals and a new flag: only the new pairs aligned, the same scores as --full', async () => {
    const dir = tempDir('efsync-accuracy-incremental-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    const first = await score(config, NOW + MINUTE);
    expect(first.run.result.ledger?.mode).toBe('full');
    expect(first.stored.mode).toBe('full');
    const all = first.run.result.ledger!.pairs;
    expect(first.run.result.ledger!.pairsAligned).toBe(all);

    // nothing changed: nothing aligned, the same scores
    const again = await score(config, NOW + MINUTE);
    expect(again.run.result.ledger).toMatchObject({ mode: 'incremental', pairsAligned: 0, pairs: all });
    // batches are planned from what may change, not from the window's points: every site a batch
    // of its own for the full alignment, one batch when nothing changed
    expect(first.run.result.ledger!.batches).toBeGreaterThan(1);
    expect(again.run.result.ledger!.batches).toBe(1);
    // and no day's statistics read again: the metrics come from the stored ones
    const days = first.run.result.ledger!.stats!.of;
    expect(first.run.result.ledger!.stats).toMatchObject({ mode: 'full', days, of: days });
    expect(again.run.result.ledger!.stats).toMatchObject({ mode: 'incremental', days: 0, of: days });
    expectSameMetrics(again.run.result.rows, first.run.result.rows);

    // six hours later: new vintages and actuals; then two actuals of yesterday revised, one of
    // them below zero (a solar site: flagged negative by the accuracy run)
    const later = NOW + 6 * HOUR;
    await syncAt(config, later);
    const wh = await Warehouse.open({ path: config.warehouse.path });
    let site: string;
    try {
      const [actual] = await wh.all<{ site_id: string; t: bigint; value: number }>(`
        SELECT a.site_id, epoch_ms(a.valid_time) AS t, a.value FROM actuals a JOIN sites s USING (site_id)
        WHERE s.type = 'solar' AND a.value > 100 AND a.valid_time < TIMESTAMPTZ '${new Date(NOW - DAY).toISOString()}'
        ORDER BY a.site_id, a.valid_time DESC LIMIT 1`);
      site = actual.site_id;
      const t = Number(actual.t);
      await loadActuals(
        wh,
        site,
        { valid_time: [t, t + 15 * MINUTE], value: [actual.value * 1.5, -500] },
        { now: later + MINUTE, quality: DEFAULT_QUALITY },
      );
      await wh.publish();
    } finally {
      await wh.close();
    }

    const now = later + 2 * MINUTE;
    const incremental = await score(config, now);
    const ledger = incremental.run.result.ledger!;
    expect(ledger.mode).toBe('incremental');
    expect(ledger.stats?.mode).toBe('incremental');
    expect(incremental.stored).toEqual({ mode: 'incremental', pairs_aligned: BigInt(ledger.pairsAligned) });
    const full = await score(config, now, { full: true, batchPoints: undefined });
    expect(full.run.result.ledger).toMatchObject({ mode: 'full', reason: '--full', pairs: ledger.pairs });
    expect(full.run.result.ledger!.stats).toMatchObject({ mode: 'full', of: ledger.stats!.of });
    // a full alignment empties the ledger by creating its tables again: their DDL and comments are a new warehouse's
    expect(await ledgerCatalog(config.warehouse.path)).toEqual(
      await ledgerCatalog(join(tempDir('efsync-accuracy-new-'), 'new.duckdb')),
    );

    // the ledger is the full alignment of every site at once, row for row; every metric the same to 1e-9
    expect(incremental.ledger).toEqual(full.ledger);
    expectSameMetrics(incremental.run.result.rows, full.run.result.rows);
    const [negative] = await query<{ n: bigint }>(
      config.warehouse.path,
      'SELECT count(*) AS n FROM actual_flags WHERE site_id = $1 AND flags & 4 <> 0',
      [site],
    );
    expect(Number(negative.n)).toBe(1);

    // it read every pair that changed or is new, and few more: the rows of the full ledger not in the first one
    const before = new Set(first.ledger);
    const changed = full.ledger.filter((row) => !before.has(row)).length;
    expect(ledger.pairsAligned).toBeGreaterThanOrEqual(changed);
    expect(ledger.pairsAligned).toBeLessThan(changed * 1.5);
    expect(ledger.pairsAligned).toBeLessThan(ledger.pairs / 2);

    // other alignment settings: everything aligned again, and said why
    const flaggedToo = await score(config, now, { includeFlagged: true });
    expect(flaggedToo.run.result.ledger).toMatchObject({
      mode: 'full',
      reason: 'settings changed',
    });
  }, 180_000);

  it('a site whose capacity changed is aligned anew and the others only where their data changed: the ledger and scores of --full', async () => {
    const dir = tempDir('efsync-accuracy-site-changed-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    const first = await score(config, NOW + MINUTE);
    const [{ site, n }] = await query<{ site: string; n: bigint }>(
      config.warehouse.path,
      'SELECT site_id AS site, count(*) AS n FROM accuracy_pairs GROUP BY site_id ORDER BY site_id LIMIT 1',
    );
    // a capacity push for one site, synced
    const wh = await Warehouse.open({ path: config.warehouse.path });
    try {
      await wh.run('UPDATE site_capacity SET value_kw = value_kw * 0.8 WHERE site_id = $1', [site]);
      await wh.publish();
    } finally {
      await wh.close();
    }
    const now = NOW + 2 * MINUTE;
    const next = await score(config, now);
    const ledger = next.run.result.ledger!;
    expect(ledger).toMatchObject({ mode: 'incremental', sitesChanged: 1 });
    // that site's pairs, and the few new to the window a minute later; not the other sites'
    expect(ledger.pairsAligned).toBeGreaterThanOrEqual(Number(n));
    expect(ledger.pairsAligned).toBeLessThan(Number(n) + (ledger.pairs - Number(n)) / 10);
    expect(next.ledger).not.toEqual(first.ledger);
    const full = await score(config, now, { full: true, batchPoints: undefined });
    expect(next.ledger).toEqual(full.ledger);
    expectSameMetrics(next.run.result.rows, full.run.result.rows);
    // nothing changed since: no site aligned anew
    expect((await score(config, now)).run.result.ledger).toMatchObject({ mode: 'incremental', sitesChanged: 0 });
  }, 180_000);

  it('a vintage of two days ago whose points arrive late is aligned anew, though nothing else changed that day: the ledger and scores of --full', async () => {
    const dir = tempDir('efsync-accuracy-late-vintage-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    // the service failed one vintage for days: its later points are held back from the warehouse
    const vintage = `site_id = (SELECT min(site_id) FROM forecasts) AND update_time = (
      SELECT max(update_time) FROM forecasts WHERE update_time < TIMESTAMPTZ '${new Date(NOW - 2 * DAY).toISOString()}')`;
    const late = `${vintage} AND valid_time >= (SELECT min(valid_time) + INTERVAL 3 HOUR FROM forecasts WHERE ${vintage})`;
    const change = async (sql: string[]) => {
      const wh = await Warehouse.open({ path: config.warehouse.path });
      try {
        for (const statement of sql) await wh.run(statement);
        await wh.publish();
      } finally {
        await wh.close();
      }
    };
    await change([`CREATE TABLE held AS FROM forecasts WHERE ${late}`, `DELETE FROM forecasts WHERE ${late}`]);
    const first = await score(config, NOW + MINUTE);
    await change(['INSERT INTO forecasts FROM held', 'DROP TABLE held']);
    const now = NOW + 2 * MINUTE;
    const next = await score(config, now);
    const ledger = next.run.result.ledger!;
    expect(ledger).toMatchObject({ mode: 'incremental', sitesChanged: 0 });
    expect(next.ledger.length).toBeGreaterThan(first.ledger.length);
    const full = await score(config, now, { full: true, batchPoints: undefined });
    expect(next.ledger).toEqual(full.ledger);
    expectSameMetrics(next.run.result.rows, full.run.result.rows);
  }, 180_000);

  it('a warehouse younger than its window: a night that changed every hour plans batches of batch_points, and aligns the ledger of --full', async () => {
    const dir = tempDir('efsync-accuracy-young-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    // a month's window over three days of history
    const month = (now: number) => ({ from: now - 30 * DAY, to: now, batchPoints: undefined });
    await score(config, NOW + MINUTE, month(NOW + MINUTE));
    const [{ fewest }] = await query<{ fewest: bigint }>(
      config.warehouse.path,
      'SELECT min(n) AS fewest FROM (SELECT count(*) AS n FROM accuracy_pairs GROUP BY site_id)',
    );
    // every actual revised: every hour each site holds may align anew, about all its points
    const wh = await Warehouse.open({ path: config.warehouse.path });
    try {
      await wh.run(`UPDATE actuals SET revised_at = TIMESTAMPTZ '${new Date(NOW + 2 * MINUTE).toISOString()}'`);
      await wh.publish();
    } finally {
      await wh.close();
    }
    const now = NOW + 3 * MINUTE;
    // half of a site's pairs: each site a batch of its own (estimated from the month's hours,
    // ten times the three days held, the three sites were one batch)
    const next = await score(config, now, { ...month(now), batchPoints: Math.floor(Number(fewest) / 2) });
    expect(next.run.result.ledger).toMatchObject({ mode: 'incremental', batches: 3 });
    const full = await score(config, now, { ...month(now), full: true });
    expect(next.ledger).toEqual(full.ledger);
    expectSameMetrics(next.run.result.rows, full.run.result.rows);
  }, 180_000);

  // `efsync accuracy` without --from scores up to the run's clock; without --to as well, everything
  it.each<[string, (now: number) => number | undefined]>([
    ['at both ends (no --from, no --to)', () => undefined],
    ['at its start (no --from: up to the run)', (now) => now],
  ])(
    'a window open %s: batches planned from what may change, as for a closed one',
    async (_, toOf) => {
      const dir = tempDir('efsync-accuracy-open-');
      const config = testConfig({ dir, url: served.emu.url });
      await syncAt(config, NOW);
      const open = (now: number) => ({ from: undefined, to: toOf(now), batchPoints: undefined });
      const first = await score(config, NOW + MINUTE, open(NOW + MINUTE));
      const [{ fewest }] = await query<{ fewest: bigint }>(
        config.warehouse.path,
        'SELECT min(n) AS fewest FROM (SELECT count(*) AS n FROM accuracy_pairs GROUP BY site_id)',
      );
      // every site above batch_points: nothing changed is still one batch, not one per site
      const batchPoints = Math.floor(Number(fewest) / 2);
      const again = await score(config, NOW + MINUTE, { ...open(NOW + MINUTE), batchPoints });
      expect(again.run.result.ledger).toMatchObject({ mode: 'incremental', pairsAligned: 0, batches: 1 });
      expectSameMetrics(again.run.result.rows, first.run.result.rows);
      // new vintages and actuals: aligned in batches of what changed, the ledger of --full
      const later = NOW + 6 * HOUR;
      await syncAt(config, later);
      const next = await score(config, later, { ...open(later), batchPoints });
      expect(next.run.result.ledger!.mode).toBe('incremental');
      expect(next.run.result.ledger!.pairsAligned).toBeGreaterThan(0);
      expect(next.run.result.ledger!.batches).toBeLessThan(3);
      const full = await score(config, later, { ...open(later), full: true });
      expect(next.ledger).toEqual(full.ledger);
      expectSameMetrics(next.run.result.rows, full.run.result.rows);
    },
    180_000,
  );

  it('a site that leaves the score takes its pairs out of the ledger, and a window with nothing to align empties it', async () => {
    const dir = tempDir('efsync-accuracy-left-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    const all = await score(config, NOW + MINUTE);
    const sites = (await query<{ site_id: string }>(config.warehouse.path, 'SELECT site_id FROM sites ORDER BY 1')).map(
      (r) => r.site_id,
    );
    expect(sites).toHaveLength(3);
    expect(sites.every((site) => all.ledger.some((row) => row.includes(site)))).toBe(true);

    const fewer = await score(config, NOW + MINUTE, { sites: sites.slice(1) });
    expect(fewer.run.result.ledger).toMatchObject({ mode: 'full' });
    expect(fewer.ledger.length).toBeGreaterThan(0);
    expect(fewer.ledger).toEqual(all.ledger.filter((row) => !row.includes(sites[0])));

    // a full alignment with no point to align leaves no pair
    const window = { from: NOW - 400 * DAY, to: NOW - 399 * DAY };
    const nothing = await score(config, NOW + MINUTE, { sites: sites.slice(1), ...window, full: true });
    expect(nothing.run.result.ledger).toMatchObject({ mode: 'full', reason: '--full', pairs: 0 });
    expect(nothing.ledger).toEqual([]);
  }, 120_000);

  it('a run killed after its ledger committed leaves a ledger the next run scores from, as --full does', async () => {
    const dir = tempDir('efsync-accuracy-killed-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    const configFile = writeConfigFile(dir, { dir, url: served.emu.url });
    const window = ['--from', new Date(NOW - 2 * DAY).toISOString(), '--to', new Date(NOW).toISOString()];
    const accuracy = (...args: string[]) => efsync(['accuracy', '--config', configFile, '--json', ...window, ...args]);

    const killed = await efsync(['accuracy', '--config', configFile, ...window], 'accuracy-ledger');
    expect(killed.signal).toBe('SIGKILL');
    await syncAt(config, NOW + 3 * HOUR);
    const next = await accuracy();
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(/pairs: incremental, [1-9]\d* aligned, \d+ scored/);
    const full = await accuracy('--full');
    expect(full.code).toBe(0);
    expect(full.stderr).toMatch(/pairs: full \(--full\)/);
    expectSameJson(next.stdout, full.stdout);
  }, 180_000);

  it('a run killed between two batches of its ledger leaves one the next run aligns in full, as --full does', async () => {
    const { config, configFile, window, accuracy } = await smallBatches('efsync-accuracy-killed-batch-', 2);

    expect((await accuracy()).code).toBe(0);
    await syncAt(config, NOW + 3 * HOUR);
    // the first site's pairs replaced and committed, the others' not yet
    const killed = await efsync(['accuracy', '--config', configFile, ...window], 'accuracy-batch');
    expect(killed.signal).toBe('SIGKILL');
    const next = await accuracy();
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(
      /pairs: full \(the last run did not finish\), \d+ aligned, \d+ scored; statistics: full/,
    );
    const again = await accuracy();
    expect(again.stderr).toMatch(/pairs: incremental, 0 aligned/);
    const full = await accuracy('--full');
    expect(full.code).toBe(0);
    expectSameJson(next.stdout, full.stdout);
    expectSameJson(again.stdout, full.stdout);
  }, 180_000);

  // The days before the hot window go to their cold files from a spool once their group is in
  // (none of their pairs in the ledger before); the others' pairs go to the hot tables batch by batch.
  // (the CLI's clock is the machine's, days or years after the tests' NOW)
  it.each([
    { days: 'in the hot tables', hotWindow: `${Math.ceil((Date.now() - NOW) / DAY) + 10}d`, leftPast: true },
    { days: 'spooled to the cold store', hotWindow: '8d', leftPast: false },
  ])(
    'a run killed after a day group of its alignment leaves the next one those days to refresh and the rest to align, as --full does: its days $days',
    async ({ hotWindow, leftPast }) => {
      const { config, configFile, window, accuracy } = await smallBatches(
        'efsync-accuracy-killed-group-',
        3,
        hotWindow,
      );
      // the ledger's saved window end, its pairs (through the cold store) and those from `from` on
      const ledger = async (from?: number) => {
        const wh = await Warehouse.open({ path: config.warehouse.path });
        try {
          const [{ to }] = await wh.all<{ to: number }>(
            'SELECT epoch_ms(window_to)::DOUBLE AS to FROM accuracy_ledger_state',
          );
          const rows = await ledgerRows(wh);
          const [{ n }] = await wh.cold.withHistory(undefined, () =>
            wh.all<{ n: bigint }>(
              `SELECT count(*) AS n FROM accuracy_pairs WHERE epoch_ms(valid_time) >= ${from ?? to}`,
            ),
          );
          return { to, pairs: rows.length, distinct: new Set(rows).size, past: Number(n) };
        } finally {
          await wh.close();
        }
      };

      // the first day's pairs in and saved (a batch per site), the second day's first batch committed
      const [{ sites }] = await query<{ sites: bigint }>(config.warehouse.path, 'SELECT count(*) AS sites FROM sites');
      const kill = `accuracy-batch:${Number(sites) + 1}`;
      expect((await efsync(['accuracy', '--config', configFile, ...window], kill)).signal).toBe('SIGKILL');
      const first = await ledger();
      expect(first.to).toBeLessThan(NOW);
      expect(first.to).toBeGreaterThan(NOW - 3 * DAY);
      expect(first.past > 0).toBe(leftPast);
      // new vintages and actuals; then the next run stopped so too, after its first day group
      await syncAt(config, NOW + 3 * HOUR);
      expect((await efsync(['accuracy', '--config', configFile, ...window], 'accuracy-group')).signal).toBe('SIGKILL');
      const second = await ledger();
      expect(second.to).toBeGreaterThan(first.to);
      // the pairs the first left past its saved window gave way to those aligned again
      expect(second.pairs).toBe(second.distinct);
      const next = await accuracy();
      expect(next.code).toBe(0);
      const [, aligned] = /pairs: incremental, (\d+) aligned, \d+ scored; statistics: full/.exec(next.stderr)!;
      expect(await ledger()).toMatchObject({ to: NOW, past: 0 });
      const full = await accuracy('--full');
      expect(full.code).toBe(0);
      // nothing changed since the second began: the days it saved are not aligned again
      expect(Number(aligned)).toBe((await ledger(second.to)).past);
      expectSameJson(next.stdout, full.stdout);
      const again = await accuracy();
      expect(again.stderr).toMatch(/pairs: incremental, 0 aligned/);
      expectSameJson(again.stdout, full.stdout);
    },
    240_000,
  );

  it('a run killed in its statistics leaves the next one the days still pending: its ledger incremental, the same scores as --full', async () => {
    const { config, configFile, window, accuracy } = await smallBatches('efsync-accuracy-killed-stats-', 3);

    // the first day's statistics stored, the other days' not yet
    const killed = await efsync(['accuracy', '--config', configFile, ...window], 'accuracy-stats');
    expect(killed.signal).toBe('SIGKILL');
    const wh = await Warehouse.open({ path: config.warehouse.path });
    let pending: number;
    try {
      const [row] = await wh.all<{ states: bigint; stats: bigint; pending: bigint }>(
        `SELECT (SELECT count(*) FROM accuracy_ledger_state) AS states, (SELECT count(*) FROM accuracy_stats_state) AS stats,
           (SELECT count(*) FROM accuracy_stats_pending) AS pending`,
      );
      expect(row).toMatchObject({ states: 1n, stats: 1n });
      pending = Number(row.pending);
      expect(pending).toBeGreaterThan(1);
    } finally {
      await wh.close();
    }
    const next = await accuracy();
    expect(next.code).toBe(0);
    const [, read, of] =
      /pairs: incremental, 0 aligned, \d+ scored; statistics: incremental, (\d+) of (\d+) days read/.exec(next.stderr)!;
    expect(Number(read)).toBe(pending);
    expect(Number(read)).toBeLessThan(Number(of));
    const full = await accuracy('--full');
    expect(full.code).toBe(0);
    expect(full.stderr).toMatch(new RegExp(`statistics: full, ${of} of ${of} days read`));
    expectSameJson(next.stdout, full.stdout);

    // killed so again, then new vintages and actuals: pairs of days whose bins are not counted yet
    // leave and join the ledger before their day is counted whole
    expect((await efsync(['accuracy', '--config', configFile, '--full', ...window], 'accuracy-stats')).signal).toBe(
      'SIGKILL',
    );
    await syncAt(config, NOW + 3 * HOUR);
    const changed = await accuracy();
    expect(changed.code).toBe(0);
    expect(changed.stderr).toMatch(/pairs: incremental, [1-9]\d* aligned, \d+ scored; statistics: incremental/);
    const fullAgain = await accuracy('--full');
    expectSameJson(changed.stdout, fullAgain.stdout);
  }, 240_000);

  it("a run's signal (a first SIGTERM, its timeout) stops it between two batches: the next run aligns in full, as --full does", async () => {
    const dir = tempDir('efsync-accuracy-signal-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    // aborted when the second batch is about to start, the first one's pairs committed
    let batches = 0;
    const signal = {
      throwIfAborted() {
        if (++batches === 2) throw new Error('interrupted (SIGTERM)');
      },
    } as unknown as AbortSignal;
    const wh = await Warehouse.open({ path: config.warehouse.path });
    try {
      await expect(
        runWarehouseAccuracy(wh, settingsOf(config, NOW + MINUTE), { runId: 'stopped', now: NOW + MINUTE, signal }),
      ).rejects.toThrow('interrupted (SIGTERM)');
      expect(batches).toBe(2);
      const [row] = await wh.all<{ states: bigint; pairs: bigint; runs: bigint }>(
        `SELECT (SELECT count(*) FROM accuracy_ledger_state) AS states, (SELECT count(*) FROM accuracy_pairs) AS pairs,
           (SELECT count(*) FROM accuracy_runs) AS runs`,
      );
      expect(row.states).toBe(0n);
      expect(row.pairs).toBeGreaterThan(0n);
      expect(row.runs).toBe(0n);
    } finally {
      await wh.close();
    }
    const next = await score(config, NOW + MINUTE);
    expect(next.run.result.ledger).toMatchObject({ mode: 'full', reason: 'the last run did not finish' });
    const full = await score(config, NOW + MINUTE, { full: true });
    expect(next.ledger).toEqual(full.ledger);
    expectSameMetrics(next.run.result.rows, full.run.result.rows);
  }, 180_000);

  it('the nightly job says which it ran and records the pairs aligned in the run ledger', async () => {
    const dir = tempDir('efsync-accuracy-job-');
    const config = testConfig({ dir, url: served.emu.url });
    await syncAt(config, NOW);
    const job = (now: number) =>
      runJob(accuracyJob, { config, now: () => now, log: createLogger({ level: 'silent' }) });
    const first = await job(NOW + MINUTE);
    expect(first.summary.join('\n')).toMatch(/pairs: full \(no ledger yet\), (\d+) aligned, \1 scored/);
    await syncAt(config, NOW + 2 * HOUR);
    const next = await job(NOW + 2 * HOUR + MINUTE);
    const line = /pairs: incremental, (\d+) aligned, (\d+) scored/.exec(next.summary.join('\n'));
    expect(Number(line?.[1])).toBeGreaterThan(0);
    expect(Number(line?.[1])).toBeLessThan(Number(line?.[2]));
    // the statistics of the days that changed read again, not the window's
    const stats = /statistics: incremental, (\d+) of (\d+) days read/.exec(next.summary.join('\n'));
    expect(Number(stats?.[1])).toBeGreaterThan(0);
    expect(Number(stats?.[1])).toBeLessThan(Number(stats?.[2]));
    const [ledger] = await query<{ rows: string }>(
      config.warehouse.path,
      `SELECT rows_written::VARCHAR AS rows FROM job_last_runs WHERE job = 'accuracy'`,
    );
    expect(JSON.parse(ledger.rows).accuracy_pairs).toBe(Number(line?.[1]));
  }, 180_000);

  it('hourly interval-ending forecasts over 15-minute actuals: a revised and a late actual re-align their intervals and the references that read them', async () => {
    const wh = await openTestWarehouse('accuracy-incremental-hourly');
    try {
      await addSite(wh, 'S1', 'solar', 100);
      const day = Date.parse('2026-03-02T00:00:00Z');
      // four days of 15-minute interval-ending actuals, one missing; a forecast issued at 06:00 each day for the next 36 hours
      await wh.run(`INSERT INTO actuals SELECT 'S1', make_timestamptz(${day * 1000} + i * 900000000),
        50 + 40 * sin(i / 7.0), TIMESTAMPTZ '2026-03-07T00:00:00Z', NULL FROM range(1, 4 * 96 + 1) r(i) WHERE i <> 200`);
      await wh.run(`INSERT INTO forecasts SELECT 'S1', 'gbm', 1, make_timestamptz(${day * 1000} + (d * 24 + 6) * 3600000000),
        make_timestamptz(${day * 1000} + (d * 24 + 6 + h) * 3600000000), 45 + 40 * sin(h / 5.0), NULL
        FROM range(0, 4) a(d), range(1, 37) b(h)`);
      const config = { ...Config.parse({}), file: null };
      const settings: AccuracySettings = {
        ...settingsFromConfig(config.accuracy, { forecasts: 'ending', actuals: 'ending' }, config.capacity.dir),
        groups: ['total', 'lead', 'hour'],
        forecastIntervalMs: HOUR,
        from: day,
        to: day + 4 * DAY,
      };
      const ledgerRows = async () =>
        (
          await wh.all<{
            row: string;
          }>(`SELECT concat_ws('/', issue_time, valid_time, forecast, actual, reference, drop_reason) AS row
            FROM accuracy_pairs ORDER BY row`)
        ).map((r) => r.row);
      const run = (runId: string, full = false) =>
        runWarehouseAccuracy(wh, { ...settings, full }, { runId, now: Date.parse('2026-03-08T00:00:00Z') });
      expect((await run('first')).result.ledger?.mode).toBe('full');
      const before = await ledgerRows();
      // revised at 2026-03-02 13:15 (its hour's interval and the next day's reference) and the missing 02:00 filled in
      const later = { now: Date.parse('2026-03-07T12:00:00Z'), quality: DEFAULT_QUALITY };
      await loadActuals(wh, 'S1', { valid_time: [day + 53 * 15 * MINUTE], value: [500] }, later);
      await loadActuals(wh, 'S1', { valid_time: [day + 200 * 15 * MINUTE], value: [60] }, later);
      const incremental = await run('incremental');
      const afterIncremental = await ledgerRows();
      expect(incremental.result.ledger?.mode).toBe('incremental');
      expect((await run('full', true)).result.ledger?.mode).toBe('full');
      expect(afterIncremental).toEqual(await ledgerRows());
      const changed = afterIncremental.filter((row) => !before.includes(row)).length;
      expect(changed).toBeGreaterThan(0);
      expect(incremental.result.ledger!.pairsAligned).toBeGreaterThanOrEqual(changed);
      expect(incremental.result.ledger!.pairsAligned).toBeLessThan(incremental.result.ledger!.pairs / 4);
      expectSameMetrics(incremental.result.rows, (await run('again')).result.rows);
    } finally {
      await wh.close();
    }
  });

  it('statistics kept by an older version of efsync are computed again from the whole ledger', async () => {
    const wh = await openTestWarehouse('accuracy-incremental-stats-version');
    try {
      await addSite(wh, 'S1', 'solar', 100);
      const day = Date.parse('2026-03-02T00:00:00Z');
      await wh.run(`INSERT INTO actuals SELECT 'S1', make_timestamptz(${day * 1000} + i * 3600000000),
        50 + 40 * sin(i / 7.0), TIMESTAMPTZ '2026-03-07T00:00:00Z', NULL FROM range(0, 4 * 24) r(i)`);
      await wh.run(`INSERT INTO forecasts SELECT 'S1', 'gbm', 1, make_timestamptz(${day * 1000} + (d * 24 + 6) * 3600000000),
        make_timestamptz(${day * 1000} + (d * 24 + 6 + h) * 3600000000), 45 + 40 * sin(h / 5.0), NULL
        FROM range(0, 4) a(d), range(1, 37) b(h)`);
      const config = { ...Config.parse({}), file: null };
      const settings: AccuracySettings = {
        ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
        groups: ['total', 'hour'],
        from: day,
        to: day + 4 * DAY,
      };
      const run = (runId: string, full = false) =>
        runWarehouseAccuracy(wh, { ...settings, full }, { runId, now: Date.parse('2026-03-08T00:00:00Z') });
      await run('first');
      // as an older efsync left them: another layout's version, and a bin of its numbering
      await wh.run(`UPDATE accuracy_stats_state SET fingerprint = regexp_replace(fingerprint, '"v":\\d+', '"v":1')`);
      await wh.run(`INSERT INTO accuracy_histograms VALUES ('forecast', NULL, 'total', 'all', 0, 1001000, 5, 0)`);
      const next = await run('next');
      expect(next.result.ledger?.stats?.mode).toBe('full');
      const [stale] = await wh.all<{ n: bigint }>('SELECT count(*) AS n FROM accuracy_histograms WHERE bin = 1001000');
      expect(Number(stale.n)).toBe(0);
      expectSameMetrics(next.result.rows, (await run('full', true)).result.rows);
    } finally {
      await wh.close();
    }
  });
});

/** Two `--json` outputs: the same rows, every number within 1e-9 relative. */
/**
 * A warehouse synced at NOW whose config scores each site a batch of its own (each day a day
 * group, each day's statistics a run), the last `days` days' window, and the CLI's accuracy in it.
 */
/** A synced warehouse and a config aligning a site at a time, keeping `hotWindow` hot (default: the config's). */
async function smallBatches(prefix: string, days: number, hotWindow?: string) {
  const dir = tempDir(prefix);
  const config = testConfig({ dir, url: served.emu.url });
  await syncAt(config, NOW);
  const configFile = writeConfigFile(dir, { dir, url: served.emu.url });
  const written = JSON.parse(readFileSync(configFile, 'utf8')) as { warehouse: Record<string, unknown> };
  const warehouse = hotWindow ? { ...written.warehouse, hot_window: hotWindow } : written.warehouse;
  writeFileSync(configFile, JSON.stringify({ ...written, warehouse, accuracy: { batch_points: 1 } }));
  const window = ['--from', new Date(NOW - days * DAY).toISOString(), '--to', new Date(NOW).toISOString()];
  const accuracy = (...args: string[]) => efsync(['accuracy', '--config', configFile, '--json', ...window, ...args]);
  return { config, configFile, window, accuracy };
}

function expectSameJson(actual: string, expected: string): void {
  const rows = (text: string) => JSON.parse(text) as Record<string, unknown>[];
  const [a, b] = [rows(actual), rows(expected)];
  expect(a.length).toBe(b.length);
  for (const [i, row] of a.entries()) {
    for (const [field, value] of Object.entries(row)) {
      const other = b[i][field];
      if (typeof value === 'number' && typeof other === 'number')
        expect(Math.abs(value - other), field).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(other)));
      else expect(value, field).toEqual(other);
    }
  }
}

/** The CLI in a child process (the emulator in this one keeps answering), optionally killed at a fault point. */
function efsync(
  args: string[],
  faultPoint = '',
): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      env: { ...process.env, EFSYNC_LOG_LEVEL: 'warn', EFSYNC_FAULT_POINT: faultPoint },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
