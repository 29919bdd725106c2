// The crash suite: a sync process killed (SIGKILL, as an OOM kill or a power cut would) at named
// fault points (src/fault.ts) and at random moments, on a new and on an existing warehouse, then
// rerun: the rerun must exit 0 and the warehouse must hold exactly what a clean run stores. The
// deep tier (crash.deep.test.ts) kills at every point; the fast tier (crash.test.ts) at a seeded
// sample of them (test/seed.ts). A random kill comes at a fraction of a clean child's sync time,
// the fractions drawn from the same seed.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { listMigrations } from '../src/warehouse/migrate.js';
import { writerPathOf } from '../src/warehouse/warehouse.js';
import { emulator, NOW, query, runSync, tableHashes, tempDir, testConfig, writeConfigFile } from './sync-support.js';
import { builtChild } from './built.js';
import { random, SEED } from './seed.js';

const SITES = 5;
const EARLIER = NOW - 6 * 3_600_000;

let emu: Emulator;
let emulatorNow = NOW;
/** Table hashes of a clean sync at NOW: on a new warehouse, and on one synced at EARLIER before. */
const clean = { new: {} as Record<string, string>, existing: {} as Record<string, string> };
/** The data-quality flags a clean sync at NOW leaves (actual_flags without checked_at), by kind. */
const cleanFlags = { new: [] as unknown[], existing: [] as unknown[] };
const FLAGS_SQL = 'SELECT site_id, valid_time::VARCHAR AS t, flags FROM actual_flags ORDER BY site_id, valid_time';
/** A warehouse synced at EARLIER (published and writer file), copied for each existing-warehouse case. */
let base: string;
/** How long a clean sync at NOW takes in a child process (ms), for the random kill times. */
let cleanChildMs = 0;

type Kind = keyof typeof clean;

/** The clean runs every kill is compared with, and the emulator the kills sync from. */
async function cleanRuns(): Promise<void> {
  emu = await emulator({ sites: SITES, now: () => emulatorNow });
  const fresh = tempDir('efsync-crash-');
  await syncAt(NOW, testConfig({ dir: fresh, url: emu.url }));
  clean.new = await tableHashes(join(fresh, 'warehouse.duckdb'));
  cleanFlags.new = await query(join(fresh, 'warehouse.duckdb'), FLAGS_SQL);
  expect(cleanFlags.new.length).toBeGreaterThan(0);

  base = tempDir('efsync-crash-base-');
  await syncAt(EARLIER, testConfig({ dir: base, url: emu.url }));
  const again = tempDir('efsync-crash-');
  copyWarehouse(base, again);
  await syncAt(NOW, testConfig({ dir: again, url: emu.url }));
  clean.existing = await tableHashes(join(again, 'warehouse.duckdb'));
  cleanFlags.existing = await query(join(again, 'warehouse.duckdb'), FLAGS_SQL);
  expect(clean.existing).not.toEqual(await tableHashes(join(base, 'warehouse.duckdb')));

  const timed = tempDir('efsync-crash-');
  const started = Date.now();
  const run = await syncChild(timed, {});
  cleanChildMs = Date.now() - started;
  expect(run.code).toBe(0);
}

async function syncAt(now: number, config: ReturnType<typeof testConfig>): Promise<void> {
  emulatorNow = now;
  const result = await runSync(config, {}, now);
  expect(result.status).toBe('ok');
}

function copyWarehouse(from: string, to: string): void {
  for (const file of ['warehouse.duckdb', 'warehouse.writer.duckdb']) copyFileSync(join(from, file), join(to, file));
}

