// Retention of cold days (docs/warehouse.md, "Retention" and "Hot and cold"): a warehouse whose
// closed days went to Parquet files (a hot window of 2 days) keeps exactly the rows the same
// warehouse keeping every day hot keeps; a day thinned once is not read again; a dry run counts
// what a run removes; a run killed while a cold day's new file is written leaves the old one in
// place, and the next run completes to what an uninterrupted run leaves.
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { applyRetention } from '../src/retention/apply.js';
import type { RetentionPolicy } from '../src/retention/rules.js';
import { DAY, HOUR } from '../src/time.js';
import { coldFolderOf } from '../src/warehouse/cold.js';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';
import { CLI } from './fixtures/runner-child.js';
import { insertTwoSitesAndModel } from './warehouse-support.js';

const run = promisify(execFile);
const T0 = Date.UTC(2026, 2, 1); // a UTC midnight
const DAYS = 10;
const NOW = T0 + DAYS * DAY + 2 * HOUR;
const at = (ms: number) => `make_timestamptz(${ms * 1000})`;
const POLICY: RetentionPolicy = { allVintagesMs: 3 * DAY, keep: ['day_ahead', 'latest'], actualRevisionsMs: 5 * DAY };

/** Two sites, a vintage every 6 hours of 48 hourly points, a model's outputs, actuals and revisions; published with `hotWindowMs`. */
async function fixture(hotWindowMs: number | undefined): Promise<Warehouse> {
  const dir = mkdtempSync(join(tmpdir(), 'efsync-retention-cold-'));
  const wh = await Warehouse.open({ path: join(dir, 'warehouse.duckdb'), hotWindowMs, now: () => NOW });
  const synced = at(T0);
  await insertTwoSitesAndModel(wh, synced);
  await wh.run(`INSERT INTO forecasts
    SELECT s, 'gbm', 1, ${at(T0)} + to_hours(i * 6), ${at(T0)} + to_hours(i * 6 + h), 500 + (i % 7) * 11 + h, NULL
    FROM (VALUES ('a'), ('b')) v(s), range(0, ${DAYS * 4}) r(i), range(1, 49) q(h)`);
  await wh.run(`INSERT INTO model_outputs
    SELECT 'm1', ${at(T0)} + to_hours(i * 12), ${at(T0)} + to_hours(i * 12 + h), 'a', 'gbm', 1, 480 + (i % 5) * 13 + h, NULL
    FROM range(0, ${DAYS * 2}) r(i), range(1, 25) q(h)`);
  await wh.run(`INSERT INTO actuals
    SELECT s, ${at(T0)} + to_hours(t), 500 + (t % 3) * 9, ${synced}, NULL
    FROM (VALUES ('a'), ('b')) v(s), range(0, ${(DAYS + 2) * 24}) r(t)`);
  await wh.run(`INSERT INTO actual_revisions
    SELECT s, ${at(T0)} + to_hours(d * 24 + 5), ${at(T0)} + to_hours(d * 24 + 30), 1, 2
    FROM (VALUES ('a'), ('b')) v(s), range(0, ${DAYS}) r(d)`);
  await wh.publish();
  return wh;
}

const CONTENT_SQL = `SELECT 'f' AS t, count(*) AS n, sum(hash(site_id, update_time, valid_time, forecast)) AS h FROM forecasts
  UNION ALL SELECT 'o', count(*), sum(hash(model_id, site_id, as_of, valid_time, forecast)) FROM model_outputs
  UNION ALL SELECT 'r', count(*), sum(hash(site_id, valid_time, replaced_at)) FROM actual_revisions
  UNION ALL SELECT 'a', count(*), sum(hash(site_id, valid_time, value)) FROM actuals ORDER BY 1`;

/** Every row the warehouse keeps, hot and cold, as counts and hashes per table. */
async function content(wh: Warehouse): Promise<unknown[]> {
  return wh.cold.withHistory(undefined, () => wh.all(CONTENT_SQL));
}

