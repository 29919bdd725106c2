// Retention (docs/warehouse.md, "Retention") on a warehouse of real DuckDB files filled in SQL:
// four vintages a day of 48 hourly points for two sites over two weeks, a model's outputs,
// actuals, revisions. What goes and what stays, the views and point-in-time macros before and
// after, a dry run, the record of days that makes the next run read only what changed, the
// accuracy ledger's pairs, the scores a retention leaves as they were, the job, and a kill.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import retentionJob from '../jobs/retention.js';
import { runWarehouseAccuracy, settingsFromConfig } from '../src/accuracy/score.js';
import { Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { applyRetention } from '../src/retention/apply.js';
import type { RetentionPolicy } from '../src/retention/rules.js';
import { runJob } from '../src/runner/run.js';
import { DAY, HOUR } from '../src/time.js';
import { CURRENT } from '../src/warehouse/cold.js';
import { writerPathOf, Warehouse } from '../src/warehouse/warehouse.js';
import { CLI } from './fixtures/runner-child.js';
import { insertTwoSitesAndModel } from './warehouse-support.js';

const run = promisify(execFile);
const T0 = Date.UTC(2026, 2, 1); // a UTC midnight
const DAYS = 14;
/** Two hours into the day after the last vintage's first day. */
const NOW = T0 + DAYS * DAY + 2 * HOUR;
const at = (ms: number) => `make_timestamptz(${ms * 1000})`;
const DEFAULT_POLICY: RetentionPolicy = {
  allVintagesMs: 3 * DAY,
  keep: ['day_ahead', 'latest'],
  actualRevisionsMs: 5 * DAY,
};

async function fixture(name: string): Promise<Warehouse> {
  const dir = mkdtempSync(join(tmpdir(), `efsync-retention-${name}-`));
  const wh = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
  const synced = at(T0);
  await insertTwoSitesAndModel(wh, synced);
  // a vintage every 6 hours, 48 hourly points from an hour after its issue
  await wh.run(`INSERT INTO forecasts
    SELECT s, 'gbm', 1, ${at(T0)} + to_hours(i * 6), ${at(T0)} + to_hours(i * 6 + h),
      500 + 300 * sin((i * 6 + h) / 5.0) + (i % 7) * 11 + (s = 'b')::INTEGER * 7, NULL
    FROM (VALUES ('a'), ('b')) v(s), range(0, ${DAYS * 4}) r(i), range(1, 49) q(h)`);
  // the model's own output every 12 hours, 24 points
  await wh.run(`INSERT INTO model_outputs
    SELECT 'm1', ${at(T0)} + to_hours(i * 12), ${at(T0)} + to_hours(i * 12 + h), 'a', 'gbm', 1, 480 + (i % 5) * 13 + h, NULL
    FROM range(0, ${DAYS * 2}) r(i), range(1, 25) q(h)`);
  await wh.run(`INSERT INTO actuals
    SELECT s, ${at(T0)} + to_hours(t), 500 + 280 * sin(t / 5.0) + (t % 3) * 9, ${synced}, NULL
    FROM (VALUES ('a'), ('b')) v(s), range(0, ${(DAYS + 2) * 24}) r(t)`);
  await wh.run(`INSERT INTO actual_revisions
    SELECT s, ${at(T0)} + to_hours(d * 24 + 5), ${at(T0)} + to_hours(d * 24 + 30), 1, 2
    FROM (VALUES ('a'), ('b')) v(s), range(0, ${DAYS}) r(d)`);
  return wh;
}

const retain = (wh: Warehouse, policy = DEFAULT_POLICY, dryRun = false, now = NOW) =>
  applyRetention(wh, policy, { runId: `retention-${now}`, now, dryRun });

async function rows<T = Record<string, unknown>>(wh: Warehouse, sql: string): Promise<T[]> {
  return wh.all<T>(sql);
}

const VIEWS_SQL = {
  latest: 'SELECT * FROM forecast_latest ORDER BY site_id, valid_time',
  dayAhead: 'SELECT * FROM forecast_day_ahead ORDER BY site_id, valid_time',
  outputsNow: `SELECT * FROM model_output_as_of(${at(NOW)}) ORDER BY valid_time`,
};

describe('retention of vintages', () => {
  it('keeps every vintage for all_vintages after its valid time, then the day-ahead and the latest: the views answer as before', async () => {
    const wh = await fixture('keep');
    try {
      const before = {
        latest: await rows(wh, VIEWS_SQL.latest),
        dayAhead: await rows(wh, VIEWS_SQL.dayAhead),
        outputs: await rows(wh, VIEWS_SQL.outputsNow),
        recent: await rows(wh, `SELECT * FROM forecasts WHERE valid_time >= ${at(T0 + 11 * DAY)} ORDER BY ALL`),
        forecasts: await rows<{ n: bigint }>(wh, 'SELECT count(*) AS n FROM forecasts'),
      };
      const result = await retain(wh);
      const cutoff = T0 + 11 * DAY; // the UTC midnight three days before NOW
      expect(result.tables.find((t) => t.table === 'forecasts')).toEqual({
        table: 'forecasts',
        before: cutoff,
        days: 11,
      });
      // before the cutoff, at most the day-ahead and the latest vintage of each valid time
      const vintages = await rows<{ most: bigint; kept: bigint }>(
        wh,
        `SELECT max(n) AS most, sum(n) AS kept FROM (SELECT count(*) AS n FROM forecasts
         WHERE valid_time < ${at(cutoff)} GROUP BY site_id, valid_time)`,
      );
      expect(vintages[0].most).toBe(2n);
      expect(Number(before.forecasts[0].n) - result.removed.forecasts).toBe(
        Number((await rows<{ n: bigint }>(wh, 'SELECT count(*) AS n FROM forecasts'))[0].n),
      );
      expect(result.removed.forecasts).toBeGreaterThan(0);
      expect(result.removed.model_outputs).toBeGreaterThan(0);
      // after it, every vintage
      expect(await rows(wh, `SELECT * FROM forecasts WHERE valid_time >= ${at(cutoff)} ORDER BY ALL`)).toEqual(
        before.recent,
      );
      expect(await rows(wh, VIEWS_SQL.latest)).toEqual(before.latest);
      expect(await rows(wh, VIEWS_SQL.dayAhead)).toEqual(before.dayAhead);
      expect(await rows(wh, VIEWS_SQL.outputsNow)).toEqual(before.outputs);
      // revisions: whole days before the UTC midnight five days back
      const revisions = await rows<{ first: Date }>(wh, 'SELECT min(valid_time) AS first FROM actual_revisions');
      expect(revisions[0].first.getTime()).toBe(T0 + 9 * DAY + 5 * HOUR);
      expect(result.removed.actual_revisions).toBe(2 * 9);
    } finally {
      await wh.close();
    }
  });

  it('keeps the last vintage issued at least a lead time before, as configured', async () => {
    const wh = await fixture('lead');
    try {
      const expected = await rows(
        wh,
        `SELECT site_id, valid_time, update_time FROM forecasts
         WHERE valid_time < ${at(T0 + 11 * DAY)} AND valid_time - update_time >= INTERVAL 12 HOUR
         QUALIFY update_time = max(update_time) OVER (PARTITION BY site_id, valid_time) ORDER BY ALL`,
      );
      await retain(wh, { ...DEFAULT_POLICY, keep: [12 * HOUR] });
      expect(
        await rows(
          wh,
          `SELECT site_id, valid_time, update_time FROM forecasts WHERE valid_time < ${at(T0 + 11 * DAY)} ORDER BY ALL`,
        ),
      ).toEqual(expected);
      expect(expected.length).toBeGreaterThan(0);
    } finally {
      await wh.close();
    }
  });

  it("keeps each site's own vintages of a model the sites share (outputs are keyed by site and model)", async () => {
    const wh = await fixture('shared-model');
    try {
      // site b lists the same model, its outputs issued six hours after site a's
      await wh.run(
        `INSERT INTO models VALUES ('m1', 'b', 'gbm', 'gbm', 1, NULL, 'ai', NULL, 1, true, NULL, NULL, NULL, ${at(T0)})`,
      );
      await wh.run(`INSERT INTO model_outputs
        SELECT 'm1', ${at(T0)} + to_hours(i * 12 + 6), ${at(T0)} + to_hours(i * 12 + 6 + h), 'b', 'gbm', 1, 470 + h, NULL
        FROM range(0, ${DAYS * 2}) r(i), range(1, 25) q(h)`);
      const old = `valid_time < ${at(T0 + 11 * DAY)}`;
      const expected = await rows(
        wh,
        `SELECT site_id, valid_time, as_of FROM model_outputs WHERE ${old}
         QUALIFY as_of = max(as_of) OVER (PARTITION BY site_id, model_id, valid_time) ORDER BY ALL`,
      );
      await retain(wh, { ...DEFAULT_POLICY, keep: ['latest'] });
      expect(await rows(wh, `SELECT site_id, valid_time, as_of FROM model_outputs WHERE ${old} ORDER BY ALL`)).toEqual(
        expected,
      );
      expect(new Set(expected.map((r) => r.site_id))).toEqual(new Set(['a', 'b']));
    } finally {
      await wh.close();
    }
  });

  it('forecast_as_of answers from the kept vintages for old valid times: the newest kept at or before the instant', async () => {
    const wh = await fixture('as-of');
    try {
      const day6 = `valid_time >= ${at(T0 + 6 * DAY)} AND valid_time < ${at(T0 + 7 * DAY)}`;
      const asOf = (ms: number) =>
        rows<{ n: bigint; issued: Date }>(
          wh,
          `SELECT count(*) AS n, max(update_time) AS issued FROM forecast_as_of(${at(ms)}) WHERE site_id = 'a' AND ${day6}`,
        );
      // just after the day-ahead vintage of day 6 (issued 18:00 the day before): it is kept
      const afterDayAhead = T0 + 5 * DAY + 20 * HOUR;
      // between two vintages that go: nothing kept was issued by then for day 6
      const early = T0 + 5 * DAY + 3 * HOUR;
      expect(await asOf(afterDayAhead)).toEqual([{ n: 24n, issued: new Date(T0 + 5 * DAY + 18 * HOUR) }]);
      expect((await asOf(early))[0].n).toBe(24n);
      await retain(wh);
      expect(await asOf(afterDayAhead)).toEqual([{ n: 24n, issued: new Date(T0 + 5 * DAY + 18 * HOUR) }]);
      expect((await asOf(early))[0].n).toBe(0n);
    } finally {
      await wh.close();
    }
  });

  it('a dry run counts exactly what a run removes and changes nothing', async () => {
    const wh = await fixture('dry');
    try {
      const count = async () =>
        rows(
          wh,
          'SELECT (SELECT count(*) FROM forecasts) AS f, (SELECT count(*) FROM model_outputs) AS o, (SELECT count(*) FROM retention_days) AS d',
        );
      const before = await count();
      const dry = await retain(wh, DEFAULT_POLICY, true);
      expect(await count()).toEqual(before);
      const real = await retain(wh);
      expect(real.removed).toEqual(dry.removed);
    } finally {
      await wh.close();
    }
  });

  it('the next run reads only the days that changed: new ones, a backfilled one, or all of them under another keep', async () => {
    const wh = await fixture('days');
    try {
      await retain(wh);
      const again = await retain(wh);
      expect(again.tables.map((t) => t.days)).toEqual([0, 0, 0, 0, 0]);
      expect(again.removed).toEqual({});
      // a day later: one more day of vintages past all_vintages
      const next = await retain(wh, DEFAULT_POLICY, false, NOW + DAY);
      expect(next.tables.find((t) => t.table === 'forecasts')?.days).toBe(1);
      // a backfill of an old day is read again
      await wh.run(`INSERT INTO forecasts SELECT site_id, model_name, model_version, update_time - INTERVAL 1 MINUTE,
        valid_time, forecast, capacity FROM forecasts WHERE site_id = 'a' AND valid_time >= ${at(T0 + 4 * DAY)} AND valid_time < ${at(T0 + 5 * DAY)}`);
      const backfilled = await retain(wh, DEFAULT_POLICY, false, NOW + DAY);
      expect(backfilled.tables.find((t) => t.table === 'forecasts')?.days).toBe(1);
      expect(backfilled.removed.forecasts).toBeGreaterThan(0);
      // keeping less reads every day again
      const fewer = await retain(wh, { ...DEFAULT_POLICY, keep: ['latest'] }, false, NOW + DAY);
      expect(fewer.tables.find((t) => t.table === 'forecasts')?.days).toBe(12);
      expect(
        (
          await rows<{ most: bigint }>(
            wh,
            `SELECT max(n) AS most FROM (SELECT count(*) AS n FROM forecasts WHERE valid_time < ${at(T0 + 12 * DAY)} GROUP BY site_id, valid_time)`,
          )
        )[0].most,
      ).toBe(1n);
    } finally {
      await wh.close();
    }
  });
});

describe('retention and accuracy', () => {
  it("removes the ledger's pairs (and their quantiles) before its window only, and never a statistic", async () => {
    const wh = await fixture('ledger');
    try {
      await wh.run(`INSERT INTO accuracy_pairs (pid, subject, model, site_id, valid_time, group_time)
        SELECT d, 'forecast', NULL, 'a', ${at(T0)} + to_hours(d * 24 + 12), ${at(T0)} + to_hours(d * 24 + 12) FROM range(0, 10) r(d)`);
      await wh.run('INSERT INTO accuracy_pair_quantiles SELECT pid, 0.5, 1, valid_time FROM accuracy_pairs');
      await wh.run(`INSERT INTO accuracy_stats VALUES ('forecast', NULL, 'total', 'all', 0, 1, 'n', 1)`);
      await wh.run(
        `INSERT INTO accuracy_ledger_state VALUES ('f', ${at(T0 + 6 * DAY + 3 * HOUR)}, ${at(T0 + 10 * DAY)}, ${at(T0)}, 10, 'r', ${at(T0)})`,
      );
      // the first three days closed and went to the cold store, with their quantiles
      await wh.cold.moveClosedDays(T0 + 3 * DAY, T0 + 3 * DAY);
      const coldDays = () =>
        rows(
          wh,
          `SELECT table_name, count(*) AS n FROM cold_files WHERE table_name LIKE 'accuracy%' AND ${CURRENT}
           GROUP BY table_name ORDER BY table_name`,
        );
      expect(await coldDays()).toEqual([
        { table_name: 'accuracy_pair_quantiles', n: 3n },
        { table_name: 'accuracy_pairs', n: 3n },
      ]);
      const result = await retain(wh);
      expect(result.removed.accuracy_pairs).toBe(6);
      expect(result.removed.accuracy_pair_quantiles).toBe(6);
      expect(await coldDays()).toEqual([]);
      expect(await rows(wh, 'SELECT pid FROM accuracy_pairs ORDER BY pid')).toEqual(
        [6n, 7n, 8n, 9n].map((pid) => ({ pid })),
      );
      expect(await rows(wh, 'SELECT pid FROM accuracy_pair_quantiles ORDER BY pid')).toEqual(
        [6n, 7n, 8n, 9n].map((pid) => ({ pid })),
      );
      expect(await rows(wh, 'SELECT count(*) AS n FROM accuracy_stats')).toEqual([{ n: 1n }]);
      // no vintage inside the ledger's window goes, whatever all_vintages says
      expect(result.tables.find((t) => t.table === 'forecasts')?.before).toBe(T0 + 6 * DAY);
    } finally {
      await wh.close();
    }
  });

  it('scores stored before, and the next incremental score, are what they would be without retention', async () => {
    const config = Config.parse({});
    const settings = (now: number) => ({
      ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
      reportPath: null,
      groups: ['total', 'lead', 'hour', 'site', 'model'] as ('total' | 'lead' | 'hour' | 'site' | 'model')[],
      from: now - 8 * DAY,
      to: now,
    });
    const results = (wh: Warehouse, runId: string) =>
      rows<{ value: number | null }>(
        wh,
        `SELECT subject, model, group_name, group_key, metric, value FROM accuracy_results WHERE run_id = '${runId}' ORDER BY ALL`,
      );
    const kept = await fixture('scores-kept');
    const retained = await fixture('scores-retained');
    try {
      const first = NOW - DAY;
      for (const wh of [kept, retained])
        await runWarehouseAccuracy(wh, settings(first), { runId: 'first', now: first });
      const storedBefore = await results(retained, 'first');
      // all_vintages shorter than the scoring window: the ledger's window bounds it
      const result = await retain(retained, { ...DEFAULT_POLICY, allVintagesMs: 2 * DAY });
      expect(result.removed.forecasts).toBeGreaterThan(0);
      expect(await results(retained, 'first')).toEqual(storedBefore);
      const runs = [];
      for (const wh of [kept, retained]) {
        const run = await runWarehouseAccuracy(wh, settings(NOW), { runId: 'next', now: NOW });
        runs.push(run);
      }
      expect(runs.map((r) => r.result.ledger?.mode)).toEqual(['incremental', 'incremental']);
      const [a, b] = [await results(kept, 'next'), await results(retained, 'next')];
      expect(b.length).toBe(a.length);
      for (const [i, row] of a.entries()) {
        const other = b[i];
        expect({ ...other, value: null }).toEqual({ ...row, value: null });
        if (row.value === null || other.value === null || !Number.isFinite(row.value))
          expect(other.value).toEqual(row.value);
        else expect(other.value).toBeCloseTo(row.value, 9);
      }
    } finally {
      await kept.close();
      await retained.close();
    }
  }, 120_000);
});

describe('the retention job', () => {
  const quiet = createLogger({ level: 'silent' });
  const configFor = (path: string, retention: Record<string, unknown> = {}) => ({
    ...Config.parse({
      warehouse: { path },
      retention: { all_vintages: '3d', actual_revisions: '5d', ...retention },
      log: { level: 'warn' },
    }),
    file: null,
  });

  it('records the rows removed per table in the run ledger; off, it removes nothing', async () => {
    const wh = await fixture('job');
    const path = wh.path;
    await wh.close();
    const off = await runJob(retentionJob, { config: configFor(path, { enabled: false }), now: () => NOW, log: quiet });
    expect(off.status).toBe('ok');
    expect(off.removed).toEqual({});
    const result = await runJob(retentionJob, { config: configFor(path), now: () => NOW, log: quiet });
    expect(result.status).toBe('ok');
    expect(result.removed.forecasts).toBeGreaterThan(0);
    expect(result.summary[0]).toMatch(
      /^forecasts: \d+ rows removed \(valid times before 2026-03-12T00:00:00Z, 11 days read\)$/,
    );
    const reopened = await Warehouse.open({ path });
    try {
      const [row] = await reopened.all<{ removed: string }>(
        `SELECT rows_removed::VARCHAR AS removed FROM runs WHERE run_id = '${result.runId}'`,
      );
      expect(JSON.parse(row.removed)).toEqual(result.removed);
    } finally {
      await reopened.close();
    }
  });

  it('`efsync retention --dry-run` prints what would go and removes nothing; `efsync run sync --dry-run` is refused', async () => {
    const wh = await fixture('cli');
    const path = wh.path;
    await wh.publish();
    await wh.close();
    const dir = mkdtempSync(join(tmpdir(), 'efsync-retention-cli-'));
    const file = join(dir, 'efsync.yaml');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, JSON.stringify({ retention: { all_vintages: '3d' }, log: { level: 'warn' } }));
    // the job's clock is the wall clock: every day of the fixture is past all_vintages
    const { stdout } = await run(process.execPath, [...CLI, 'retention', '--dry-run', '--db', path, '--config', file]);
    expect(stdout).toMatch(/^forecasts: \d+ rows would go \(valid times before /m);
    const counts = await run(process.execPath, [
      ...CLI,
      'sql',
      '--db',
      path,
      'SELECT count(*) AS n FROM retention_days',
    ]);
    expect(counts.stdout).toMatch(/\b0\b/);
    const refused = await run(process.execPath, [...CLI, 'run', 'sync', '--dry-run', '--db', path]).catch((e) => e);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--dry-run: job "sync" has no dry run');
  }, 60_000);

  it("removes millions of rows inside the sync's 64 MB (a checkpoint every million rows; a slice out of memory again after one)", async () => {
    // 100 sites, 48 hourly vintages of 15-minute points per valid day, inserted in issue order
    // as nightly syncs would: 460,800 rows a day, 441,700 of them to go
    const dir = mkdtempSync(join(tmpdir(), 'efsync-retention-memory-'));
    const wh = await Warehouse.open({ path: join(dir, 'warehouse.duckdb') });
    const now = T0 + 9 * DAY;
    for (let day = 0; day < 9; day++) {
      await wh.run(`INSERT INTO forecasts
        SELECT 's' || lpad(s::VARCHAR, 3, '0'), 'gbm', 1, ${at(T0 + day * DAY)} + to_hours(i),
          ${at(T0 + day * DAY)} + to_hours(i) + to_minutes((q + 1) * 15), (s * 7 + i * 3 + q) % 1000, NULL
        FROM range(100) a(s), range(24) b(i), range(192) c(q)`);
    }
    await wh.close();
    const result = await runJob(retentionJob, {
      config: configFor(join(dir, 'warehouse.duckdb'), { all_vintages: '1d' }),
      now: () => now,
      log: quiet,
    });
    expect(result.error).toBeNull();
    expect(result.removed.forecasts).toBeGreaterThan(6 * 441_700);
  }, 240_000);

  it('killed after a slice, it leaves a warehouse the next run completes to what an uninterrupted run leaves', async () => {
    const wh = await fixture('crash');
    const path = wh.path;
    await wh.publish();
    await wh.close();
    const copy = join(mkdtempSync(join(tmpdir(), 'efsync-retention-clean-')), 'warehouse.duckdb');
    copyFileSync(path, copy);
    copyFileSync(writerPathOf(path), writerPathOf(copy));
    const dir = mkdtempSync(join(tmpdir(), 'efsync-retention-crash-'));
    const file = join(dir, 'efsync.yaml');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, JSON.stringify({ retention: { all_vintages: '3d' }, log: { level: 'warn' } }));
    const killed = await run(process.execPath, [...CLI, 'retention', '--db', path, '--config', file], {
      env: { ...process.env, EFSYNC_FAULT_POINT: 'retention-slice:3' },
    }).catch((e) => e);
    expect(killed.signal).toBe('SIGKILL');
    const rerun = await run(process.execPath, [...CLI, 'retention', '--db', path, '--config', file]);
    expect(rerun.stdout).toMatch(/retention run .*: ok \(exit 0\)/);
    const clean = await run(process.execPath, [...CLI, 'retention', '--db', copy, '--config', file]);
    expect(clean.stdout).toMatch(/: ok \(exit 0\)/);
    const content = async (db: string) =>
      (
        await run(process.execPath, [
          ...CLI,
          'sql',
          '--db',
          db,
          "SELECT 'f' AS t, count(*) AS n, sum(hash(site_id, update_time, valid_time)) AS h FROM forecasts UNION ALL SELECT 'o', count(*), sum(hash(model_id, as_of, valid_time)) FROM model_outputs UNION ALL SELECT 'r', count(*), sum(hash(site_id, valid_time)) FROM actual_revisions ORDER BY 1",
        ])
      ).stdout;
    expect(await content(path)).toEqual(await content(copy));
  }, 120_000);
});
