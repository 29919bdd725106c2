// Untidy answers (the emulator's untidy switches, src/emulator/untidy.ts) cost at most the entry
// that is untidy: a sync against them stores what a sync of the tidy answers stores, and counts
// what it filled in in runs.defaulted.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteResponse } from '../src/api/schemas.js';
import type { Emulator } from '../src/emulator/server.js';
import { DUPLICATE_OFFSET } from '../src/emulator/untidy.js';
import { DAY } from '../src/time.js';
import {
  NOW,
  clientFor,
  emulator,
  query,
  runSync,
  tableHashes,
  tempDir,
  testConfig,
  totalRows,
} from './sync-support.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await emulator({ sites: 3 });
  // A site with a capacity change: two segments, the first with a dateEnd.
  const client = clientFor(emu);
  const [site] = await client.listSites();
  await client.uploadSiteCapacity(site.site_id, {
    data: [
      { valid_time: '2026-11-10T00:00Z', value: 900 },
      { valid_time: '2026-11-16T12:00Z', value: 1200 },
    ],
  });
  await client.close();
});

afterAll(async () => {
  await emu?.close();
});

async function defaulted(db: string, runId: string): Promise<Record<string, number>> {
  const [row] = await query<{ defaulted: string | null }>(db, 'SELECT defaulted FROM runs WHERE run_id = $1', [runId]);
  return JSON.parse(row.defaulted ?? '{}');
}

describe('tolerance', () => {
  it('a null among the forecast updates and numeric or missing dateEnds cost nothing but the entry', async () => {
    const dir = tempDir();
    const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean)).status).toBe('ok');

    emu.setUntidy(['update-nulls', 'numeric-dates']);
    const config = testConfig({ dir, url: emu.url, db: join(dir, 'untidy.duckdb') });
    const run = await runSync(config);
    emu.setUntidy([]);

    expect(run.status).toBe('ok');
    expect(run.failures).toEqual([]);
    expect(await tableHashes(config.warehouse.path)).toEqual(await tableHashes(clean.warehouse.path));
    const counted = await defaulted(config.warehouse.path, run.runId);
    // One null per site's list, read by forecasts (outputs reads it only for a model without a
    // readable schedule, and the emulator's have one); every segment's dateEnd (numeric, or missing
    // on the open end) and dateStart (numeric).
    const [{ segments }] = await query<{ segments: number }>(
      clean.warehouse.path,
      'SELECT count(*)::INTEGER AS segments FROM site_capacity',
    );
    expect(segments).toBeGreaterThan(3);
    expect(counted['forecasts.updates[]']).toBe(3);
    expect(counted['outputs.updates[]']).toBeUndefined();
    expect(counted['sites.capacity_kw_array[].dateEnd']).toBe(segments);
    expect(counted['sites.capacity_kw_array[].dateStart']).toBe(segments);
  });

  it("models without a schedule have their outputs read at the site's forecast updates: every vintage their fires give, a null there skipped", async () => {
    const dir = tempDir();
    const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean)).status).toBe('ok');

    emu.setUntidy(['no-schedules', 'update-nulls']);
    const config = testConfig({ dir, url: emu.url, db: join(dir, 'unscheduled.duckdb') });
    const run = await runSync(config);
    emu.setUntidy([]);

    expect(run.status).toBe('ok');
    expect(run.failures).toEqual([]);
    const [{ scheduled }] = await query<{ scheduled: number }>(
      config.warehouse.path,
      'SELECT count(schedule_cron)::INTEGER AS scheduled FROM models',
    );
    expect(scheduled).toBe(0);
    // every vintage read at its fires is read at the site's issue times too, row for row
    const [{ stored, missing }] = await query<{ stored: number; missing: number }>(
      config.warehouse.path,
      `ATTACH '${clean.warehouse.path}' AS scheduled (READ_ONLY);
       SELECT (SELECT count(*) FROM model_outputs)::INTEGER AS stored,
         (SELECT count(*) FROM (SELECT * FROM scheduled.model_outputs EXCEPT ALL SELECT * FROM model_outputs))::INTEGER AS missing`,
    );
    expect(stored).toBeGreaterThan(0);
    expect(missing).toBe(0);
    // the list is read once a site by each of the two steps, and its null skipped by each
    const counted = await defaulted(config.warehouse.path, run.runId);
    expect(counted['forecasts.updates[]']).toBe(3);
    expect(counted['outputs.updates[]']).toBe(3);
  });
});

