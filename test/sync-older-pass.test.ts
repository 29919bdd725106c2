// The older pass reads a site's pending vintages from vintage_reads when its turn comes, a piece
// at a time (docs/sync.md, "Vintages one by one"), so a run holds no site's list but those in
// flight (#54). A run stopped right after its newest pass leaves every deferred vintage pending,
// each key once (the table has no key index since migration 032); the next run, under a row
// budget that cuts each site's list into many pieces and reads the lists a few sites at a time,
// reads them all, each once, as many requests as the plan said, and stores exactly what a run of
// whole sites stores.
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import syncJob from '../jobs/sync.js';
import { createLogger } from '../src/log.js';
import { silentProgress } from '../src/progress.js';
import { runJob } from '../src/runner/run.js';
import { planSync } from '../src/sync/plan.js';
import { clientFor, emuForFile, NOW, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const SITES = 3;

const served = emuForFile({ sites: SITES });

const count = async (db: string, sql: string) => Number((await query<{ n: bigint }>(db, sql))[0].n);

/** A progress that records each bar's total and calls `started` with its label. */
function progressOf(bars: Record<string, number>, started: (label: string) => void = () => undefined) {
  return {
    ...silentProgress,
    start: (total: number, label: string) => {
      bars[label] = total;
      started(label);
    },
  };
}

describe('pending vintages of an earlier run, many pieces a site', () => {
  it('are read from vintage_reads a piece at a time, each once, as the plan said, to the same warehouse', async () => {
    const { emu } = served;
    const dir = tempDir();
    const whole = testConfig({ dir, url: emu.url, db: join(dir, 'whole.duckdb') });
    expect((await runSync(whole)).status).toBe('ok');

    // 2 sites in flight within 800 rows, at 193 points a vintage: 2 vintages a piece
    const sync = { concurrency: 2, rows_in_memory: 800 };
    const small = testConfig({ dir, url: emu.url, db: join(dir, 'small.duckdb'), sync });
    const abort = new AbortController();
    const stopped = await runJob(syncJob, {
      config: small,
      now: () => NOW,
      signal: abort.signal,
      log: createLogger({ level: 'silent' }),
      progress: progressOf({}, (label) => {
        if (label === 'older vintages') abort.abort(new Error('stopped after the newest pass'));
      }),
    });
    expect(stopped.status).toBe('interrupted');
    const db = small.warehouse.path;
    const pending = await count(db, "SELECT count(*) AS n FROM vintage_reads WHERE status = 'pending'");
    expect(pending).toBeGreaterThan(SITES * 2 * 4);
    // more than one read of the lists takes (a quarter of rows_in_memory): read a group of sites at a time
    expect(pending).toBeGreaterThan(sync.rows_in_memory / 4);
    expect(await count(db, 'SELECT count(DISTINCT (site_id, resource, model_id, issue)) AS n FROM vintage_reads')).toBe(
      pending,
    );
    expect(
      await count(
        db,
        "SELECT count(*) AS n FROM duckdb_constraints() WHERE table_name = 'vintage_reads' AND constraint_type = 'PRIMARY KEY'",
      ),
    ).toBe(0);

    const client = clientFor(emu);
    const plan = await planSync({
      client,
      warehousePath: db,
      log: createLogger({ level: 'silent' }),
      now: NOW,
      resources: small.sync.resources,
      sync: small.sync,
    }).finally(() => client.close());
    const bars: Record<string, number> = {};
    const before = emu.stats().requests;
    const logFile = join(dir, 'next.log');
    const fd = openSync(logFile, 'w');
    const next = await runJob(syncJob, {
      config: small,
      now: () => NOW,
      log: createLogger({ level: 'debug', destination: fd }),
      progress: progressOf(bars),
    }).finally(() => closeSync(fd));
    expect(next.status).toBe('ok');
    // The pieces of the sites whose lists are read together are taken in turn, a piece of each
    // site and resource and then the next, so that the loader merges many sites' pieces at once.
    // Taken site by site, the pieces that land would change site twice; here the lists read
    // together are of one to three sites (a read takes 200 vintages), so a quarter at least.
    const landed = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes('"msg":"site synced"'))
      .map((line) => JSON.parse(line).siteId as string)
      .slice(SITES);
    const switches = landed.filter((site, i) => i > 0 && site !== landed[i - 1]).length;
    expect(landed.length).toBeGreaterThan(SITES * 4);
    expect(switches).toBeGreaterThan(landed.length / 4);
    expect(emu.stats().requests - before).toBe(plan.total);
    // every pending vintage in pieces of two, each site's resource its own
    expect(bars['older vintages']).toBeGreaterThanOrEqual(Math.ceil(pending / 2));
    expect(bars['older vintages']).toBeLessThanOrEqual(Math.ceil(pending / 2) + SITES * 2);
    expect(await tableHashes(db)).toEqual(await tableHashes(whole.warehouse.path));
    expect(await count(db, 'SELECT count(*) AS n FROM vintage_reads')).toBe(0);
  }, 120_000);
});
