// A full sync of the emulator into a temporary warehouse: what lands is exactly what the
// service serves for the planned windows and vintages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../src/api/client.js';
import type { SiteResponse } from '../src/api/schemas.js';
import type { Emulator } from '../src/emulator/server.js';
import type { RunResult } from '../src/runner/run.js';
import { DAY, startOfUtcDay } from '../src/time.js';
import { clientFor, emulator, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

const HORIZON = 2 * DAY;
const HISTORY = 3 * DAY;
/** True when the cron schedule (UTC, minute and hour fields as the emulator's models use them) fires at `t`. */
function cronMatches(schedule: string, t: number): boolean {
  const [minute, hour] = schedule.split(' ');
  const date = new Date(t);
  const field = (spec: string, value: number) =>
    spec === '*' || (spec.startsWith('*/') ? value % Number(spec.slice(2)) === 0 : Number(spec) === value);
  return field(minute, date.getUTCMinutes()) && field(hour, date.getUTCHours());
}

/** The site forecast's issue times the sync reads: every one the service lists within initial_history. */
async function issueTimes(siteId: string): Promise<number[]> {
  return (await client.getSiteForecastUpdates(siteId)).filter((t) => t >= NOW - HISTORY && t <= NOW);
}

let emu: Emulator;
let client: ServiceClient;
let db: string;
let result: RunResult;
let sites: SiteResponse[];

beforeAll(async () => {
  emu = await emulator({ sites: 4 });
  client = clientFor(emu);
  const dir = tempDir();
  const config = testConfig({ dir, url: emu.url });
  db = config.warehouse.path;
  result = await runSync(config);
  sites = await client.listSites();
}, 120_000);

afterAll(async () => {
  await client?.close();
  await emu?.close();
});

/** Every row a set of reads returns, keyed; a key read twice must carry the same value. */
function union<T>(rows: [string, T][]): Map<string, T> {
  const map = new Map<string, T>();
  for (const [key, value] of rows) {
    if (map.has(key)) expect(map.get(key)).toEqual(value);
    map.set(key, value);
  }
  return map;
}

describe('a first sync of the emulator', () => {
  it('ends ok with exit code 0 and reports rows per table', () => {
    expect(result.status).toBe('ok');
    expect(result.exitCode).toBe(0);
    expect(result.failures).toEqual([]);
    for (const table of ['sites', 'models', 'forecasts', 'model_outputs', 'actuals'])
      expect(result.rows[table]).toBeGreaterThan(0);
    expect(result.summary.join('\n')).toMatch(/4 site/);
  });

  it('stores every site with its assets and nameplate', async () => {
    const stored = await query<{
      site_id: string;
      name: string;
      type: string;
      nameplate_kw: number | null;
      assets: bigint;
    }>(
      db,
      `SELECT s.site_id, s.name, s.type, s.nameplate_kw, (SELECT count(*) FROM site_assets a WHERE a.site_id = s.site_id) AS assets
         FROM sites s ORDER BY s.site_id`,
    );
    expect(stored.map((s) => s.site_id)).toEqual(sites.map((s) => s.site_id).sort());
    for (const site of sites) {
      const row = stored.find((s) => s.site_id === site.site_id)!;
      expect(row.name).toBe(site.name);
      expect(row.type).toBe(site.type);
      expect(Number(row.assets)).toBe(site.assets.length);
      if (site.type === 'solar')
        expect(row.nameplate_kw).toBeCloseTo(site.assets.reduce((sum, a) => sum + (a.capacity ?? 0), 0));
    }
    expect(new Set(stored.map((s) => s.type))).toEqual(new Set(['solar', 'wind', 'load']));
  });

  it('stores every model with serving_active, model type, quantile level, schedule and states', async () => {
    for (const site of sites) {
      const served = await client.listSiteModels(site.site_id, { extra: ['serving_active'] });
      const ai = new Set((await client.listSiteModels(site.site_id, { modelType: 'ai' })).map((m) => m.id));
      const stored = await query<{
        model_id: string;
        name: string;
        serving_active: boolean | null;
        model_type: string | null;
        quantile: number | null;
        schedule_cron: string | null;
        priority: number;
        states: bigint;
      }>(
        db,
        `SELECT m.*, (SELECT count(*) FROM model_states s WHERE s.model_id = m.model_id) AS states FROM models m WHERE site_id = $1`,
        [site.site_id],
      );
      expect(stored.map((m) => m.model_id).sort()).toEqual(served.map((m) => m.id).sort());
      for (const model of served) {
        const row = stored.find((m) => m.model_id === model.id)!;
        expect(row.serving_active).toBe(model.serving_active ?? null);
        expect(row.priority).toBe(model.priority);
        expect(row.schedule_cron).toBe(model.schedule?.value ?? null);
        expect(row.model_type).toBe(ai.has(model.id) ? 'ai' : 'physical');
        expect(Number(row.states)).toBe(model.state.length);
        const quantile = /^quantile_p(\d+)$/.exec(model.name);
        expect(row.quantile).toBe(quantile ? Number(quantile[1]) / 100 : null);
      }
    }
  });

  it('stores exactly the actuals the service serves for the first window', async () => {
    for (const site of sites) {
      const served = await client.getSiteActuals(site.site_id, { start: NOW - HISTORY, end: NOW });
      const stored = await query<{ t: bigint; value: number | null }>(
        db,
        'SELECT epoch_ms(valid_time) AS t, value FROM actuals WHERE site_id = $1 ORDER BY valid_time',
        [site.site_id],
      );
      expect(stored.length).toBeGreaterThan(200);
      expect(stored.map((r) => Number(r.t))).toEqual(served.valid_time);
      expect(stored.map((r) => r.value)).toEqual(served.value);
    }
  });

  it('keeps every forecast vintage: each issue time the service lists, read as of that time', async () => {
    for (const site of sites) {
      const issues = await issueTimes(site.site_id);
      expect(issues.length).toBeGreaterThan(3 * 8); // the AI model alone issues 8 times a day
      const reads = issues.map((asOf) =>
        client.getSiteForecast(site.site_id, { start: asOf, end: asOf + HORIZON, asOf }),
      );
      const expected = union(
        (await Promise.all(reads)).flatMap((s) =>
          s.valid_time.map((t, i): [string, number | null] => [
            `${s.model_name[i]}|${s.model_version[i]}|${s.update_time[i]}|${t}`,
            s.forecast[i],
          ]),
        ),
      );
      const stored = await query<{ key: string; forecast: number | null }>(
        db,
        `SELECT concat_ws('|', model_name, model_version, epoch_ms(update_time), epoch_ms(valid_time)) AS key, forecast
           FROM forecasts WHERE site_id = $1`,
        [site.site_id],
      );
      expect(stored.length).toBe(expected.size);
      for (const row of stored) expect(row.forecast).toBe(expected.get(row.key));
      const vintages = await query<{ t: bigint }>(
        db,
        'SELECT DISTINCT epoch_ms(update_time) AS t FROM forecasts WHERE site_id = $1',
        [site.site_id],
      );
      // Intraday vintages too: every AI issue (at :30, every 3 hours) of today so far.
      const today = vintages
        .map((v) => Number(v.t))
        .filter((t) => t >= startOfUtcDay(NOW))
        .sort((a, b) => a - b);
      expect(today.filter((t) => new Date(t).getUTCMinutes() === 30)).toEqual(
        [0, 3, 6, 9, 12].map((h) => startOfUtcDay(NOW) + h * 3_600_000 + 30 * 60_000),
      );
    }
  });

  it("keeps every model's output by as_of, the vintage's issue time: every vintage the model issued", async () => {
    const site = sites[0];
    const issues = await issueTimes(site.site_id);
    for (const model of await client.listSiteModels(site.site_id)) {
      // The model's own issue times, from its cron schedule: each is among the site's listed ones.
      const own = issues.filter((t) => cronMatches(model.schedule!.value, t));
      expect(own.length).toBeGreaterThanOrEqual(3 * 4);
      const reads = own.map((asOf) => client.getModelOutput(model.id, { start: asOf, end: asOf + HORIZON, asOf }));
      const expected = union(
        (await Promise.all(reads)).flatMap((o) =>
          o.valid_time.map((t, i): [string, number | null] => [`${o.as_of}|${t}`, o.forecast[i]]),
        ),
      );
      const stored = await query<{ key: string; forecast: number | null }>(
        db,
        `SELECT concat_ws('|', epoch_ms(as_of), epoch_ms(valid_time)) AS key, forecast FROM model_outputs WHERE model_id = $1`,
        [model.id],
      );
      expect(stored.length).toBe(expected.size);
      for (const row of stored) expect(row.forecast).toBe(expected.get(row.key));
      const vintages = await query<{ n: bigint }>(
        db,
        'SELECT count(DISTINCT as_of) AS n FROM model_outputs WHERE model_id = $1',
        [model.id],
      );
      expect(Number(vintages[0].n)).toBe(own.length);
    }
  });

  it('records how far each site and resource has synced', async () => {
    const state = await query<{ site_id: string; resource: string; synced_to: bigint; last_as_of: bigint | null }>(
      db,
      'SELECT site_id, resource, epoch_ms(synced_to) AS synced_to, epoch_ms(last_as_of) AS last_as_of FROM sync_state ORDER BY ALL',
    );
    expect(state).toHaveLength(sites.length * 3);
    for (const row of state) {
      expect(Number(row.synced_to)).toBe(NOW);
      // Forecasts: the last issue time read; outputs: the run's clock (every cron fire up to it was read).
      const lastAsOf =
        row.resource === 'actuals' ? null : row.resource === 'outputs' ? NOW : (await issueTimes(row.site_id)).at(-1);
      expect(row.last_as_of === null ? null : Number(row.last_as_of)).toBe(lastAsOf);
    }
  });
});
