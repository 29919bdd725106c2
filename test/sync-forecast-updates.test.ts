// The site forecast is synced vintage by vintage from the service's list of issue times (Get Site
// Forecast Updates): with an AI model issuing every hour, every hourly vintage lands, intraday
// ones included; a rerun writes nothing; a later clock reads only the vintages issued since. Each
// model's own output likewise: every vintage it issued.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import { HOUR, startOfUtcDay } from '../src/time.js';
import { clientFor, emulator, NOW, query, runSync, tempDir, testConfig, totalRows } from './sync-support.js';

let later = NOW;
let emu: Emulator;
let config: LoadedConfig;
const forecastReads: number[] = [];

beforeAll(async () => {
  emu = await emulator({
    sites: 1,
    now: () => later,
    schedules: { ai: '0 * * * *' },
    faultHook: ({ method, path }) => {
      if (method === 'GET' && path.endsWith('/forecast')) forecastReads.push(later);
      return undefined;
    },
  });
  config = testConfig({ dir: tempDir(), url: emu.url, sync: { initial_history: '1d' } });
}, 60_000);

afterAll(async () => {
  await emu?.close();
});

/** The distinct issue times stored for the AI model, as epoch ms. */
async function aiVintages(): Promise<number[]> {
  const rows = await query<{ t: bigint }>(
    config.warehouse.path,
    "SELECT DISTINCT epoch_ms(update_time) AS t FROM forecasts WHERE model_name = 'ai' ORDER BY t",
  );
  return rows.map((row) => Number(row.t));
}

describe('forecasts from Forecast Updates', () => {
  it('stores every hourly vintage of the last day, intraday ones included, one read per issue time', async () => {
    const first = await runSync(config, { only: ['sites', 'forecasts'] }, NOW);
    expect(first.status).toBe('ok');
    const client = clientFor(emu);
    const [site] = await client.listSites();
    const listed = (await client.getSiteForecastUpdates(site.site_id)).filter((t) => t >= NOW - 24 * HOUR && t <= NOW);
    await client.close();
    expect(forecastReads).toHaveLength(listed.length);

    // Every hour of the last day (initial_history 1d), today's included: ..., 00:00, 01:00, ..., 14:00 (NOW is 14:10).
    const hourly = Array.from({ length: 24 }, (_, i) => startOfUtcDay(NOW) + 14 * HOUR - (23 - i) * HOUR);
    expect(await aiVintages()).toEqual(hourly);
    const today = (await aiVintages()).filter((t) => t >= startOfUtcDay(NOW));
    expect(today).toHaveLength(15);
  });

  it('a rerun at the same clock reads no vintage and writes 0 rows', async () => {
    forecastReads.length = 0;
    const rerun = await runSync(config, { only: ['sites', 'forecasts'] }, NOW);
    expect(rerun.status).toBe('ok');
    expect(totalRows(rerun)).toBe(0);
    expect(forecastReads).toHaveLength(0);
  });

  it('three hours later: only the vintages issued since are read, each stored beside the older ones', async () => {
    const before = await aiVintages();
    forecastReads.length = 0;
    later = NOW + 3 * HOUR;
    const run = await runSync(config, { only: ['forecasts'] }, later);
    expect(run.status).toBe('ok');
    expect(run.rows.forecasts).toBeGreaterThan(0);
    const after = await aiVintages();
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length)).toEqual([15, 16, 17].map((h) => startOfUtcDay(NOW) + h * HOUR));
    // Issued since: the AI model at 15:00, 16:00 and 17:00; the physical model (every 6 hours) and
    // the quantile models (at :15 every 6 hours) issue next at 18:00 and 18:15, after the clock.
    expect(forecastReads).toHaveLength(3);
  });

  it("stores every hourly vintage of the AI model's own output, and the physical model's every six hours", async () => {
    const run = await runSync(config, { only: ['models', 'outputs'] }, later);
    expect(run.status).toBe('ok');
    const asOfs = async (name: string) =>
      (
        await query<{ t: bigint }>(
          config.warehouse.path,
          'SELECT DISTINCT epoch_ms(o.as_of) AS t FROM model_outputs o JOIN models m USING (model_id) WHERE m.name = $1 ORDER BY t',
          [name],
        )
      ).map((row) => Number(row.t));
    const hours = (times: number[]) => times.map((t) => (t - startOfUtcDay(NOW)) / HOUR);
    // initial_history 1d back from 17:10: from 18:00 the day before to 17:00.
    expect(hours(await asOfs('ai'))).toEqual(Array.from({ length: 24 }, (_, i) => i - 6));
    expect(hours(await asOfs('physical'))).toEqual([-6, 0, 6, 12]);
    expect(totalRows(await runSync(config, { only: ['outputs'] }, later))).toBe(0);
  });
});
