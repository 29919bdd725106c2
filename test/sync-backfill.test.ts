// --from/--to backfills a historical window: one as_of per UTC day, which yields the day-ahead
// vintages of those days, and the actuals of the window; the incremental cursor stays put.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../src/api/client.js';
import type { SiteResponse } from '../src/api/schemas.js';
import type { LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import type { RunResult } from '../src/runner/run.js';
import { DAY, startOfUtcDay } from '../src/time.js';
import { clientFor, emulator, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

const FROM = startOfUtcDay(NOW) - 6 * DAY;
const TO = startOfUtcDay(NOW) - 2 * DAY;
/** The UTC days whose day-ahead vintage (issued the day before) the backfill reads. */
const DAYS = [1, 2, 3].map((n) => FROM + n * DAY);

let emu: Emulator;
let client: ServiceClient;
let config: LoadedConfig;
let sites: SiteResponse[];
let stateBefore: unknown[];
let backfill: RunResult;

beforeAll(async () => {
  emu = await emulator({ sites: 3 });
  client = clientFor(emu);
  sites = await client.listSites();
  // A first sync that reaches back one day only, so the backfilled days are new.
  config = testConfig({ dir: tempDir(), url: emu.url, sync: { initial_history: '1d' } });
  expect((await runSync(config)).status).toBe('ok');
  stateBefore = await cursors();
  backfill = await runSync(config, { from: FROM, to: TO, only: ['forecasts', 'outputs', 'actuals'] });
}, 120_000);

/**
 * Of `day`'s valid times stored in `table` for `column` = `key`: how many there are, and how many
 * have a vintage issued (`issued`) on the day before.
 */
async function dayAheadPoints(
  table: 'forecasts' | 'model_outputs',
  issued: 'update_time' | 'as_of',
  column: 'site_id' | 'model_id',
  key: string,
  day: number,
): Promise<{ points: number; dayAhead: number }> {
  const [row] = await query<{ points: bigint; day_ahead: bigint }>(
    config.warehouse.path,
    `SELECT count(DISTINCT valid_time) AS points,
            count(DISTINCT valid_time) FILTER (WHERE ${issued} >= make_timestamptz($4 * 1000)
                                                 AND ${issued} < make_timestamptz($2 * 1000)) AS day_ahead
       FROM ${table}
      WHERE ${column} = $1 AND valid_time >= make_timestamptz($2 * 1000) AND valid_time < make_timestamptz($3 * 1000)`,
    [key, day, day + DAY, day - DAY],
  );
  return { points: Number(row.points), dayAhead: Number(row.day_ahead) };
}

/** Every sync state's cursor: where each site and resource got, and which run wrote it. */
function cursors(): Promise<unknown[]> {
  return query(
    config.warehouse.path,
    'SELECT site_id, resource, synced_to, last_as_of, updated_at, run_id FROM sync_state ORDER BY ALL',
  );
}

afterAll(async () => {
  await client?.close();
  await emu?.close();
});

describe('a backfill with --from/--to', () => {
  it('ends ok, writes rows and leaves the sync state where it was', async () => {
    expect(backfill.status).toBe('ok');
    expect(backfill.rows.forecasts).toBeGreaterThan(0);
    expect(backfill.rows.model_outputs).toBeGreaterThan(0);
    expect(backfill.summary).toContain('sync state advanced for 0 site resource(s)');
    expect(await cursors()).toEqual(stateBefore);
    // The actuals it rewrote may differ from what the last incremental read found: the next one merges in full.
    const digests = await query<{ n: bigint }>(
      config.warehouse.path,
      "SELECT count(*) AS n FROM sync_state WHERE resource = 'actuals' AND digest IS NOT NULL",
    );
    expect(Number(digests[0].n)).toBe(0);
  });

  it('yields the day-ahead forecast of every site for every day of the window', async () => {
    // Valid times label the beginning of their interval, so day D is [D, D + 1 day); its day-ahead
    // vintage is the one issued on the day before, which the as_of at 00:00 of D returns.
    for (const site of sites) {
      for (const day of DAYS) {
        const { points, dayAhead } = await dayAheadPoints('forecasts', 'update_time', 'site_id', site.site_id, day);
        expect(points).toBeGreaterThanOrEqual(24);
        expect(dayAhead, `site ${site.name}, day ${new Date(day).toISOString()}`).toBe(points);
      }
    }
  });

  it('stores, for each model and day, a vintage issued the day before covering every valid time of the day', async () => {
    for (const model of await client.listSiteModels(sites[0].site_id)) {
      for (const day of DAYS) {
        const { points, dayAhead } = await dayAheadPoints('model_outputs', 'as_of', 'model_id', model.id, day);
        expect(points).toBeGreaterThanOrEqual(24);
        expect(dayAhead, `${model.name}, day ${new Date(day).toISOString()}`).toBe(points);
      }
    }
  });

  it('stores the actuals of the window, both of its ends included', async () => {
    const site = sites[0];
    const served = await client.getSiteActuals(site.site_id, { start: FROM, end: TO });
    expect([served.valid_time[0], served.valid_time.at(-1)]).toEqual([FROM, TO]);
    const stored = await query<{ n: bigint }>(
      config.warehouse.path,
      'SELECT count(*) AS n FROM actuals WHERE site_id = $1 AND valid_time >= make_timestamptz($2 * 1000) AND valid_time <= make_timestamptz($3 * 1000)',
      [site.site_id, FROM, TO],
    );
    expect(Number(stored[0].n)).toBe(served.valid_time.length);
  });
});
