// Shared setup of the sites tests: a demo emulator whose faults a test can switch on per request,
// a config pointing at it with a sites folder, a capacity folder and a fresh warehouse, and the
// sites jobs run as `efsync sites apply` and the drift job run them.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import applySitesJob from '../jobs/apply-sites.js';
import sitesDriftJob from '../jobs/sites-drift.js';
import type { ServiceClient } from '../src/api/client.js';
import { Config, type LoadedConfig } from '../src/config.js';
import type { FaultContext, FaultKind } from '../src/emulator/faults.js';
import { type Emulator, type EmulatorOptions, startEmulator } from '../src/emulator/server.js';
import type { JobOptions } from '../src/job.js';
import { runJob } from '../src/runner/run.js';
import { planFromFiles } from '../src/sites/job.js';
import type { SitesPlan } from '../src/sites/plan.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { KEY, NOW, quietLog, tempDir } from './capacity-support.js';

export { clientFor, KEY, NOW, quietLog, siteNamed, tempDir, writeFiles } from './capacity-support.js';

export interface SitesWorld {
  emulator: Emulator;
  /** Set to force a fault on the requests it picks; undefined: none. */
  fault: { hook?: (context: FaultContext) => FaultKind | undefined };
  config: LoadedConfig;
  sitesDir: string;
  capacityDir: string;
}

/** An emulator with `sites` demo sites per key (seed 1), and a config with empty folders. */
export async function sitesWorld(sites = 4, emulatorOptions: Partial<EmulatorOptions> = {}): Promise<SitesWorld> {
  const fault: SitesWorld['fault'] = {};
  const emulator = await startEmulator({
    apiKeys: [KEY],
    sites,
    seed: 1,
    now: () => NOW,
    host: '127.0.0.1',
    port: 0,
    faultHook: (context) => fault.hook?.(context),
    ...emulatorOptions,
  });
  const root = tempDir('sites');
  const keyFile = join(root, 'api-key');
  writeFileSync(keyFile, KEY);
  const sitesDir = join(root, 'sites');
  const capacityDir = join(root, 'capacity');
  const config = Config.parse({
    service: { base_url: emulator.url, api_key_file: keyFile, retries: { attempts: 0 } },
    warehouse: { path: join(root, 'warehouse.duckdb'), lock_wait: '5s' },
    sites: { dir: sitesDir },
    capacity: { dir: capacityDir },
    log: { level: 'fatal' },
  });
  return { emulator, fault, config: { ...config, file: null }, sitesDir, capacityDir };
}

let clock = NOW;

/** One run of apply-sites, as `efsync sites apply [PLAN.json] [--allow-delete]` runs it; a minute after the last. */
export function applySites(world: SitesWorld, options: JobOptions = {}) {
  return runJob(applySitesJob, { config: world.config, log: quietLog, options, now: () => (clock += 60_000) });
}

export function checkDrift(world: SitesWorld) {
  return runJob(sitesDriftJob, { config: world.config, log: quietLog, now: () => (clock += 60_000) });
}

/** The plan `efsync sites plan` shows, against the published warehouse's managed sites. */
export async function plan(world: SitesWorld, client: ServiceClient, allowDelete = false): Promise<SitesPlan> {
  return withPublished(world, (warehouse) => planFromFiles(world.config, client, warehouse, { allowDelete, now: NOW }));
}

/** The published warehouse, read-only, or null before anything was published. */
export async function withPublished<T>(
  world: SitesWorld,
  use: (warehouse: Warehouse | null) => Promise<T>,
): Promise<T> {
  let warehouse: Warehouse | null = null;
  try {
    warehouse = await Warehouse.open({ path: world.config.warehouse.path, readOnly: true });
  } catch {
    warehouse = null;
  }
  try {
    return await use(warehouse);
  } finally {
    await warehouse?.close();
  }
}

export async function published<T = Record<string, unknown>>(world: SitesWorld, sql: string): Promise<T[]> {
  return withPublished(world, async (warehouse) => (warehouse ? warehouse.all<T>(sql) : []));
}

/** The plan's lines per site, changes only (`~ settings.model_resolution: "15min" -> "1h"`). */
export function changeLines(plan: SitesPlan): string[] {
  return plan.sites.flatMap((entry) => [
    ...entry.changes.map(
      (c) => `${entry.action} ${entry.name} ${c.field}: ${JSON.stringify(c.before)} -> ${JSON.stringify(c.after)}`,
    ),
    ...entry.serving.flatMap((s) =>
      s.changes.map(
        (c) => `${entry.action} ${entry.name} ${c.field}: ${JSON.stringify(c.before)} -> ${JSON.stringify(c.after)}`,
      ),
    ),
  ]);
}

/** Replaces `from` by `to` in a file of the folder (which must hold it). */
export function edit(dir: string, file: string, from: string, to: string): void {
  const path = join(dir, file);
  const text = readFileSync(path, 'utf8');
  if (!text.includes(from)) throw new Error(`${file} does not hold ${JSON.stringify(from)}`);
  writeFileSync(path, text.replace(from, to));
}
