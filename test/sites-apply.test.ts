// Sites as code against the emulator over loopback, as `efsync sites import|plan|apply` and the
// sites-drift job run it: adoption leaves nothing to plan; one edited field plans exactly that
// field, applies, then plans nothing, and the next sync stores it; a new file creates its site and
// pushes its capacity file in the same apply; a strict priority collision fails that model alone
// in one line; a stale or edited plan is refused with nothing applied; a removed file deletes
// nothing without --allow-delete and never a protected site; a 500 halfway leaves the ledger and
// the summary saying what landed, and the next apply converges; drift is recorded per site.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import syncSites from '../jobs/sync-sites.js';
import type { ServiceClient } from '../src/api/client.js';
import type { SiteRequest } from '../src/api/schemas.js';
import { runJob } from '../src/runner/run.js';
import { RunnerMetrics } from '../src/runner/metrics.js';
import { loadJobs } from '../src/runner/registry.js';
import { collectStatus, formatStatus } from '../src/runner/status.js';
import { formatPlan } from '../src/sites/format.js';
import { importSites } from '../src/sites/import.js';
import { planFromFiles } from '../src/sites/job.js';
import { hasChanges } from '../src/sites/plan.js';
import {
  applySites,
  changeLines,
  checkDrift,
  clientFor,
  edit,
  NOW,
  plan,
  published,
  quietLog,
  type SitesWorld,
  siteNamed,
  withPublished,
  sitesWorld,
  tempDir,
  writeFiles,
} from './sites-support.js';

const GAVLE = `name: Gävle wind
type: wind
latitude: 60.6749
longitude: 17.1413
settings: { model_resolution: 1h }
assets:
  - { turbine_type: V126/3000, nr_units: 4, hub_height: 117 }
models:
  physical: { serving_active: false }
`;

async function adopt(world: SitesWorld, client: ServiceClient): Promise<void> {
  const imported = await importSites({ dir: world.sitesDir, client, sites: [], now: NOW });
  expect(imported.map((site) => [site.name, site.notes])).toEqual(imported.map((site) => [site.name, []]));
}

