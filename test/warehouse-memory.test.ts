// The warehouse within DuckDB's memory limit: a slice of sites whose data-quality flags run out of
// memory is done again in halves, and the flags come out as they would with room to spare; the
// sync states of 10,000 sites are saved in transactions that fit; a purge of DuckDB's buffer pool
// sets the step's memory limit again; the writer hands DuckDB's freed pages back before every
// allocation, outside the steps that set their own threshold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_QUALITY } from './warehouse-support.js';
import { flagActuals, flagPending } from '../src/warehouse/flags.js';
import { loadForecasts, saveSyncStates } from '../src/warehouse/loader.js';
import { writeSyncStates } from '../src/warehouse/sync-state.js';
import { handBackPool } from '../src/warehouse/executor.js';
import {
  accuracyStepSettings,
  syncStepSettings,
  withDuckDBSettings,
  withFlagsFlushing,
} from '../src/warehouse/settings.js';
import { HOUR } from '../src/time.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { openTestWarehouse } from './accuracy-fixture.js';

const SITES = 60;
const NOW = Date.parse('2026-03-08T00:00:00Z');
const SETTINGS = { ...DEFAULT_QUALITY, label: 'ending' as const };

/** A week of 15-minute solar values per site, with a frozen meter and a plateau every day. */
async function fill(wh: Warehouse): Promise<string[]> {
  await wh.run(`INSERT INTO sites
    SELECT printf('site-%02d', i), printf('Site %02d', i), 'solar', 59.3, 18.1, 100, NULL, NULL, NULL, TIMESTAMPTZ '2026-03-08 00:00:00+00'
    FROM range(${SITES}) r(i)`);
  await wh.run(`INSERT INTO actuals
    SELECT printf('site-%02d', s), TIMESTAMPTZ '2026-03-01 00:15:00+00' + k * INTERVAL 15 MINUTE,
      CASE WHEN k % 96 BETWEEN 40 AND 52 THEN 42.5
        WHEN k % 96 BETWEEN 54 AND 58 THEN 80 + (k % 3) * 0.1
        WHEN k % 96 BETWEEN 26 AND 64 THEN 10 + (k % 7) * 3 + s % 5
        ELSE 0 END,
      TIMESTAMPTZ '2026-03-08 00:00:00+00', NULL
    FROM range(${SITES}) a(s), range(7 * 96) b(k)`);
  return (await wh.all<{ site_id: string }>('SELECT site_id FROM sites ORDER BY 1')).map((r) => r.site_id);
}

const pendAll = (wh: Warehouse) =>
  wh.run('INSERT INTO actual_flags_pending SELECT site_id, min(valid_time) FROM actuals GROUP BY site_id');

const flags = (wh: Warehouse) =>
  wh.all<{ site_id: string; t: string; flags: number }>(
    'SELECT site_id, valid_time::VARCHAR AS t, flags FROM actual_flags ORDER BY site_id, valid_time',
  );

describe('flags under a memory limit', () => {
  let wh: Warehouse;
  let sites: string[];

  beforeAll(async () => {
    wh = await openTestWarehouse('flags-memory');
    sites = await fill(wh);
  });
  afterAll(async () => {
    await wh.run('RESET memory_limit');
    await wh.run('RESET threads');
    await wh.close();
  });

  it('computes every site, in halves where a slice does not fit, as with room to spare', async () => {
    await pendAll(wh);
    await flagPending(wh, SETTINGS, { now: NOW });
    const roomy = await flags(wh);
    expect(new Set(roomy.map((r) => r.flags))).toEqual(new Set([2, 32])); // stale and clipping, every day
    expect(new Set(roomy.map((r) => r.site_id)).size).toBe(SITES);

    await wh.run("SET memory_limit = '16MB'");
    await wh.run('SET threads = 1');
    // the premise: all the sites in one statement do not fit
    await expect(wh.transaction(() => flagActuals(wh, SETTINGS, { sites, now: NOW }))).rejects.toThrow(/Out of Memory/);
    await wh.run('DELETE FROM actual_flags');
    await pendAll(wh);
    expect(await flagPending(wh, SETTINGS, { now: NOW })).toBe(SITES);
    expect(await flags(wh)).toEqual(roomy);
    expect(await wh.all('SELECT * FROM actual_flags_pending')).toEqual([]);
  });
});

describe('sync states under a memory limit', () => {
  const states = (syncedTo: number) =>
    Array.from({ length: 10_000 }, (_, i) => `site-${String(i).padStart(5, '0')}`).flatMap((siteId) =>
      ['forecasts', 'outputs', 'actuals'].map((resource) => ({
        siteId,
        state: { resource, syncedTo, lastAsOf: null, runId: 'run-1', digest: 'a'.repeat(40) },
      })),
    );

  it('saves and advances the 30,000 states of a 10,000-site run within 24MB', async () => {
    const wh = await openTestWarehouse('states-memory');
    try {
      await wh.run("SET memory_limit = '24MB'");
      await wh.run('SET threads = 1');
      // the premise: in one statement they ask DuckDB for 16 MiB at once, which does not fit
      const all = states(NOW).map((entry) => ({ ...entry, now: NOW }));
      await expect(wh.transaction(() => writeSyncStates(wh, all))).rejects.toThrow(/Out of Memory/);

      expect(await saveSyncStates(wh, states(NOW), { now: NOW })).toEqual({ sync_state: 30_000 });
      expect(await saveSyncStates(wh, states(NOW), { now: NOW })).toEqual({});
      expect(await saveSyncStates(wh, states(NOW + HOUR), { now: NOW })).toEqual({ sync_state: 30_000 });
      const [row] = await wh.all<{ n: number; newest: number }>(
        'SELECT count(*)::INTEGER AS n, count(*) FILTER (WHERE epoch_ms(synced_to) = $1)::INTEGER AS newest FROM sync_state',
        [NOW + HOUR],
      );
      expect(row).toEqual({ n: 30_000, newest: 30_000 });
    } finally {
      await wh.close();
    }
  }, 180_000); // several times slower on a busy machine: its time is not what it checks
});

