// Other actuals series beside power: with sync.actual_types [power, availability], the sync reads
// each type (Get Site Actuals with `type`), power into `actuals` and availability into
// `actuals_by_type`, each with its own sync state; a rerun writes nothing; a revised value keeps
// its old one in `actual_revisions_by_type`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../src/api/client.js';
import type { LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import { formatInstant, HOUR } from '../src/time.js';
import { clientFor, emulator, NOW, query, runSync, tempDir, testConfig, totalRows } from './sync-support.js';

let later = NOW;
let emu: Emulator;
let client: ServiceClient;
let config: LoadedConfig;
let siteId: string;

/** Availability (a share) at the quarter hours of the two hours before NOW. */
const POINTS = Array.from({ length: 8 }, (_, i) => ({
  valid_time: formatInstant(NOW - 2 * HOUR + (i + 1) * 15 * 60_000),
  value: i % 2 === 0 ? 1 : 0.5,
}));

beforeAll(async () => {
  emu = await emulator({ sites: 1, now: () => later });
  client = clientFor(emu);
  [{ site_id: siteId }] = await client.listSites();
  await client.uploadSiteActuals(siteId, { type: 'availability', data: POINTS });
  config = testConfig({
    dir: tempDir(),
    url: emu.url,
    sync: { initial_history: '1d', actual_types: ['power', 'availability'] },
  });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await emu?.close();
});

describe('actuals of other series types', () => {
  it('stores power in actuals and availability in actuals_by_type, each with its sync state', async () => {
    const run = await runSync(config, { only: ['sites', 'actuals'] }, NOW);
    expect(run.status).toBe('ok');
    expect(run.rows.actuals).toBeGreaterThan(90);
    expect(run.rows.actuals_by_type).toBe(8);
    const stored = await query<{ type: string; t: string; value: number }>(
      config.warehouse.path,
      `SELECT type, strftime(valid_time AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') AS t, value FROM actuals_by_type ORDER BY valid_time`,
    );
    expect(stored).toEqual(POINTS.map((p) => ({ type: 'availability', t: p.valid_time, value: p.value })));
    const power = await query<{ n: bigint }>(
      config.warehouse.path,
      'SELECT count(*) AS n FROM actuals WHERE value IN (0.5, 1)',
    );
    expect(Number(power[0].n)).toBeLessThan(8); // the power series is the metered truth, not the availability
    const states = await query<{ resource: string }>(
      config.warehouse.path,
      'SELECT resource FROM sync_state ORDER BY resource',
    );
    expect(states.map((s) => s.resource)).toEqual(['actuals', 'actuals:availability']);
  });

  it('a rerun at the same clock writes 0 rows', async () => {
    const rerun = await runSync(config, { only: ['actuals'] }, NOW);
    expect(rerun.status).toBe('ok');
    expect(totalRows(rerun)).toBe(0);
  });

  it('a revised and a new value: the new one stored, the revised one with its old value kept', async () => {
    later = NOW + HOUR;
    await client.uploadSiteActuals(siteId, {
      type: 'availability',
      data: [
        { valid_time: POINTS[7].valid_time, value: 0.25 },
        { valid_time: formatInstant(NOW + 30 * 60_000), value: 1 },
      ],
    });
    const run = await runSync(config, { only: ['actuals'] }, later);
    expect(run.status).toBe('ok');
    expect(run.rows).toMatchObject({ actuals_by_type: 2, actual_revisions_by_type: 1 });
    const revisions = await query<{ old_value: number; new_value: number }>(
      config.warehouse.path,
      'SELECT old_value, new_value FROM actual_revisions_by_type',
    );
    expect(revisions).toEqual([{ old_value: POINTS[7].value, new_value: 0.25 }]);
    const count = await query<{ n: bigint }>(
      config.warehouse.path,
      "SELECT count(*) AS n FROM actuals_by_type WHERE type = 'availability'",
    );
    expect(Number(count[0].n)).toBe(9);
  });

  it('refuses a series type that is no tag, naming the key', () => {
    expect(() => testConfig({ dir: tempDir(), url: emu.url, sync: { actual_types: ['power', 'wind speed'] } })).toThrow(
      /actual_types/,
    );
  });
});
