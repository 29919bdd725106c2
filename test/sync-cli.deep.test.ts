// `efsync sync` as a user runs it: usage errors exit 2, a clean run 0, a failed site 1 after
// syncing the others; the summary on stdout names sites, rows and failures.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SiteResponse } from '../src/api/schemas.js';
import type { Emulator } from '../src/emulator/server.js';
import { clientFor, emulator, tempDir, writeConfigFile } from './sync-support.js';
import { runCli } from './fixtures/runner-child.js';

let emu: Emulator;
let sites: SiteResponse[];
let dir: string;
let configFile: string;

beforeAll(async () => {
  emu = await emulator({ sites: 3, now: Date.now });
  const client = clientFor(emu);
  sites = await client.listSites();
  await client.close();
  dir = tempDir();
  configFile = writeConfigFile(dir, { dir, url: emu.url });
});

afterAll(async () => {
  await emu?.close();
});

describe('efsync sync', () => {
  it('rejects an unknown resource with exit code 2 and the list of valid ones', async () => {
    const run = await runCli(['sync', '--config', configFile, '--only', 'sites,bogus']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"bogus"');
    expect(run.stderr).toContain('sites,models,forecasts,outputs,actuals');
  });

  it('rejects an unknown option with exit code 2 (1 means partial)', async () => {
    const run = await runCli(['sync', '--config', configFile, '--bogus']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown option '--bogus'");
  });

  it('rejects --from without --to, and a bad timestamp, with exit code 2', async () => {
    expect((await runCli(['sync', '--config', configFile, '--from', '2026-11-01T00:00Z'])).code).toBe(2);
    const bad = await runCli(['sync', '--config', configFile, '--from', 'yesterday', '--to', '2026-11-02T00:00Z']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--from');
  });

  it('rejects an unknown site with exit code 2', async () => {
    const run = await runCli(['sync', '--config', configFile, '--site', 'no-such-site', '--only', 'sites']);
    expect(run.code).toBe(2);
    expect(run.stdout + run.stderr).toContain('no-such-site');
  });

  it('syncs one site named on the command line into --db, exit code 0', async () => {
    const db = join(dir, 'one-site.duckdb');
    const run = await runCli([
      'sync',
      '--config',
      configFile,
      '--db',
      db,
      '--site',
      sites[0].name,
      '--only',
      'sites,models',
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/of 1 site/);
    expect(run.stdout).toMatch(/rows written: .*models \d+/);
    expect(existsSync(db)).toBe(true);
  });

  it('exits 1 when a site fails, after syncing the others, naming the site', async () => {
    emu.setFaults({ malformedSites: [sites[2].site_id] });
    try {
      const run = await runCli(['sync', '--config', configFile, '--only', 'sites,actuals']);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(`failed: ${sites[2].site_id} actuals`);
      expect(run.stdout).toMatch(/rows written: .*actuals \d+/);
      expect(run.stdout).toMatch(/partial/);
    } finally {
      emu.setFaults({ malformedSites: [] });
    }
  });
});