describe("DuckDB's freed pages", () => {
  const threshold = async (wh: Warehouse) =>
    (await wh.all<{ t: string }>(`SELECT current_setting('allocator_bulk_deallocation_flush_threshold') AS t`))[0].t;

  it('go back before each allocation above 4MB in the writer and the sync, 16MB in accuracy, every one in the flags', async () => {
    const wh = await openTestWarehouse('freed-pages');
    try {
      expect(await threshold(wh)).toBe('3.8 MiB');
      await withDuckDBSettings(wh, syncStepSettings({ memory_limit: null, threads: null }), async () => {
        expect(await threshold(wh)).toBe('3.8 MiB');
        await withFlagsFlushing(wh, async () => expect(await threshold(wh)).toBe('0 bytes'));
        expect(await threshold(wh)).toBe('3.8 MiB');
      });
      expect(await threshold(wh)).toBe('3.8 MiB');
      await withDuckDBSettings(wh, accuracyStepSettings({ memory_limit: null, threads: null }), async () => {
        expect(await threshold(wh)).toBe('15.2 MiB');
        // the flags before a score, and a failure among them, leave the step its own threshold
        await expect(
          withFlagsFlushing(wh, async () => {
            expect(await threshold(wh)).toBe('0 bytes');
            throw new Error('a failed flag');
          }),
        ).rejects.toThrow('a failed flag');
        expect(await threshold(wh)).toBe('15.2 MiB');
      });
      expect(await threshold(wh)).toBe('3.8 MiB');
    } finally {
      await wh.close();
    }
  });
});

describe('a purge of the buffer pool', () => {
  const limit = async (wh: Warehouse) =>
    (await wh.all<{ m: string }>(`SELECT current_setting('memory_limit') AS m`))[0].m;
  /** The limit DuckDB's buffer pool enforces, which RESET memory_limit leaves as it was (#28). */
  const pool = async (wh: Warehouse) =>
    (await wh.all<{ m: string }>('SELECT memory_limit AS m FROM pragma_database_size() LIMIT 1'))[0].m;

  it("leaves the step's memory limit, or DuckDB's own outside a step, and every stored row", async () => {
    const wh = await openTestWarehouse('purge-memory');
    try {
      const own = await limit(wh);
      await withDuckDBSettings(wh, { memory_limit: '24MB', threads: 1 }, async () => {
        const step = await limit(wh);
        expect(step).not.toBe(own);
        await wh.run(`INSERT INTO sites SELECT printf('site-%05d', i), 'x', 'solar', 59.3, 18.1, 100, NULL, NULL, NULL,
          TIMESTAMPTZ '2026-03-08 00:00:00+00' FROM range(20000) r(i)`);
        await handBackPool(wh);
        expect(await limit(wh)).toBe(step);
        expect(await wh.all('SELECT count(*)::INTEGER AS n FROM sites')).toEqual([{ n: 20_000 }]);
      });
      await handBackPool(wh);
      expect(await limit(wh)).toBe(own);
      expect(await pool(wh)).toBe(own);
    } finally {
      await wh.close();
    }
  });

  it("gives DuckDB's buffer pool its limit back, not only the setting, after a purge or a step", async () => {
    const wh = await openTestWarehouse('purge-pool');
    try {
      const own = await pool(wh);
      await handBackPool(wh);
      expect(await pool(wh)).toBe(own);
      await withDuckDBSettings(wh, { memory_limit: '24MB', threads: null }, async () => {
        expect(await pool(wh)).toBe('22.8 MiB');
      });
      expect(await pool(wh)).toBe(own);
    } finally {
      await wh.close();
    }
  });

  it('lets the loads merged after a purge stage more than a MB (a purge every 25 batches)', async () => {
    const wh = await openTestWarehouse('purge-loads');
    try {
      // One site at a time: a batch each, so the 26th merges after the first purge.
      const rows = 6_000;
      const hour = 3_600_000;
      const columns = {
        valid_time: Array.from({ length: rows }, (_, i) => Date.UTC(2026, 0, 1) + (i + 1) * 900_000),
        forecast: Array.from({ length: rows }, (_, i) => i % 100),
        capacity: new Array<number>(rows).fill(1000),
        model_name: new Array<string>(rows).fill('ensemble'),
        model_version: new Array<number>(rows).fill(3),
        update_time: Array.from({ length: rows }, (_, i) => Date.UTC(2026, 0, 1) + Math.floor(i / 96) * 6 * hour),
      };
      let written = 0;
      for (let site = 0; site < 30; site++) {
        written += (await loadForecasts(wh, `site-${String(site).padStart(2, '0')}`, columns)).forecasts ?? 0;
      }
      expect(written).toBe(30 * rows);
    } finally {
      await wh.close();
    }
  });
});