describe('capacity segments, each read on its own', () => {
  const site = (capacity_kw_array: unknown[]) =>
    SiteResponse.parse({
      id: 's',
      name: 'n',
      latitude: 0,
      longitude: 0,
      creation_timestamp_utc: '2026-01-01T00:00:00Z',
      type: 'load',
      capacity_kw_array,
    });

  it('reads an epoch dateEnd by its magnitude, a missing one as the open end, and skips an unreadable segment alone', () => {
    const parsed = site([
      { value: 1, dateEnd: 1_700_000_000 }, // seconds
      { value: 2, dateEnd: 1_700_000_000_123 }, // milliseconds
      { value: 3, dateEnd: 'not a date' },
      { value: 'four', dateEnd: null },
      { value: 5, dateEnd: '2026-01-02T00:00:00Z' },
      { value: 6 },
    ]);
    expect(parsed.capacity_kw_array.map((s) => [s.value, s.dateEnd])).toEqual([
      [1, 1_700_000_000_000],
      [2, 1_700_000_000_123],
      [5, Date.UTC(2026, 0, 2)],
      [6, null],
    ]);
    expect(parsed.defaulted.filter((field) => field.startsWith('capacity'))).toEqual([
      'capacity_kw_array[].dateEnd',
      'capacity_kw_array[].dateEnd',
      'capacity_kw_array[]',
      'capacity_kw_array[]',
      'capacity_kw_array[].dateEnd',
    ]);
  });
});

describe('Get Site Capacity with nulls before the first point', () => {
  it('is read: the null instants are left out and counted', async () => {
    const client = clientFor(emu);
    const [site] = await client.listSites();
    // The emulator's history starts 14 days before its day (2026-11-04): the window begins before it.
    const window = { start: Date.UTC(2026, 10, 1), end: Date.UTC(2026, 10, 6) };
    const tidy = await client.getSiteCapacity(site.site_id, { ...window, freq: '1h' });
    emu.setUntidy(['capacity-nulls']);
    try {
      const untidy = await client.getSiteCapacity(site.site_id, { ...window, freq: '1h' });
      expect(tidy.nulls).toBe(0);
      expect(untidy.nulls).toBeGreaterThan(24);
      expect(untidy.nulls).toBeLessThan(tidy.valid_time.length);
      expect(untidy.valid_time).toEqual(tidy.valid_time.slice(untidy.nulls));
      expect(untidy.value).toEqual(tidy.value.slice(untidy.nulls));
    } finally {
      emu.setUntidy([]);
      await client.close();
    }
  });
});

