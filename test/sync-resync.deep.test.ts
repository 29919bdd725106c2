// A resync that finds what the last run stored writes no data: each actuals read is compared with
// what the last one found (its digest, kept with the sync state), and the sync state of every
// site resource that read nothing new moves in one statement after the series. A value changed
// on the service in between is still written, also when the run that read it was killed first;
// a model added in between is stored with its type (the filtered model lists are asked for it).
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../src/api/client.js';
import type { SiteResponse } from '../src/api/schemas.js';
import type { LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import { HOUR, MINUTE } from '../src/time.js';
import { writerPathOf } from '../src/warehouse/warehouse.js';
import {
  clientFor,
  DATA_TABLES,
  emulator,
  NOW,
  query,
  runSync,
  tableHashes,
  tempDir,
  testConfig,
  writeConfigFile,
} from './sync-support.js';
import { builtChild } from './built.js';

/** The emulator's clock, moved by each test: every sync here runs before the quarter hour ending at NOW + 5 minutes. */
let clock = NOW;
let emu: Emulator;
let client: ServiceClient;
let sites: SiteResponse[];
let dir: string;
let config: LoadedConfig;
let db: string;

beforeAll(async () => {
  emu = await emulator({ sites: 3, now: () => clock });
  client = clientFor(emu);
  sites = await client.listSites();
  dir = tempDir();
  config = testConfig({ dir, url: emu.url });
  db = config.warehouse.path;
  expect((await runSync(config, {}, NOW)).status).toBe('ok');
}, 120_000);

afterAll(async () => {
  await client?.close();
  await emu?.close();
});

/** A sync at `at`, with the emulator's clock there too. */
function syncAt(at: number) {
  clock = at;
  return runSync(config, {}, at);
}

/** The stored power value of a site at a valid time, and its revisions. */
async function stored(siteId: string, validTime: number): Promise<{ value: number | null; revisions: number[] }> {
  const [row] = await query<{ value: number | null }>(
    db,
    'SELECT value FROM actuals WHERE site_id = $1 AND epoch_ms(valid_time) = $2',
    [siteId, validTime],
  );
  const revisions = await query<{ new_value: number }>(
    db,
    'SELECT new_value FROM actual_revisions WHERE site_id = $1 AND epoch_ms(valid_time) = $2 ORDER BY replaced_at',
    [siteId, validTime],
  );
  return { value: row?.value ?? null, revisions: revisions.map((r) => r.new_value) };
}

/** Changes one power value on the service (an upload replaces the value at its valid time). */
async function changeOnService(siteId: string, validTime: number, value: number): Promise<void> {
  await client.uploadSiteActuals(siteId, { data: [{ valid_time: new Date(validTime).toISOString(), value }] });
}

describe('a resync with nothing new on the service', () => {
  it('writes no data row, and moves every sync state to its clock', async () => {
    const before = await tableHashes(db, DATA_TABLES);
    const at = NOW + MINUTE;
    const resync = await syncAt(at);
    expect(resync.status).toBe('ok');
    expect(resync.rows).toEqual({});
    expect(resync.summary).toContain('rows written: none (nothing new)');
    expect(resync.summary).toContain('sync state advanced for 9 site resource(s)');
    expect(await tableHashes(db, DATA_TABLES)).toEqual(before);
    // Nothing to publish: the writer file holds the states.
    const states = await query<{ synced_to: bigint; digests: bigint }>(
      writerPathOf(db),
      "SELECT DISTINCT epoch_ms(synced_to) AS synced_to, count(digest) FILTER (WHERE resource = 'actuals') OVER () AS digests FROM sync_state",
    );
    expect(states).toEqual([{ synced_to: BigInt(at), digests: 3n }]);
  });

  it("a run whose clock is behind the last run's moves no sync state, twice over", async () => {
    for (const behind of [NOW + 30_000, NOW + 40_000]) {
      const resync = await syncAt(behind);
      expect(resync.rows).toEqual({});
      expect(resync.summary).toContain('sync state advanced for 0 site resource(s)');
    }
  });
});

describe('a value changed on the service between two syncs', () => {
  it('is stored by the next sync, with its revision', async () => {
    const site = sites[0].site_id;
    const validTime = NOW - HOUR - 10 * MINUTE; // 13:00, a quarter hour of the series
    const old = await stored(site, validTime);
    expect(old.value).not.toBeNull();
    await changeOnService(site, validTime, 1234.5);

    const resync = await syncAt(NOW + 2 * MINUTE);
    expect(resync.status).toBe('ok');
    expect(resync.rows).toEqual({ actuals: 1, actual_revisions: 1 });
    expect(await stored(site, validTime)).toEqual({ value: 1234.5, revisions: [1234.5] });
    expect(await stored(sites[1].site_id, validTime)).toEqual({ value: expect.any(Number), revisions: [] });

    // And the sync after it finds nothing new again.
    expect((await syncAt(NOW + 3 * MINUTE)).rows).toEqual({});
  });

  it('is stored by the rerun of a sync killed before its merge', async () => {
    const site = sites[1].site_id;
    const validTime = NOW - 2 * HOUR - 10 * MINUTE;
    await changeOnService(site, validTime, 4321);
    const at = NOW + 4 * MINUTE;
    clock = at;
    const killed = await syncChild(at, 'staging');
    expect(killed.signal).toBe('SIGKILL');
    expect((await stored(site, validTime)).value).not.toBe(4321);

    const rerun = await syncAt(at);
    expect(rerun.status).toBe('ok');
    expect(rerun.rows).toEqual({ actuals: 1, actual_revisions: 1 });
    expect(await stored(site, validTime)).toEqual({ value: 4321, revisions: [4321] });
  });
});

describe('a value deleted on the service, then issued again', () => {
  it('is kept while deleted, and the value issued again is stored', async () => {
    const site = sites[2].site_id;
    const validTime = NOW - 3 * HOUR - 10 * MINUTE;
    const old = await stored(site, validTime);
    expect(old.value).not.toBeNull();
    await client.deleteSiteActuals(site, { start: validTime, end: validTime });
    // The warehouse keeps what it stored: a read without the value writes nothing.
    expect((await syncAt(NOW + 4 * MINUTE + 20_000)).rows).toEqual({});
    expect((await stored(site, validTime)).value).toBe(old.value);

    await changeOnService(site, validTime, 777);
    const resync = await syncAt(NOW + 4 * MINUTE + 40_000);
    expect(resync.rows).toEqual({ actuals: 1, actual_revisions: 1 });
    expect(await stored(site, validTime)).toEqual({ value: 777, revisions: [777] });
  });
});

describe('a model added on the service between two syncs', () => {
  it('is stored with its type, which the service lists it under', async () => {
    const site = sites.find((s) => s.type === 'load');
    expect(site).toBeDefined();
    const { site_id, name, latitude, longitude, settings } = site!;
    await client.updateSite(site_id, {
      type: 'load',
      name,
      latitude,
      longitude,
      settings: { ...settings, quantileModels: [0.5] },
    });
    const resync = await syncAt(NOW + 4 * MINUTE + 50_000);
    expect(resync.status).toBe('ok');
    expect(resync.rows.models).toBe(1);
    const models = await query<{ name: string; model_type: string; quantile: number | null }>(
      db,
      'SELECT name, model_type, quantile FROM models WHERE site_id = $1 ORDER BY name',
      [site_id],
    );
    expect(models).toEqual([
      { name: 'ai', model_type: 'ai', quantile: null },
      { name: 'physical', model_type: 'physical', quantile: null },
      { name: 'quantile_p50', model_type: 'ai', quantile: 0.5 },
    ]);
  });
});

/** A sync at `at` in a child process (test/sync-child.ts), killed at the named fault point (src/fault.ts). */
function syncChild(at: number, faultPoint: string): Promise<{ code: number | null; signal: string | null }> {
  const configFile = writeConfigFile(tempDir(), { dir, url: emu.url, db });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [builtChild('test/sync-child.ts'), configFile, String(at)], {
      stdio: ['ignore', 'ignore', 'ignore'],
      env: { ...process.env, EFSYNC_FAULT_POINT: faultPoint },
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
}
