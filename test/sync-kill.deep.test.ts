// A sync process killed (SIGKILL) after its first sites landed, then rerun, ends with the same
// warehouse as a clean run: each site and resource lands in one transaction with its sync
// state, the dead writer's lock is taken over, and the rerun fetches what is missing. "Mid-way"
// is measured against a clean child's run, whose warehouse is also the one compared: the killed
// one saw fewer of its units land (a site's newest data, or a piece of its older vintages; the
// loader commits many at once).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { emuForFile, NOW, query, runSync, tableHashes, tempDir, testConfig, writeConfigFile } from './sync-support.js';
import { builtChild } from './built.js';

const SITES = 20;
const KILL_AFTER_UNITS = 3;

const served = emuForFile({ sites: SITES });

/** Starts a sync in a child process and SIGKILLs it once `units` units have landed (null: never); resolves with what it saw. */
function syncChild(
  configFile: string,
  units: number | null,
): Promise<{ landed: number; ended: boolean; signal: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [builtChild('test/sync-child.ts'), configFile, String(NOW)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let landed = 0;
    let ended = false;
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (line.includes('"msg":"site synced"')) landed += 1;
      if (line.includes('"msg":"sync ended"')) ended = true;
      if (landed === units) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', (_code, signal) => resolve({ landed, ended, signal }));
  });
}

describe('a sync killed mid-way, then rerun', () => {
  it('ends with the same data as a clean run', async () => {
    const dir = tempDir();
    const db = join(dir, 'killed.duckdb');
    const whole = tempDir();
    const cleanDb = join(whole, 'clean.duckdb');
    const clean = await syncChild(
      writeConfigFile(whole, { dir: whole, url: served.emu.url, db: cleanDb, sync: { concurrency: 2 } }),
      null,
    );
    expect(clean.ended).toBe(true);
    expect(clean.landed).toBeGreaterThan(KILL_AFTER_UNITS);

    const configFile = writeConfigFile(dir, { dir, url: served.emu.url, db, sync: { concurrency: 2 } });
    const killed = await syncChild(configFile, KILL_AFTER_UNITS);
    expect(killed.signal).toBe('SIGKILL');
    expect(killed.ended).toBe(false);
    expect(killed.landed).toBeGreaterThanOrEqual(KILL_AFTER_UNITS);
    expect(killed.landed).toBeLessThan(clean.landed);

    const rerun = await runSync(testConfig({ dir, url: served.emu.url, db }));
    expect(rerun.status).toBe('ok');

    const hashes = await tableHashes(db);
    expect(hashes).toEqual(await tableHashes(cleanDb));
    expect(hashes.sites).toMatch(new RegExp(`^${SITES} rows`));
    const runs = await query<{ status: string }>(db, 'SELECT status FROM runs ORDER BY started_at');
    expect(runs.map((r) => r.status)).not.toContain('running');
    expect(runs.at(-1)?.status).toBe('ok');
  }, 300_000);
});
