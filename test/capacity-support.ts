// Shared setup of the capacity tests: a capacity folder in a temp dir, an emulator with demo
// sites on a fixed clock, a config pointing at both, applies a minute apart, the service's
// timeline, and the published push ledger.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pushCapacity from '../jobs/push-capacity.js';
import { ServiceClient } from '../src/api/client.js';
import type { SiteResponse } from '../src/api/schemas.js';
import type { PushRow } from '../src/capacity/ledger.js';
import { Config, type LoadedConfig } from '../src/config.js';
import { startEmulator, type Emulator } from '../src/emulator/server.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import { formatMinute } from '../src/time.js';
import { Warehouse } from '../src/warehouse/warehouse.js';

/** 2026-11-21 06:00 UTC: the emulator's clock; tomorrow's forecasts are issued by then. */
export const NOW = Date.UTC(2026, 10, 21, 6, 0);
export const KEY = 'capacity-key';
export const OTHER_KEY = 'other-account-key';

export const quietLog = createLogger({ level: 'silent' });

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `efsync-${prefix}-`));
}

/** Writes `files` (name → text) into `dir`, creating it. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** Four demo sites per account (seed 1): Uppsala solar fixed, Esbjerg wind, Freiburg load, Sevilla solar tracking. */
export function startDemoEmulator(): Promise<Emulator> {
  return startEmulator({ apiKeys: [KEY, OTHER_KEY], sites: 4, seed: 1, now: () => NOW, host: '127.0.0.1', port: 0 });
}

/** A config for the emulator and a fresh warehouse; retries off so that a forced fault fails at once. */
export function capacityConfig(emulator: Emulator, dir: string): LoadedConfig {
  const root = tempDir('capacity-wh');
  const keyFile = join(root, 'api-key');
  writeFileSync(keyFile, KEY);
  const config = Config.parse({
    service: { base_url: emulator.url, api_key_file: keyFile, retries: { attempts: 0 } },
    warehouse: { path: join(root, 'warehouse.duckdb'), lock_wait: '5s' },
    capacity: { dir, max_over_nameplate_pct: 10 },
    log: { level: 'fatal' },
  });
  return { ...config, file: null };
}

export function clientFor(emulator: Emulator, key = KEY): ServiceClient {
  return new ServiceClient({
    baseUrl: emulator.url,
    apiKey: key,
    retries: { attempts: 0, baseDelay: 1, maxDelay: 1, retryAfterMax: 1 },
  });
}

export async function siteNamed(client: ServiceClient, name: string): Promise<SiteResponse> {
  const site = (await client.listSites()).find((s) => s.name === name);
  if (!site) throw new Error(`no demo site named ${name}`);
  return site;
}

/** Sevilla's file with a window: a grid outage on 2026-11-23 from 08:00 to 16:00. */
export const SEVILLA_WITH_WINDOW = `site: Sevilla solar tracking
unit: kW
points:
  - valid_time: 2026-11-22T00:00Z
    value: 6000
windows:
  - {from: 2026-11-23T08:00Z, to: 2026-11-23T16:00Z, value: 0, reason: grid outage}
`;

/** The service's change points of a site from `from` on (before it, the site's nameplate), as [minute, value]. */
export async function timelineFrom(client: ServiceClient, siteId: string, from: number): Promise<[string, number][]> {
  return (await client.getSite(siteId)).capacity_kw_array
    .filter((s) => s.dateStart! >= from)
    .map((s) => [formatMinute(s.dateStart!), s.value]);
}

/** `efsync capacity apply` of `config`, each a minute after the one before: the ledger knows which push was last. */
export function applyEachMinute(config: LoadedConfig) {
  let clock = NOW;
  return () => runJob(pushCapacity, { config, log: quietLog, now: () => (clock += 60_000) });
}

export type LedgerRow = Omit<PushRow, 'push_id' | 'held_points' | 'pushed_at'>;

/** The push ledger as analysts see it (the published snapshot), oldest first. */
export async function publishedLedger(config: LoadedConfig): Promise<LedgerRow[]> {
  const warehouse = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
  try {
    return await warehouse.all<LedgerRow>(
      `SELECT run_id, site_id, file, content_hash, git_commit, points::VARCHAR AS points, deleted_points::VARCHAR AS deleted_points,
              response::VARCHAR AS response,
              status, error FROM capacity_pushes ORDER BY pushed_at, file`,
    );
  } finally {
    await warehouse.close();
  }
}
