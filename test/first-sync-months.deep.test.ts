// A new user's first night with months of history (sync.initial_history 45d): its retention
// moves the closed days to the cold store before it thins them, so it thins each day in its file
// and leaves only the hot window in DuckDB; the old valid times keep only the kept vintages, and
// the night after reads only the day that crossed the cutoff. (A year of 100 sites thinned hot
// ran out of memory and failed every night: docs/warehouse.md, "Hot and cold".)
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { DAY, HOUR } from '../src/time.js';
import { epochDayOf, instantLiteral } from '../src/warehouse/sql.js';
import { emulator, NOW, query, tempDir, writeConfigFile } from './sync-support.js';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '..', 'bin', 'efsync.js');
const HISTORY_DAYS = 45;
const ALL_VINTAGES_DAYS = 12;
const HOT_WINDOW_DAYS = 8;

let emu: Emulator;
let clock = NOW;
beforeAll(async () => {
  emu = await emulator({ sites: 2, historyDays: HISTORY_DAYS, now: () => clock });
});
afterAll(() => emu?.close());

/** `efsync run nightly` at `at` (EFSYNC_NOW), its stdout. */
async function nightly(config: string, at: number): Promise<string> {
  clock = at;
  const { stdout } = await run(process.execPath, [BIN, 'run', 'nightly', '--config', config], {
    env: { ...process.env, EFSYNC_NOW: new Date(at).toISOString(), EFSYNC_MEMORY: '' },
  });
  return stdout;
}

/** The "N days read" of a table's line in the retention step's summary. */
function daysRead(stdout: string, table: string): number {
  const line = stdout.split('\n').find((l) => l.trim().startsWith(`${table}: `) && l.includes('days read'));
  return Number(/(\d+) days? read/.exec(line ?? '')?.[1]);
}

describe('a first sync of months', () => {
  it('is thinned by its first night in the cold store, and the next night reads one day', async () => {
    const dir = tempDir('efsync-first-months-');
    const db = join(dir, 'warehouse.duckdb');
    const config = writeConfigFile(dir, {
      dir,
      url: emu.url,
      db,
      sync: { initial_history: `${HISTORY_DAYS}d` },
      extra: {
        warehouse: { path: db, lock_wait: '5s', hot_window: `${HOT_WINDOW_DAYS}d` },
        retention: { all_vintages: `${ALL_VINTAGES_DAYS}d`, actual_revisions: `${ALL_VINTAGES_DAYS}d` },
      },
    });
    const first = await nightly(config, NOW);
    expect(first).toMatch(/nightly run \S+: ok \(exit 0\)/);
    // every closed day went cold before retention read it, from its file
    const moved = /moved to the cold store first: (\d+) closed days of \d+ tables/.exec(first);
    expect(Number(moved?.[1])).toBeGreaterThanOrEqual(HISTORY_DAYS - HOT_WINDOW_DAYS - 2);
    expect(daysRead(first, 'forecasts')).toBeGreaterThanOrEqual(HISTORY_DAYS - ALL_VINTAGES_DAYS - 2);

    const hotCutoff = Math.floor((NOW - HOT_WINDOW_DAYS * DAY) / DAY) * DAY;
    const cutoff = Math.floor((NOW - ALL_VINTAGES_DAYS * DAY) / DAY) * DAY;
    const [hot] = await query<{ oldest: number; days: bigint }>(
      db,
      `SELECT (SELECT min(epoch_ms(valid_time)) FROM forecasts_hot) AS oldest,
              (SELECT count(DISTINCT ${epochDayOf('valid_time')}) FROM forecasts
               WHERE valid_time < ${instantLiteral(hotCutoff)}) AS days`,
    );
    expect(Number(hot.oldest)).toBeGreaterThanOrEqual(hotCutoff);
    expect(Number(hot.days)).toBeGreaterThanOrEqual(HISTORY_DAYS - HOT_WINDOW_DAYS - 2);
    // before the cutoff, only the kept vintages (day_ahead, latest): at most two a valid time
    const [kept] = await query<{ most: bigint; before: bigint }>(
      db,
      `SELECT max(n) AS most, count(*) AS before FROM (
         SELECT count(*) AS n FROM forecasts WHERE valid_time < ${instantLiteral(cutoff)}
         GROUP BY site_id, model_name, model_version, valid_time)`,
    );
    expect(Number(kept.before)).toBeGreaterThan(0);
    expect(Number(kept.most)).toBeLessThanOrEqual(2);

    const next = await nightly(config, NOW + DAY + HOUR);
    expect(next).toMatch(/nightly run \S+: ok \(exit 0\)/);
    expect(daysRead(next, 'forecasts')).toBeLessThanOrEqual(2);
  }, 600_000);
});
