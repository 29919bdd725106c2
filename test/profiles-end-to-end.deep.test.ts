// The end-to-end path against both emulator profiles: `rich`, and `docs`, which answers exactly as
// the service's public pages show (no capacity columns, `[{}]` model states, `{value, dateEnd}`
// capacity segments). Sync, capacity plan and apply, and accuracy each complete with exit 0.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import accuracyJob from '../jobs/accuracy.js';
import { FORECAST_FIELDS, MODEL_ITEM_FIELDS, MODEL_OUTPUT_FIELDS, SITE_RESPONSE_FIELDS } from '../src/api/schemas.js';
import { planCapacity } from '../src/capacity/plan.js';
import pushCapacity from '../jobs/push-capacity.js';
import { EMULATOR_PROFILES, type EmulatorProfile } from '../src/emulator/handlers.js';
import type { Emulator } from '../src/emulator/server.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import { API_KEY, clientFor, emulator, NOW, query, runSync, tempDir, testConfig } from './sync-support.js';

describe.each(EMULATOR_PROFILES)('against the %s profile', (profile: EmulatorProfile) => {
  let emu: Emulator;
  const dir = tempDir(`efsync-profile-${profile}-`);

  beforeAll(async () => {
    emu = await emulator({ sites: 4, profile });
  });
  afterAll(async () => {
    await emu?.close();
  });

  it('syncs with exit 0 and rows in every data table', async () => {
    const config = testConfig({ dir, url: emu.url });
    const run = await runSync(config);
    expect(run.failures).toEqual([]);
    expect(run.exitCode).toBe(0);
    const tables = [
      'sites',
      'site_assets',
      'site_capacity',
      'models',
      'model_settings_history',
      'forecasts',
      'model_outputs',
      'actuals',
    ];
    const rows = await query<{ name: string; n: bigint }>(
      config.warehouse.path,
      tables.map((t) => `SELECT '${t}' AS name, count(*) AS n FROM ${t}`).join(' UNION ALL '),
    );
    for (const row of rows) expect(Number(row.n), row.name).toBeGreaterThan(0);
    // Training states carry a state and a time only in the rich profile; the docs' `[{}]` has neither.
    const [states] = await query<{ n: bigint }>(config.warehouse.path, 'SELECT count(*) AS n FROM model_states');
    expect(Number(states.n) > 0).toBe(profile === 'rich');
    const [capacity] = await query<{ n: bigint }>(
      config.warehouse.path,
      'SELECT count(*) AS n FROM forecasts WHERE capacity IS NOT NULL',
    );
    expect(Number(capacity.n) > 0).toBe(profile === 'rich');
  });

  it('answers with the documented fields (docs: exactly them; rich: capacity columns on top)', async () => {
    const get = async (path: string) =>
      (await fetch(`${emu.url}/platform/v2${path}`, { headers: { authorization: API_KEY } })).json() as Promise<any>;
    const [site] = await get('/sites');
    expect(Object.keys(site).sort()).toEqual([...SITE_RESPONSE_FIELDS].sort());
    const [model] = await get(`/sites/${site.site_id}/models`);
    expect(Object.keys(model).sort()).toEqual([...MODEL_ITEM_FIELDS].sort());
    const forecast = await get(`/sites/${site.site_id}/forecast`);
    const output = await get(`/models/${model.id}/output`);
    if (profile === 'docs') {
      expect(Object.keys(forecast).sort()).toEqual(FORECAST_FIELDS.filter((f) => f !== 'capacity').sort());
      expect(Object.keys(output).sort()).toEqual([...MODEL_OUTPUT_FIELDS].sort());
      expect(model.state.every((entry: object) => Object.keys(entry).length === 0)).toBe(true);
      expect(Object.keys(site.capacity_kw_array[0]).sort()).toEqual(['dateEnd', 'value']);
    } else {
      expect(Object.keys(forecast).sort()).toEqual([...FORECAST_FIELDS].sort());
      expect(Object.keys(output).sort()).toEqual([...MODEL_OUTPUT_FIELDS, 'capacity'].sort());
    }
  });

  it('plans and applies a capacity file, and a second plan finds nothing to push', async () => {
    const client = clientFor(emu);
    try {
      const site = (await client.listSites()).find((s) => s.type === 'solar')!;
      const folder = join(dir, 'capacity');
      mkdirSync(folder, { recursive: true });
      writeFileSync(
        join(folder, 'site.yaml'),
        `site: ${site.site_id}\nunit: kW\npoints:\n  - valid_time: 2026-11-20T00:00Z\n    value: 100\n`,
      );
      const base = testConfig({ dir, url: emu.url });
      const config = { ...base, capacity: { ...base.capacity, dir: folder, max_over_nameplate_pct: 1000 } };
      const plan = await planCapacity(folder, client, null, 1000);
      expect(plan.sites).toHaveLength(1);
      const applied = await runJob(pushCapacity, { config, log: createLogger({ level: 'silent' }), now: () => NOW });
      expect(applied.exitCode).toBe(0);
      expect(applied.summary.join('\n')).toContain('1 pushed');
      const after = await client.getSite(site.site_id);
      expect(after.capacity_kw_array.at(-1)?.value).toBe(100);
    } finally {
      await client.close();
    }
  });

  it('scores accuracy over what it synced', async () => {
    const config = testConfig({ dir, url: emu.url });
    const scored = await runJob(accuracyJob, { config, log: createLogger({ level: 'silent' }), now: () => NOW });
    expect(scored.exitCode).toBe(0);
    const [total] = await query<{ n: number }>(
      config.warehouse.path,
      "SELECT max(value) AS n FROM accuracy_latest WHERE group_name = 'total' AND subject = 'forecast' AND metric = 'n'",
    );
    expect(total.n).toBeGreaterThan(0);
  });
});