const retain = (wh: Warehouse, dryRun = false, now = NOW) =>
  applyRetention(wh, POLICY, { runId: `retention-${now}-${dryRun}`, now, dryRun });

describe('retention of cold days', () => {
  it('thins a cold day exactly as it thins it hot, once, and a dry run counts it first', async () => {
    const cold = await fixture(2 * DAY);
    const hot = await fixture(undefined);
    try {
      const [{ files }] = await cold.all<{ files: bigint }>('SELECT count(*) AS files FROM cold_files');
      expect(Number(files)).toBeGreaterThan(20);
      expect(await content(cold)).toEqual(await content(hot));

      const dry = await retain(cold, true);
      const before = await content(cold);
      const thinned = await retain(cold);
      expect(thinned.removed).toEqual(dry.removed);
      expect(thinned.removed).toEqual((await retain(hot)).removed);
      expect(thinned.removed.forecasts).toBeGreaterThan(0);
      expect(thinned.removed.actual_revisions).toBeGreaterThan(0);
      expect(await content(cold)).not.toEqual(before);
      expect(await content(cold)).toEqual(await content(hot));
      // the thinned days are new generations; the published views read them
      await cold.publish();
      const [{ superseded }] = await cold.all<{ superseded: bigint }>(
        'SELECT count(*) AS superseded FROM cold_files WHERE superseded_at IS NOT NULL',
      );
      expect(Number(superseded)).toBeGreaterThan(0);

      // the next run reads no day again; a day later, only the day that crossed all_vintages
      const again = await retain(cold);
      expect(again.removed).toEqual({});
      expect(again.tables.map((t) => t.days)).toEqual([0, 0, 0, 0, 0]);
      const next = await retain(cold, false, NOW + DAY);
      expect(next.tables.find((t) => t.table === 'forecasts')?.days).toBe(1);
      expect(next.removed).toEqual((await retain(hot, false, NOW + DAY)).removed);
      expect(await content(cold)).toEqual(await content(hot));
    } finally {
      await cold.close();
      await hot.close();
    }
  });

  it('killed while a cold day is thinned, it leaves a readable warehouse the next run completes', async () => {
    const wh = await fixture(2 * DAY);
    const path = wh.path;
    await wh.close();
    const copy = join(mkdtempSync(join(tmpdir(), 'efsync-retention-cold-clean-')), 'warehouse.duckdb');
    copyFileSync(path, copy);
    copyFileSync(writerPathOf(path), writerPathOf(copy));
    cpSync(coldFolderOf(path), coldFolderOf(copy), { recursive: true });
    const dir = mkdtempSync(join(tmpdir(), 'efsync-retention-cold-crash-'));
    const file = join(dir, 'efsync.yaml');
    writeFileSync(file, JSON.stringify({ retention: { all_vintages: '3d' }, log: { level: 'warn' } }));
    const sql = async (db: string) => (await run(process.execPath, [...CLI, 'sql', '--db', db, CONTENT_SQL])).stdout;
    const before = await sql(path);
    // the second cold file written: the first day's new forecasts file is in, the next is not committed
    const killed = await run(process.execPath, [...CLI, 'retention', '--db', path, '--config', file], {
      env: { ...process.env, EFSYNC_FAULT_POINT: 'cold-write:2' },
    }).catch((e) => e);
    expect(killed.signal).toBe('SIGKILL');
    // nothing was published: analysts read what they read before
    expect(await sql(path)).toEqual(before);
    const rerun = await run(process.execPath, [...CLI, 'retention', '--db', path, '--config', file]);
    expect(rerun.stdout).toMatch(/retention run .*: ok \(exit 0\)/);
    const clean = await run(process.execPath, [...CLI, 'retention', '--db', copy, '--config', file]);
    expect(clean.stdout).toMatch(/: ok \(exit 0\)/);
    expect(await sql(path)).toEqual(await sql(copy));
    expect(await sql(path)).not.toEqual(before);
  }, 120_000);
});
