// Newest first across sites (docs/sync.md, "Vintages one by one"): a run's first pass brings every
// site's actuals and the newest vintage of its forecast and of each model, its second the older
// vintages. A run stopped halfway (by request count, not by a clock) leaves every site its newest
// data, and the next run completes the warehouse to what a clean run gives, reading again only
// what was in flight when it stopped, as many requests as `efsync sync --plan` said.
import { join } from 'node:path';
import { createLogger } from '../src/log.js';
import { silentProgress } from '../src/progress.js';
import { runJob } from '../src/runner/run.js';
import syncJob from '../jobs/sync.js';
import { describe, expect, it } from 'vitest';
import { planSync } from '../src/sync/plan.js';
import { REQUESTS_PER_SITE } from '../src/sync/run.js';
import { formatExactInstant } from '../src/time.js';
import { clientFor, emuForFile, NOW, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const SITES = 6;
const CONCURRENCY = 4;

const served = emuForFile({ sites: SITES });

/** Per site, its newest forecast vintage: issue time, rows and their hash. */
const NEWEST_FORECASTS = `
SELECT site_id, epoch_us(update_time) AS issue, count(*) AS n, md5(string_agg(line, '\n' ORDER BY line)) AS hash
  FROM (SELECT site_id, update_time, f::VARCHAR AS line FROM forecasts f
         WHERE (site_id, update_time) IN (SELECT (site_id, max(update_time)) FROM forecasts GROUP BY site_id))
 GROUP BY site_id, update_time ORDER BY site_id`;

/** Per model, its newest output vintage: as_of, rows and their hash. */
const NEWEST_OUTPUTS = `
SELECT site_id, model_id, epoch_us(as_of) AS as_of, count(*) AS n, md5(string_agg(line, '\n' ORDER BY line)) AS hash
  FROM (SELECT site_id, model_id, as_of, o::VARCHAR AS line FROM model_outputs o
         WHERE (site_id, model_id, as_of) IN
               (SELECT (site_id, model_id, max(as_of)) FROM model_outputs GROUP BY site_id, model_id))
 GROUP BY site_id, model_id, as_of ORDER BY site_id, model_id`;

const count = async (db: string, sql: string) => Number((await query<{ n: bigint }>(db, sql))[0].n);

describe('a sync stopped at half its requests', () => {
  it('leaves every site its newest forecast and output vintages and its actuals; the next sync completes it exactly', async () => {
    const { emu } = served;
    const dir = tempDir();
    const sync = { concurrency: CONCURRENCY };
    const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb'), sync });
    const before = emu.stats().requests;
    expect((await runSync(clean)).status).toBe('ok');
    const usual = emu.stats().requests - before;

    // The run's signal aborted as its request number usual / 2 arrives: what a timeout at half
    // its usual time does, without a clock.
    const cut = testConfig({ dir, url: emu.url, db: join(dir, 'cut.duckdb'), sync });
    const abort = new AbortController();
    const start = emu.stats().requests;
    emu.setFaults({
      faultHook: ({ counter }) => {
        if (counter - start === Math.floor(usual / 2)) abort.abort(new Error('timed out'));
        return undefined;
      },
    });
    const stopped = await runJob(syncJob, {
      config: cut,
      now: () => NOW,
      signal: abort.signal,
      log: createLogger({ level: 'silent' }),
    });
    emu.setFaults({ faultHook: null });
    const cutRequests = emu.stats().requests - start;
    expect(stopped.status).toBe('interrupted');

    const [cleanDb, cutDb] = [clean.warehouse.path, cut.warehouse.path];
    // It was cut short: older vintages are missing.
    expect(await count(cutDb, 'SELECT count(DISTINCT (site_id, update_time)) AS n FROM forecasts')).toBeLessThan(
      await count(cleanDb, 'SELECT count(DISTINCT (site_id, update_time)) AS n FROM forecasts'),
    );
    // Yet every site has its newest vintages, whole, and all its actuals.
    const newest = await query(cleanDb, NEWEST_FORECASTS);
    expect(newest).toHaveLength(SITES);
    expect(await query(cutDb, NEWEST_FORECASTS)).toEqual(newest);
    expect(await query(cutDb, NEWEST_OUTPUTS)).toEqual(await query(cleanDb, NEWEST_OUTPUTS));
    const actuals = ['actuals'] as const;
    expect(await tableHashes(cutDb, actuals)).toEqual(await tableHashes(cleanDb, actuals));
    // What it did not read is pending, and nothing was given up.
    expect(await count(cutDb, "SELECT count(*) AS n FROM vintage_reads WHERE status = 'pending'")).toBeGreaterThan(0);
    expect(await count(cutDb, "SELECT count(*) AS n FROM vintage_reads WHERE status <> 'pending'")).toBe(0);

    // The plan counts what the next sync then sends: the pending vintages included.
    const client = clientFor(emu);
    const plan = await planSync({
      client,
      warehousePath: cutDb,
      log: createLogger({ level: 'silent' }),
      now: NOW,
      resources: cut.sync.resources,
      sync: cut.sync,
    }).finally(() => client.close());

    // The next sync completes the backfill: no vintage missing, none twice.
    const rerunStart = emu.stats().requests;
    expect((await runSync(cut)).status).toBe('ok');
    const rerunRequests = emu.stats().requests - rerunStart;
    expect(rerunRequests).toBe(plan.total);
    expect(await tableHashes(cutDb)).toEqual(await tableHashes(cleanDb));
    expect(await count(cutDb, 'SELECT count(*) AS n FROM vintage_reads')).toBe(0);
    // It read again only the listings (the sites; each site's models and forecast updates), the
    // actuals, and the reads in flight when the run stopped (each site's resources, so many at once).
    const listings = 1 + SITES * 3;
    const inFlight = CONCURRENCY * 2 * REQUESTS_PER_SITE;
    expect(cutRequests + rerunRequests - usual).toBeLessThanOrEqual(listings + inFlight);
  }, 60_000);
});

describe("a site's newest vintage failing in the first pass", () => {
  it('costs that vintage alone: the older ones land in the second pass, the newest stays pending and lands next run', async () => {
    const { emu } = served;
    const dir = tempDir();
    const clean = testConfig({ dir, url: emu.url, db: join(dir, 'clean.duckdb') });
    expect((await runSync(clean)).status).toBe('ok');
    const client = clientFor(emu);
    const [site] = [...emu.store.sites.keys()].sort();
    const updates = await client.getSiteForecastUpdates(site).finally(() => client.close());
    const newest = Math.max(...updates.filter((issue) => issue <= NOW));
    emu.setFaults({ failingVintages: [`${site}@${formatExactInstant(newest)}`] });
    const faulty = testConfig({ dir, url: emu.url, db: join(dir, 'faulty.duckdb') });
    const run = await runSync(faulty);
    emu.setFaults({ failingVintages: [] });
    expect(run.status).toBe('partial');
    expect(run.failures.map((f) => [f.siteId, f.item])).toEqual([[site, `as_of ${formatExactInstant(newest)}`]]);
    const db = faulty.warehouse.path;
    expect(
      await query<{ issue: bigint; status: string; attempts: number }>(
        db,
        'SELECT epoch_us(issue) AS issue, status, attempts FROM vintage_reads',
      ),
    ).toEqual([{ issue: BigInt(Math.round(newest * 1000)), status: 'pending', attempts: 1 }]);
    // Its older vintages landed in the second pass.
    const perIssue = `SELECT count(DISTINCT update_time) AS n FROM forecasts WHERE site_id = '${site}'`;
    expect(await count(db, perIssue)).toBeGreaterThanOrEqual((await count(clean.warehouse.path, perIssue)) - 1);
    expect((await runSync(faulty)).status).toBe('ok');
    expect(await tableHashes(db)).toEqual(await tableHashes(clean.warehouse.path));
    expect(await count(db, 'SELECT count(*) AS n FROM vintage_reads')).toBe(0);
  }, 60_000);
});

describe('the older pass under a small row budget', () => {
  it("reads a site's older vintages a few at a time, and stores exactly what a run of whole sites stores", async () => {
    const { emu } = served;
    const dir = tempDir();
    const whole = testConfig({ dir, url: emu.url, db: join(dir, 'whole.duckdb') });
    expect((await runSync(whole)).status).toBe('ok');
    // 4 sites in flight within 1,600 rows, at 193 points a vintage (2 days of 15 minutes): 2 a piece
    const sync = { concurrency: CONCURRENCY, rows_in_memory: 1_600 };
    const small = testConfig({ dir, url: emu.url, db: join(dir, 'small.duckdb'), sync });
    const bars: Record<string, number> = {};
    const progress = {
      ...silentProgress,
      start: (total: number, label: string) => {
        bars[label] = total;
      },
    };
    const run = await runJob(syncJob, {
      config: small,
      now: () => NOW,
      log: createLogger({ level: 'silent' }),
      progress,
    });
    expect(run.status).toBe('ok');
    // more pieces than a forecast and an output piece a site
    expect(bars['older vintages']).toBeGreaterThan(SITES * 2 * 4);
    expect(await tableHashes(small.warehouse.path)).toEqual(await tableHashes(whole.warehouse.path));
  }, 60_000);
});
