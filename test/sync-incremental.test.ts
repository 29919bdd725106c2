// Incremental syncs: a rerun at the same clock changes nothing; a later clock adds vintages
// beside the old ones and keeps the revisions of actuals.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import type { LoadedConfig } from '../src/config.js';
import { HOUR } from '../src/time.js';
import {
  DATA_TABLES,
  emulator,
  NOW,
  query,
  runSync,
  tableHashes,
  tempDir,
  testConfig,
  totalRows,
} from './sync-support.js';

let later = NOW;
let emu: Emulator;
let config: LoadedConfig;
let db: string;
let dir: string;

beforeAll(async () => {
  // The emulator's clock is the test's: it moves when the test says so.
  emu = await emulator({ sites: 3, now: () => later });
  dir = tempDir();
  config = testConfig({ dir, url: emu.url });
  db = config.warehouse.path;
  const first = await runSync(config, {}, NOW);
  expect(first.status).toBe('ok');
}, 120_000);

afterAll(async () => {
  await emu?.close();
});

describe('an incremental sync', () => {
  it('rerun at the same clock: every data table identical, 0 rows written', async () => {
    const before = await tableHashes(db);
    const rerun = await runSync(config, {}, NOW);
    expect(rerun.status).toBe('ok');
    expect(rerun.rows).toEqual({});
    expect(totalRows(rerun)).toBe(0);
    expect(rerun.summary.join('\n')).toMatch(/nothing new/);
    expect(await tableHashes(db)).toEqual(before);
  });

  it('a later clock adds new vintages, keeps every older row, and keeps revised actuals', async () => {
    const snapshot = join(dir, 'before-later.duckdb');
    copyFileSync(db, snapshot);
    later = NOW + 26 * HOUR;
    const run = await runSync(config, {}, later);
    expect(run.status).toBe('ok');
    expect(run.rows.forecasts).toBeGreaterThan(0);
    expect(run.rows.model_outputs).toBeGreaterThan(0);
    expect(run.rows.actuals).toBeGreaterThan(0);
    expect(run.summary).toContain('sync state advanced for 9 site resource(s)');

    // Every forecast and output row of the first sync is still there, value for value.
    for (const table of ['forecasts', 'model_outputs']) {
      const lost = await query<{ n: bigint }>(
        db,
        `ATTACH '${snapshot}' AS old (READ_ONLY);
         SELECT count(*) AS n FROM (SELECT * FROM old.${table} EXCEPT SELECT * FROM ${table})`,
      );
      expect(Number(lost[0].n), `${table} rows lost or changed`).toBe(0);
    }
    const vintages = await query<{ newest: bigint }>(db, 'SELECT epoch_ms(max(update_time)) AS newest FROM forecasts');
    expect(Number(vintages[0].newest)).toBeGreaterThan(NOW);

    // Actuals read provisional near the first clock were revised: the old value is kept.
    const revisions = await query<{
      site_id: string;
      t: bigint;
      old_value: number;
      new_value: number;
      value: number;
      replaced_at: bigint;
    }>(
      db,
      `SELECT r.site_id, epoch_ms(r.valid_time) AS t, r.old_value, r.new_value, a.value, epoch_ms(r.replaced_at) AS replaced_at
         FROM actual_revisions r JOIN actuals a USING (site_id, valid_time)`,
    );
    expect(revisions.length).toBeGreaterThan(0);
    expect(run.rows.actual_revisions).toBe(revisions.length);
    for (const r of revisions) {
      expect(r.new_value).toBe(r.value);
      expect(r.old_value).not.toBe(r.new_value);
      expect(Number(r.replaced_at)).toBe(later);
      expect(Number(r.t)).toBeLessThanOrEqual(NOW);
    }
    const oldValues = await query<{ n: bigint }>(
      db,
      `ATTACH '${snapshot}' AS old (READ_ONLY);
       SELECT count(*) AS n FROM actual_revisions r JOIN old.actuals o USING (site_id, valid_time) WHERE o.value IS NOT DISTINCT FROM r.old_value`,
    );
    expect(Number(oldValues[0].n)).toBe(revisions.length);

    const state = await query<{ synced_to: bigint }>(
      db,
      'SELECT DISTINCT epoch_ms(synced_to) AS synced_to FROM sync_state',
    );
    expect(state.map((s) => Number(s.synced_to))).toEqual([later]);
  });

  it('a rerun at the later clock writes nothing again', async () => {
    const before = await tableHashes(db, DATA_TABLES);
    const rerun = await runSync(config, {}, later);
    expect(rerun.rows).toEqual({});
    expect(await tableHashes(db, DATA_TABLES)).toEqual(before);
  });
});
