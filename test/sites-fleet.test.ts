// Sites as code at fleet size, and through the command line: 100 demo sites imported, planned
// with no change, one edited and applied, then nothing left to plan; `efsync sites plan
// --detailed-exitcode` says 0, then 2 on drift; `efsync sites apply PLAN.json` applies the saved
// plan; a stale one is refused in one line, exit 2.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../src/api/client.js';
import { importSites } from '../src/sites/import.js';
import { hasChanges } from '../src/sites/plan.js';
import { runCli } from './fixtures/runner-child.js';
import {
  applySites,
  changeLines,
  clientFor,
  edit,
  KEY,
  NOW,
  plan,
  published,
  type SitesWorld,
  siteNamed,
  sitesWorld,
  tempDir,
} from './sites-support.js';

describe('sites as code, a key revoked halfway through an apply', () => {
  it('stops the whole apply (exit 4): the change that landed before it is recorded', async () => {
    // 5 requests to import, 5 to plan again, 1 to see the plan is not stale: the 12th is the
    // first update, the 13th the second.
    const world = await sitesWorld(4, { revokeAfter: 12 });
    const client = clientFor(world.emulator);
    try {
      await importSites({ dir: world.sitesDir, client, sites: [], now: NOW });
      for (const file of ['esbjerg-wind.yaml', 'freiburg-load.yaml', 'uppsala-solar-fixed.yaml']) {
        edit(world.sitesDir, file, 'model_resolution: 15min', 'model_resolution: 1h');
      }
      const applied = await applySites(world);
      expect(applied.status).toBe('failed');
      expect(applied.exitCode).toBe(4);
      expect(applied.error).toMatch(/401/);
      // Sites are updated a few at once: whichever reached the service before the key went is recorded.
      const recorded = await published<{ status: string }>(world, `SELECT status FROM site_changes`);
      expect(recorded).toEqual([{ status: 'ok' }]);
    } finally {
      await client.close();
      await world.emulator.close();
    }
  });
});

describe('sites as code, 100 demo sites', () => {
  let world: SitesWorld;
  let client: ServiceClient;

  beforeAll(async () => {
    world = await sitesWorld(100);
    client = clientFor(world.emulator);
  });
  afterAll(async () => {
    await client.close();
    await world.emulator.close();
  });

  it('import, plan (no change), one field edited, apply, plan (no change)', async () => {
    const imported = await importSites({ dir: world.sitesDir, client, sites: [], now: NOW });
    expect(imported.filter((site) => site.file !== null && site.notes.length === 0)).toHaveLength(100);
    const adopted = await plan(world, client);
    expect(hasChanges(adopted)).toBe(false);
    expect(adopted.sites).toHaveLength(100);
    expect((await applySites(world)).status).toBe('ok');
    edit(world.sitesDir, 'esbjerg-wind.yaml', 'nr_units: ', 'nr_units: 1');
    const edited = await plan(world, client);
    expect(changeLines(edited)).toHaveLength(1);
    expect(changeLines(edited)[0]).toMatch(/^update Esbjerg wind assets\[0\]\.nr_units: (\d+) -> 1\1$/);
    expect((await applySites(world)).status).toBe('ok');
    expect(hasChanges(await plan(world, client))).toBe(false);
  });

  it('the command line: --detailed-exitcode 0 then 2 on drift, a saved plan applied, a stale one refused', async () => {
    const env = { EFSYNC_BASE_URL: world.emulator.url, EFSYNC_API_KEY: KEY, EFSYNC_NOW: new Date(NOW).toISOString() };
    const flags = ['--dir', world.sitesDir, '--db', world.config.warehouse.path];
    expect((await runCli(['sites', 'plan', ...flags, '--detailed-exitcode'], env)).code).toBe(0);
    edit(world.sitesDir, 'aberdeen-wind.yaml', 'model_resolution: 15min', 'model_resolution: 30min');
    const file = join(tempDir('sites-cli'), 'plan.json');
    const planned = await runCli(['sites', 'plan', ...flags, '--detailed-exitcode', '--out', file], env);
    expect(planned.code).toBe(2);
    expect(planned.stdout).toContain('    ~ settings.model_resolution: "15min" -> "30min"');
    expect(planned.stdout).toContain('Plan: 0 to create, 1 to change, 0 to delete, 99 unchanged');
    const applied = await runCli(['sites', 'apply', file, ...flags], env);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('applied     site "Aberdeen wind": update');
    expect((await siteNamed(client, 'Aberdeen wind')).settings?.model_resolution).toBe('30min');
    // The same plan again: the service no longer holds what it was made against.
    const stale = await runCli(['sites', 'apply', file, ...flags], env);
    expect(stale.code).toBe(2);
    expect(stale.stderr).toMatch(
      /^the plan is stale: the service changed since it was made \(site "Aberdeen wind" \([0-9a-f-]+\) changed\): nothing was applied; run efsync sites plan again$/m,
    );
  });
});
