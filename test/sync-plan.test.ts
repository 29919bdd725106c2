// `efsync sync --plan` (src/sync/plan.ts): the requests the next run makes, per resource, counted
// by the sync's own code path; held to the requests a sync then really makes, on a first and on an
// incremental night.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { createLogger } from '../src/log.js';
import { formatPlan, planSync, type SyncPlan } from '../src/sync/plan.js';
import { CLI } from './fixtures/runner-child.js';
import { clientFor, emulator, NOW, runSync, tempDir, testConfig, writeConfigFile } from './sync-support.js';

let clock = NOW;
let emu: Emulator;

beforeAll(async () => {
  emu = await emulator({ sites: 3, now: () => clock });
});

afterAll(async () => {
  await emu?.close();
});

async function plan(config: ReturnType<typeof testConfig>): Promise<SyncPlan> {
  const client = clientFor(emu);
  try {
    return await planSync({
      client,
      warehousePath: config.warehouse.path,
      log: createLogger({ level: 'silent' }),
      now: clock,
      resources: config.sync.resources,
      sync: config.sync,
    });
  } finally {
    await client.close();
  }
}

/** The requests the emulator served during `run`. */
async function served(run: () => Promise<unknown>): Promise<number> {
  const before = emu.stats().requests;
  await run();
  return emu.stats().requests - before;
}

describe('the plan of the next sync', () => {
  it('counts the requests a first and an incremental sync then make', async () => {
    const dir = tempDir();
    const config = testConfig({ dir, url: emu.url });
    const first = await plan(config);
    expect(first.sites).toBe(3);
    expect(first.requests.forecasts).toBeGreaterThan(0);
    expect(first.requests.outputs).toBeGreaterThan(0);
    expect(first.requests.actuals).toBe(3);
    // The site list, and each site's three model lists (new models) and its forecast updates.
    expect(first.sent).toBe(1 + 3 * 3 + 3);
    expect(await served(() => runSync(config, {}, clock))).toBe(first.total);

    clock = NOW + 6 * 3_600_000;
    try {
      const next = await plan(config);
      // Known models are listed once, not with the type filters again.
      expect(next.requests.models).toBe(3);
      expect(next.total).toBeLessThan(first.total);
      expect(await served(() => runSync(config, {}, clock))).toBe(next.total);
    } finally {
      clock = NOW;
    }
  }, 60_000);

  it('says how long the requests take at the rate limit', () => {
    const plan: SyncPlan = {
      sites: 2,
      resources: ['forecasts', 'actuals'],
      requests: { sites: 1, models: 0, 'forecast updates': 2, forecasts: 58, outputs: 0, actuals: 2 },
      total: 63,
      sent: 3,
    };
    const lines = formatPlan(plan, { requests: 100, perMs: 60_000 });
    expect(lines[0]).toBe('the next sync of 2 site(s) (forecasts, actuals) makes 63 requests, without retries:');
    expect(lines).toContain('  forecasts         58');
    expect(lines).toContain('at service.rate_limit (100 per 1 min): 37.2 s at least');
    expect(formatPlan(plan, null).join('\n')).toContain('no service.rate_limit');
  });

  it('efsync sync --plan prints it at the run clock and writes nothing', async () => {
    const dir = tempDir();
    const file = writeConfigFile(dir, { dir, url: emu.url });
    const { stdout } = await promisify(execFile)(process.execPath, [...CLI, 'sync', '--plan', '--config', file], {
      encoding: 'utf8',
      env: { ...process.env, EFSYNC_NOW: new Date(NOW).toISOString() },
    });
    // EFSYNC_NOW sets the clock of the plan as it sets a sync's: the same night as planSync at NOW.
    const expected = await plan(testConfig({ dir: tempDir(), url: emu.url }));
    expect(stdout).toMatch(
      new RegExp(
        `^the next sync of 3 site\\(s\\) \\(sites, models, forecasts, outputs, actuals\\) makes ${expected.total} requests`,
      ),
    );
    expect(existsSync(join(dir, 'warehouse.duckdb'))).toBe(false);
    expect(stdout).toContain('(planning it sent 13 requests');
  }, 60_000);
});
