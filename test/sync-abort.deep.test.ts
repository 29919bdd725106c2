// Aborting a sync (SIGINT/SIGTERM reach it as the run's signal) stops starting new sites: the run
// is recorded as interrupted, every site and resource that landed is whole, and a rerun completes
// the warehouse to what a clean run gives.
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { runJob } from '../src/runner/run.js';
import syncJob from '../jobs/sync.js';
import { emuForFile, NOW, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const SITES = 8;

const served = emuForFile({ sites: SITES });

describe('a sync aborted while its third site fetches', () => {
  it('is interrupted, keeps whole sites only, and a rerun completes it', async () => {
    const dir = tempDir();
    const config = testConfig({ dir, url: served.emu.url, db: join(dir, 'aborted.duckdb'), sync: { concurrency: 1 } });
    const abort = new AbortController();
    // Abort as the third site's first series request arrives, as a signal handler would at any
    // moment: the sites before it have fetched, their loads may still wait for the loader.
    const fetching = new Set<string>();
    served.emu.setFaults({
      faultHook: ({ siteId, path }) => {
        if (siteId !== undefined && /\/(forecast|actual)/.test(path)) fetching.add(siteId);
        if (fetching.size === 3) abort.abort(new Error('SIGTERM'));
        return undefined;
      },
    });
    const run = await runJob(syncJob, {
      config,
      now: () => NOW,
      signal: abort.signal,
      log: pino({ level: 'silent' }),
    }).finally(() => served.emu.setFaults({ faultHook: null }));
    expect(run.status).toBe('interrupted');
    expect(run.exitCode).toBe(5);

    const db = config.warehouse.path;
    const synced = await query<{ site_id: string; resources: bigint }>(
      db,
      'SELECT site_id, count(*) AS resources FROM sync_state GROUP BY site_id',
    );
    expect(synced.length).toBeGreaterThanOrEqual(1);
    expect(synced.length).toBeLessThan(SITES);
    // A site with a sync state has its data; a site without one has no series at all.
    const orphans = await query<{ n: bigint }>(
      db,
      `SELECT count(*) AS n FROM (SELECT DISTINCT site_id FROM forecasts UNION SELECT DISTINCT site_id FROM actuals)
        WHERE site_id NOT IN (SELECT site_id FROM sync_state)`,
    );
    expect(Number(orphans[0].n)).toBe(0);

    expect((await runSync(config)).status).toBe('ok');
    const clean = testConfig({ dir, url: served.emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean)).status).toBe('ok');
    expect(await tableHashes(db)).toEqual(await tableHashes(clean.warehouse.path));
  }, 120_000);
});