describe('duplicates', () => {
  it('a valid time listed twice stores the greatest value in either order, and a resync in the other order leaves no phantom revision', async () => {
    const dir = tempDir();
    const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean)).status).toBe('ok');

    emu.setUntidy(['duplicates']);
    const config = testConfig({ dir, url: emu.url, db: join(dir, 'untidy.duckdb') });
    try {
      const untidy = await runSync(config);
      expect(untidy.status).toBe('ok');
      // The run says so: once per repeated valid time, per resource.
      const counted = await defaulted(config.warehouse.path, untidy.runId);
      for (const field of ['forecasts', 'outputs', 'actuals'].map((r) => `${r}.valid_time[repeated]`)) {
        expect(counted[field]).toBeGreaterThan(0);
      }
      const first = await tableHashes(config.warehouse.path);
      // The same window read again and merged in full (a backfill has no digest to skip it by).
      const again = await runSync(config, { from: NOW - 3 * DAY, to: NOW, only: ['actuals'] });
      expect(again.status).toBe('ok');
      expect(await tableHashes(config.warehouse.path)).toEqual(first);
      // Read again with the two values of each repeated valid time in the other order.
      emu.setUntidy(['duplicates-first']);
      const reordered = await runSync(config, { from: NOW - 3 * DAY, to: NOW, only: ['actuals'] });
      expect(reordered.status).toBe('ok');
      expect(await tableHashes(config.warehouse.path)).toEqual(first);
    } finally {
      emu.setUntidy([]);
    }
    const db = config.warehouse.path;
    const attach = `ATTACH '${clean.warehouse.path}' AS clean (READ_ONLY);`;
    // The same keys as a clean sync; where a body listed a valid time twice, its greater value.
    for (const table of ['forecasts', 'model_outputs', 'actuals']) {
      const [counts] = await query<{ untidy: number; clean: number }>(
        db,
        `${attach} SELECT (SELECT count(*) FROM main.${table})::INTEGER AS untidy,
                (SELECT count(*) FROM clean.${table})::INTEGER AS clean`,
      );
      expect(counts.untidy).toBe(counts.clean);
    }
    const [raised] = await query<{ n: number }>(
      db,
      `${attach} SELECT count(*)::INTEGER AS n FROM main.actuals u JOIN clean.actuals c USING (site_id, valid_time)
       WHERE u.value = c.value + ${DUPLICATE_OFFSET}`,
    );
    expect(raised.n).toBeGreaterThan(0);
    const revisions = await query<{ n: number }>(db, 'SELECT count(*)::INTEGER AS n FROM actual_revisions');
    expect(revisions[0].n).toBe(0);
  });
});

describe('shared model ids', () => {
  it('a model listed under two sites is kept under each, its output under each, and a resync writes nothing', async () => {
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url, db: join(dir, 'shared.duckdb') });
    emu.setUntidy(['shared-models']);
    try {
      expect((await runSync(config)).status).toBe('ok');
      const first = await tableHashes(config.warehouse.path);
      const again = await runSync(config);
      expect(again.status).toBe('ok');
      expect(totalRows(again)).toBe(0);
      expect(await tableHashes(config.warehouse.path)).toEqual(first);
    } finally {
      emu.setUntidy([]);
    }
    const db = config.warehouse.path;
    const shared = await query<{ model_id: string; sites: number; outputs: number }>(
      db,
      `SELECT model_id, count(DISTINCT site_id)::INTEGER AS sites,
         (SELECT count(DISTINCT site_id) FROM model_outputs o WHERE o.model_id = m.model_id)::INTEGER AS outputs
       FROM models m GROUP BY model_id HAVING count(*) > 1`,
    );
    expect(shared).toHaveLength(1);
    expect(shared[0]).toMatchObject({ sites: 3, outputs: 3 });
    // Each site's copy of the output is the same data.
    const [copies] = await query<{ vintages: number }>(
      db,
      `SELECT count(DISTINCT (as_of, valid_time, forecast))::INTEGER AS vintages,
              count(*)::INTEGER AS rows FROM model_outputs WHERE model_id = '${shared[0].model_id}'`,
    );
    const [perSite] = await query<{ n: number }>(
      db,
      `SELECT count(*)::INTEGER AS n FROM model_outputs WHERE model_id = '${shared[0].model_id}'
         AND site_id = (SELECT min(site_id) FROM model_outputs WHERE model_id = '${shared[0].model_id}')`,
    );
    expect(copies.vintages).toBe(perSite.n);
    // The view that joins models gives one row per output and actual, not one per listing.
    const [view] = await query<{ view: number; joined: number }>(
      db,
      `SELECT (SELECT count(*) FROM model_output_vs_actual)::INTEGER AS view,
              (SELECT count(*) FROM model_outputs o JOIN actuals a USING (site_id, valid_time))::INTEGER AS joined`,
    );
    expect(view.view).toBe(view.joined);
  });
});