/** A sync at NOW in a child process (test/sync-child.ts), optionally killed after `killAfterMs`. */
function syncChild(
  dir: string,
  options: { faultPoint?: string; killAfterMs?: number },
): Promise<{ code: number | null; signal: string | null }> {
  emulatorNow = NOW;
  const configFile = writeConfigFile(dir, { dir, url: emu.url });
  return new Promise((resolve, reject) => {
    const env = { ...process.env, EFSYNC_FAULT_POINT: options.faultPoint ?? '' };
    const child = spawn(process.execPath, [builtChild('test/sync-child.ts'), configFile, String(NOW)], {
      stdio: ['ignore', 'ignore', 'ignore'],
      env,
    });
    const timer =
      options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.killAfterMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

/**
 * The rerun after a kill: exit 0, the data and data-quality flags of a clean run (none left
 * pending), no run left `running`, no draft left.
 */
async function rerunMatchesClean(dir: string, kind: Kind): Promise<void> {
  emulatorNow = NOW;
  const rerun = await runSync(testConfig({ dir, url: emu.url }));
  expect(rerun.exitCode, rerun.error ?? '').toBe(0);
  const path = join(dir, 'warehouse.duckdb');
  expect(await tableHashes(path)).toEqual(clean[kind]);
  expect(await query(path, FLAGS_SQL)).toEqual(cleanFlags[kind]);
  expect(await query(path, 'SELECT * FROM actual_flags_pending')).toEqual([]);
  const runs = await query<{ status: string }>(path, 'SELECT status FROM runs ORDER BY started_at');
  expect(runs.map((r) => r.status)).not.toContain('running');
  expect(runs.at(-1)?.status).toBe('ok');
  expect(readdirSync(dir).filter((name) => /\.draft-|\.tmp-/.test(name))).toEqual([]);
  expect(existsSync(writerPathOf(path))).toBe(true);
}

async function prepare(kind: Kind): Promise<string> {
  const dir = tempDir('efsync-crash-');
  if (kind === 'existing') copyWarehouse(base, dir);
  return dir;
}

const MIGRATIONS = listMigrations().length;
/** Every named fault point a sync passes, by kind of warehouse. */
const NAMED: Record<Kind, string[]> = {
  new: [
    'open',
    ...Array.from({ length: MIGRATIONS }, (_, i) => `migration:${i + 1}`),
    'staging',
    'commit',
    'commit:4',
    'flags',
    'checkpoint',
    'publish-copy',
    'publish-rename',
  ],
  existing: ['open', 'staging', 'commit', 'commit:4', 'flags', 'checkpoint', 'publish-copy', 'publish-rename'],
};

export interface CrashSuite {
  /** The named points to kill at, of all of one kind's (`label` names the kind, for a seeded draw). */
  points: (all: string[], label: string) => string[];
  /** How many kills at random moments. */
  randomKills: number;
}

/** The crash suite's tests: kills at the chosen named points, then `randomKills` at random moments. */
export function describeCrashes({ points, randomKills }: CrashSuite): void {
  beforeAll(cleanRuns, 300_000);
  afterAll(async () => {
    await emu?.close();
  });

  describe.each(['new', 'existing'] as const)(
    'a sync killed at a named fault point, on a %s warehouse, then rerun',
    (kind) => {
      it.each(points(NAMED[kind], `crash points, ${kind} warehouse`))(
        '%s',
        async (point) => {
          const dir = await prepare(kind);
          const killed = await syncChild(dir, { faultPoint: point });
          expect(killed.signal).toBe('SIGKILL');
          await rerunMatchesClean(dir, kind);
        },
        120_000,
      );
    },
  );

  describe('a sync killed at random moments, then rerun', () => {
    it(
      `${randomKills} kills, alternately on a new and an existing warehouse, at times drawn from EFSYNC_SEED=${SEED}`,
      async () => {
        const killTime = random('crash kill times');
        const outcomes: string[] = [];
        for (let i = 0; i < randomKills; i++) {
          const kind: Kind = i % 2 === 0 ? 'new' : 'existing';
          const dir = await prepare(kind);
          const at = Math.round(killTime() * cleanChildMs);
          const killed = await syncChild(dir, { killAfterMs: at });
          outcomes.push(`${kind} at ${at} ms: ${killed.signal ?? `exit ${killed.code}`}`);
          await rerunMatchesClean(dir, kind);
        }
        console.log(`random kills (a clean sync took ${cleanChildMs} ms in a child):\n  ${outcomes.join('\n  ')}`);
      },
      60_000 + randomKills * 60_000,
    );
  });
}