describe('sites as code, four demo sites', () => {
  let world: SitesWorld;
  let client: ServiceClient;

  beforeAll(async () => {
    world = await sitesWorld(4);
    client = clientFor(world.emulator);
  });
  afterAll(async () => {
    await client.close();
    await world.emulator.close();
  });

  it('import writes a file per site; right after it, plan shows no change; apply records them as managed', async () => {
    await adopt(world, client);
    const after = await plan(world, client);
    expect(hasChanges(after)).toBe(false);
    expect(after.sites.map((entry) => `${entry.action} ${entry.name} ${entry.file}`)).toEqual([
      'none Esbjerg wind esbjerg-wind.yaml',
      'none Freiburg load freiburg-load.yaml',
      'none Sevilla solar tracking sevilla-solar-tracking.yaml',
      'none Uppsala solar fixed uppsala-solar-fixed.yaml',
    ]);
    expect(formatPlan(after)[0]).toBe('No changes: the service holds what the site files say.');
    const applied = await applySites(world);
    expect(applied.status).toBe('ok');
    expect(await published(world, `SELECT name, file, protect FROM managed_sites ORDER BY file`)).toHaveLength(4);
    // A second import writes nothing over the files it wrote.
    const again = await importSites({ dir: world.sitesDir, client, sites: [], now: NOW });
    expect(again.every((site) => site.file === null && site.notes[0].startsWith('already in'))).toBe(true);
  });

  it('one setting edited plans exactly that field; apply; then nothing; the next sync stores the new value', async () => {
    edit(world.sitesDir, 'esbjerg-wind.yaml', 'model_resolution: 15min', 'model_resolution: 1h');
    const edited = await plan(world, client);
    expect(changeLines(edited)).toEqual(['update Esbjerg wind settings.model_resolution: "15min" -> "1h"']);
    expect(formatPlan(edited)).toContain('    ~ settings.model_resolution: "15min" -> "1h"');
    const applied = await applySites(world);
    expect(applied.status).toBe('ok');
    expect(hasChanges(await plan(world, client))).toBe(false);
    const esbjerg = await siteNamed(client, 'Esbjerg wind');
    expect(esbjerg.settings?.model_resolution).toBe('1h');
    expect(esbjerg.assets).toHaveLength(1); // the rest of the site as it was
    const changes = await published<{
      field: string;
      before: string;
      after: string;
      status: string;
      plan_fingerprint: string;
    }>(
      world,
      `SELECT field, before::VARCHAR AS before, after::VARCHAR AS after, status, plan_fingerprint FROM site_changes WHERE site_name = 'Esbjerg wind'`,
    );
    expect(changes.map(({ plan_fingerprint: _, ...row }) => row)).toEqual([
      { field: 'settings.model_resolution', before: '"15min"', after: '"1h"', status: 'ok' },
    ]);
    expect(changes[0].plan_fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect((await runJob(syncSites, { config: world.config, log: quietLog, now: () => NOW })).status).toBe('ok');
    expect(
      await published(
        world,
        `SELECT settings->>'model_resolution' AS resolution FROM sites WHERE name = 'Esbjerg wind'`,
      ),
    ).toEqual([{ resolution: '1h' }]);
  });

  it('a new file creates its site, sets its models serving, and pushes its capacity file in the same apply', async () => {
    writeFiles(world.sitesDir, { 'gavle-wind.yaml': GAVLE });
    writeFiles(world.capacityDir, {
      'gavle.yaml': 'site: Gävle wind\nunit: kW\npoints: [{ valid_time: 2026-11-22T00:00Z, value: 9000 }]\n',
    });
    const planned = await plan(world, client);
    const create = planned.sites.find((entry) => entry.action === 'create');
    expect(create?.capacity_files).toEqual([join(world.capacityDir, 'gavle.yaml')]);
    expect(formatPlan(planned)).toContain('+ site "Gävle wind" (gavle-wind.yaml)');
    const applied = await applySites(world);
    expect(applied.summary.slice(0, 3)).toEqual([
      'applied     site "Gävle wind": create',
      'applied     site "Gävle wind": serving of model physical',
      `applied     site "Gävle wind": capacity from ${join(world.capacityDir, 'gavle.yaml')}`,
    ]);
    expect(applied.status).toBe('ok');
    const gavle = await siteNamed(client, 'Gävle wind');
    const models = await client.listSiteModels(gavle.site_id, { extra: ['serving_active'] });
    expect(models.find((m) => m.name === 'physical')?.serving_active).toBe(false);
    expect(await published(world, `SELECT status FROM capacity_pushes WHERE site_id = '${gavle.site_id}'`)).toEqual([
      { status: 'ok' },
    ]);
    expect(hasChanges(await plan(world, client))).toBe(false);
    expect((await runJob(syncSites, { config: world.config, log: quietLog, now: () => NOW })).status).toBe('ok');
    expect(await published(world, `SELECT type, latitude FROM sites WHERE site_id = '${gavle.site_id}'`)).toEqual([
      { type: 'wind', latitude: 60.6749 },
    ]);
  });

  it('a strict priority collision fails that model alone, in one line naming both models and the priority', async () => {
    edit(world.sitesDir, 'uppsala-solar-fixed.yaml', 'serving_priority: 1\n', 'serving_priority: 0\n');
    edit(world.sitesDir, 'uppsala-solar-fixed.yaml', 'serving_priority: 2\n', 'serving_priority: 1\n');
    edit(world.sitesDir, 'uppsala-solar-fixed.yaml', 'serving_priority: 0\n', 'serving_priority: 2\n');
    edit(world.sitesDir, 'freiburg-load.yaml', 'model_resolution: 15min', 'model_resolution: 30min');
    const applied = await applySites(world);
    expect(applied.status).toBe('partial');
    expect(applied.summary).toContain('applied     site "Freiburg load": update');
    expect(applied.summary).toContain(
      'FAILED      site "Uppsala solar fixed": serving of model ai: serving_priority 2 is held by model physical of site "Uppsala solar fixed" (409 under priority_conflict_resolution: strict): model ai was not changed; give physical another priority in uppsala-solar-fixed.yaml, or set priority_conflict_resolution: swap or auto_increment',
    );
    // With swap, the same file converges.
    writeFileSync(
      join(world.sitesDir, 'uppsala-solar-fixed.yaml'),
      `${readFileSync(join(world.sitesDir, 'uppsala-solar-fixed.yaml'), 'utf8')}priority_conflict_resolution: swap\n`,
    );
    expect((await applySites(world)).status).toBe('ok');
    expect(changeLines(await plan(world, client))).toEqual([]);
  });

  it('a saved plan is applied exactly, and refused in one line when the service changed since or the plan was edited', async () => {
    edit(world.sitesDir, 'sevilla-solar-tracking.yaml', 'latitude: 37.3891', 'latitude: 37.4');
    const saved = await plan(world, client);
    const file = join(tempDir('sites-plan'), 'plan.json');
    writeFileSync(file, JSON.stringify(saved));
    // Someone changes the site on the service after the plan was made.
    const sevilla = await siteNamed(client, 'Sevilla solar tracking');
    await client.updateSite(sevilla.site_id, {
      name: sevilla.name,
      type: 'solar',
      latitude: sevilla.latitude,
      longitude: -6,
      settings: sevilla.settings ?? {},
      assets: sevilla.assets as Extract<SiteRequest, { type: 'solar' }>['assets'],
    } as SiteRequest);
    const stale = await applySites(world, { plan: file });
    expect(stale.status).toBe('failed');
    expect(stale.error).toBe(
      `the plan is stale: the service changed since it was made (site "Sevilla solar tracking" (${sevilla.site_id}) changed): nothing was applied; run efsync sites plan again`,
    );
    expect((await siteNamed(client, 'Sevilla solar tracking')).latitude).toBe(37.3891);
    // An edited plan is refused too.
    const fresh = await plan(world, client);
    writeFileSync(file, JSON.stringify({ ...fresh, allow_delete: true }));
    expect((await applySites(world, { plan: file })).error).toBe(
      `${file}: the plan was edited after it was made (its fingerprint does not match): plan again`,
    );
    writeFileSync(file, JSON.stringify(fresh));
    const applied = await applySites(world, { plan: file });
    expect(applied.status).toBe('ok');
    expect(changeLines(fresh)).toEqual([
      'update Sevilla solar tracking latitude: 37.3891 -> 37.4',
      'update Sevilla solar tracking longitude: -6 -> -5.9845',
    ]);
    expect(hasChanges(await plan(world, client))).toBe(false);
  });

  it('a removed file deletes nothing without --allow-delete, never a protected site, and with it deletes', async () => {
    edit(world.sitesDir, 'freiburg-load.yaml', 'type: load', 'type: load\nprotect: true');
    expect((await applySites(world)).status).toBe('ok');
    const freiburg = await siteNamed(client, 'Freiburg load');
    const gavle = await siteNamed(client, 'Gävle wind');
    rmSync(join(world.sitesDir, 'freiburg-load.yaml'));
    rmSync(join(world.sitesDir, 'gavle-wind.yaml'));
    const kept = await plan(world, client);
    expect(kept.kept.map((k) => `${k.name}: ${k.reason}`)).toEqual([
      'Freiburg load: protect: true in its last file, freiburg-load.yaml: never deleted',
      'Gävle wind: its file gavle-wind.yaml was removed: apply --allow-delete deletes it',
    ]);
    expect((await applySites(world)).status).toBe('ok');
    expect((await client.listSites()).map((s) => s.site_id)).toEqual(
      expect.arrayContaining([freiburg.site_id, gavle.site_id]),
    );
    const deleting = await plan(world, client, true);
    expect(deleting.sites.filter((e) => e.action === 'delete').map((e) => e.name)).toEqual(['Gävle wind']);
    expect(formatPlan(deleting)).toContain(
      `- site "Gävle wind" (${gavle.site_id}, gavle-wind.yaml): deleted (--allow-delete), with all of its data on the service`,
    );
    // An empty folder (a wrong --dir) deletes nothing, even with --allow-delete.
    const emptyDir = tempDir('sites-empty');
    const empty = await withPublished(world, (warehouse) =>
      planFromFiles({ ...world.config, sites: { dir: emptyDir } }, client, warehouse, { allowDelete: true, now: NOW }),
    );
    expect(empty.sites).toEqual([]);
    expect(empty.kept.map((k) => k.reason)).toContain(
      `the sites folder ${emptyDir} holds no site file: nothing is deleted from an empty folder`,
    );
    expect((await applySites(world, { allowDelete: true })).status).toBe('ok');
    const left = (await client.listSites()).map((s) => s.name);
    expect(left).toContain('Freiburg load');
    expect(left).not.toContain('Gävle wind');
    // A site in no file that efsync never managed is left alone, and so is the protected one.
    expect((await plan(world, client, true)).unmanaged).toEqual([]);
  });

  it('a 500 on the third site: the others land, the summary and the ledger say so, and the next apply converges', async () => {
    for (const file of ['esbjerg-wind.yaml', 'sevilla-solar-tracking.yaml', 'uppsala-solar-fixed.yaml']) {
      edit(world.sitesDir, file, 'settings:\n', 'settings:\n  vendor_note: repowered\n');
    }
    const uppsala = await siteNamed(client, 'Uppsala solar fixed');
    world.fault.hook = (context) =>
      context.method === 'PUT' && context.siteId === uppsala.site_id ? 'http500' : undefined;
    const failed = await applySites(world);
    world.fault.hook = undefined;
    expect(failed.status).toBe('partial');
    expect(failed.summary.at(-1)).toBe(
      'sites: applied 2 of 3 (update of "Esbjerg wind", update of "Sevilla solar tracking"); not applied: update of "Uppsala solar fixed"; the next apply plans again from what landed',
    );
    const statuses = await published<{ site_name: string; status: string }>(
      world,
      `SELECT site_name, status FROM site_changes WHERE field = 'settings.vendor_note' AND plan_fingerprint = (SELECT plan_fingerprint FROM site_changes ORDER BY applied_at DESC LIMIT 1) ORDER BY site_name`,
    );
    expect(statuses).toEqual([
      { site_name: 'Esbjerg wind', status: 'ok' },
      { site_name: 'Sevilla solar tracking', status: 'ok' },
      { site_name: 'Uppsala solar fixed', status: 'failed' },
    ]);
    expect(changeLines(await plan(world, client))).toEqual([
      'update Uppsala solar fixed settings.vendor_note: undefined -> "repowered"',
    ]);
    expect((await applySites(world)).status).toBe('ok');
    expect(hasChanges(await plan(world, client))).toBe(false);
  });

  it('a changed name in a managed file renames its site: the file, not the name, says which site it is', async () => {
    const before = await siteNamed(client, 'Esbjerg wind');
    edit(world.sitesDir, 'esbjerg-wind.yaml', 'name: Esbjerg wind', 'name: Esbjerg offshore');
    const renaming = await plan(world, client);
    expect(changeLines(renaming)).toEqual(['update Esbjerg offshore name: "Esbjerg wind" -> "Esbjerg offshore"']);
    expect((await applySites(world)).status).toBe('ok');
    expect((await siteNamed(client, 'Esbjerg offshore')).site_id).toBe(before.site_id);
    edit(world.sitesDir, 'esbjerg-wind.yaml', 'name: Esbjerg offshore', 'name: Esbjerg wind');
    expect((await applySites(world)).status).toBe('ok');
    expect(hasChanges(await plan(world, client))).toBe(false);
  });

  it('sites-drift records per site what differs, shows it in metrics, and changes nothing', async () => {
    const uppsala = await siteNamed(client, 'Uppsala solar fixed');
    await client.updateModel(
      (await client.listSiteModels(uppsala.site_id)).find((m) => m.name === 'physical')?.id as string,
      { settings: { serving_active: false } },
    );
    const drift = await checkDrift(world);
    expect(drift.status).toBe('ok');
    expect(drift.summary.at(-1)).toBe('sites-drift: 2 of 4 site(s) as their files say, 2 not');
    expect(
      await published(
        world,
        `SELECT site_name, state, fields, summary FROM site_drift WHERE state <> 'in_sync' ORDER BY site_name`,
      ),
    ).toEqual([
      {
        site_name: 'Freiburg load',
        state: 'orphaned',
        fields: 1,
        summary: 'protect: true in its last file, freiburg-load.yaml: never deleted',
      },
      {
        site_name: 'Uppsala solar fixed',
        state: 'drifted',
        fields: 1,
        summary: '1 field(s) differ: models.physical.serving_active',
      },
    ]);
    const metrics = await new RunnerMetrics().text(world.config);
    expect(metrics).toContain('efsync_site_drift_fields{site="Uppsala solar fixed",state="drifted"} 1');
    expect(metrics).toContain('efsync_site_drift_fields{site="Esbjerg wind",state="in_sync"} 0');
    const models = await client.listSiteModels(uppsala.site_id, { extra: ['serving_active'] });
    expect(models.find((m) => m.name === 'physical')?.serving_active).toBe(false);
    // efsync status shows the changes applied and the sites not as their files say.
    const lines = formatStatus(await collectStatus(world.config, await loadJobs(), NOW)).join('\n');
    expect(lines).toContain('sites not as their files say (2, at the newest sites-drift run)');
    expect(lines).toMatch(/Uppsala solar fixed +drifted .* 1 field\(s\) differ: models\.physical\.serving_active/);
    expect(lines).toMatch(/Esbjerg wind +update +name +"Esbjerg offshore" -> "Esbjerg wind" +ok/);
  });
});
