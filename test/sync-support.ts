// Shared by the sync tests: an emulator on loopback with a fixed clock, a config pointing at it
// and at a warehouse in a temp folder, one sync run through the runner, and ways to read the
// published warehouse back (rows, and a hash of each data table's full content).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll } from 'vitest';
import { ServiceClient } from '../src/api/client.js';
import { Config, type LoadedConfig } from '../src/config.js';
import { createLogger, type Logger } from '../src/log.js';
import type { JobOptions } from '../src/job.js';
import { runJob, type RunResult } from '../src/runner/run.js';
import syncJob from '../jobs/sync.js';
import { startEmulator, type Emulator, type EmulatorOptions } from '../src/emulator/server.js';

/** The fixed clock of the sync tests: mid-afternoon UTC, so the day has past and future forecasts. */
export const NOW = Date.UTC(2026, 10, 18, 14, 10);
export const API_KEY = 'sync-test-key';

/** Every table the sync writes data into (not the ledgers). */
export const DATA_TABLES = [
  'sites',
  'site_assets',
  'site_capacity',
  'models',
  'model_states',
  'model_settings_history',
  'forecasts',
  'model_outputs',
  'actuals',
  'actual_revisions',
] as const;

export function tempDir(prefix = 'efsync-sync-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function emulator(options: Partial<EmulatorOptions> & { now?: () => number } = {}): Promise<Emulator> {
  return startEmulator({
    apiKeys: [API_KEY],
    sites: 3,
    seed: 7,
    host: '127.0.0.1',
    port: 0,
    now: () => NOW,
    ...options,
  });
}

/** An emulator for a file's tests, `.emu` once they start: started before them, closed after. */
export function emuForFile(options: Parameters<typeof emulator>[0] = {}): { emu: Emulator } {
  const file = {} as { emu: Emulator };
  beforeAll(async () => {
    file.emu = await emulator(options);
  });
  afterAll(() => file.emu?.close());
  return file;
}

export interface TestConfigOptions {
  dir: string;
  url: string;
  db?: string;
  sync?: Record<string, unknown>;
  service?: Record<string, unknown>;
  /** Further top-level keys (`sink`, `lake`, ...), over the ones above. */
  extra?: Record<string, unknown>;
}

/** A config for a test: the emulator's URL, a key file, a warehouse in `dir`, quiet logs. */
export function testConfig(options: TestConfigOptions): LoadedConfig {
  return { ...Config.parse(rawConfig(options.dir, options)), file: null };
}

/** Writes the config as YAML-compatible JSON, for child processes and the CLI. */
export function writeConfigFile(dir: string, options: TestConfigOptions): string {
  const file = join(dir, 'efsync.yaml');
  writeFileSync(file, JSON.stringify(rawConfig(dir, options)));
  return file;
}

/** The config file's content for `options`, with the key file written in `dir`. */
function rawConfig(dir: string, options: TestConfigOptions): Record<string, unknown> {
  const keyFile = join(dir, 'api-key');
  writeFileSync(keyFile, API_KEY);
  return {
    service: { base_url: options.url, api_key_file: keyFile, ...options.service },
    warehouse: { path: options.db ?? join(dir, 'warehouse.duckdb'), lock_wait: '5s' },
    sync: { concurrency: 4, initial_history: '3d', lookback: '6h', horizon: '2d', ...options.sync },
    log: { level: 'warn' },
    ...options.extra,
  };
}

export async function runSync(
  config: LoadedConfig,
  options: JobOptions = {},
  now = NOW,
  log?: Logger,
): Promise<RunResult> {
  return runJob(syncJob, { config, options, now: () => now, log: log ?? createLogger({ level: 'silent' }) });
}

export function clientFor(emu: Emulator): ServiceClient {
  return new ServiceClient({ baseUrl: emu.url, apiKey: API_KEY });
}

/** Runs `sql` on the published warehouse, opened read-only as an analyst would. */
export async function query<T = Record<string, unknown>>(
  path: string,
  sql: string,
  params: (string | number | null)[] = [],
): Promise<T[]> {
  const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(sql, params);
    return reader.getRowObjectsJS() as T[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** md5 of each data table's rows (every column, as text), in a stable order; with the row count. */
export async function tableHashes(
  path: string,
  tables: readonly string[] = DATA_TABLES,
): Promise<Record<string, string>> {
  const sql = tables
    .map(
      (table) =>
        `SELECT '${table}' AS name, count(*) AS n, md5(coalesce(string_agg(t::VARCHAR, '\n' ORDER BY t::VARCHAR), '')) AS hash FROM ${table} t`,
    )
    .join(' UNION ALL ');
  const rows = await query<{ name: string; n: bigint; hash: string }>(path, sql);
  return Object.fromEntries(rows.map((r) => [r.name, `${r.n} rows ${r.hash}`]));
}

/** Rows written in total by a run (0 when nothing new). */
export function totalRows(result: RunResult): number {
  return Object.values(result.rows).reduce((sum, n) => sum + n, 0);
}
