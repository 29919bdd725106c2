// `efsync emulator` as a user runs it: the URL on stdout, the sites served to a key, a clean
// exit on SIGTERM with the state saved, and a clear message for a missing key.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { CLI } from './fixtures/runner-child.js';

/**
 * Runs `efsync emulator` with `args`, waits for the URL it prints, runs `use` against it, then
 * stops it with SIGTERM; resolves to its exit code.
 */
async function withEmulatorChild(args: string[], use: (url: string) => Promise<void>): Promise<number | null> {
  const child = spawn(process.execPath, [...CLI, 'emulator', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once('line', resolve);
      child.once('exit', () => reject(new Error('the emulator exited before printing its URL')));
    });
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line)?.[1];
    expect(url, line).toBeDefined();
    await use(url as string);
  } finally {
    child.kill('SIGTERM');
  }
  return exited;
}

/** GET `path` of the service API at `url` with the key `k`: the answer's JSON. */
async function getJson<T>(url: string, path: string): Promise<T> {
  return (await (await fetch(`${url}/platform/v2${path}`, { headers: { authorization: 'k' } })).json()) as T;
}

describe('efsync emulator', () => {
  it('prints its URL, serves the sites of a key, and saves its state on SIGTERM', async () => {
    const statePath = join(mkdtempSync(join(tmpdir(), 'efsync-emulator-cli-')), 'state.json');
    const args = ['--api-key', 'k', '--api-key', 'k2', '--sites', '3', '--port', '0', '--state', statePath];
    const code = await withEmulatorChild(args, async (url) => {
      const response = await fetch(`${url}/platform/v2/sites`, { headers: { authorization: 'k' } });
      expect(response.status).toBe(200);
      const sites = (await response.json()) as any[];
      expect(sites.map((s) => s.type).sort()).toEqual(['load', 'solar', 'wind']);
      expect((await fetch(`${url}/platform/v2/sites`, { headers: { authorization: 'nope' } })).status).toBe(401);
    });
    expect(code).toBe(0);
    expect(existsSync(statePath)).toBe(true);
  });

  it('refuses to start without an API key, naming the flag', () => {
    const env = { ...process.env };
    delete env.EFSYNC_API_KEY;
    const result = spawnSync(process.execPath, [...CLI, 'emulator', '--port', '0'], { encoding: 'utf8', env });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--api-key');
  });

  it('holds its clock at --now: the actuals end at the last quarter hour before it', async () => {
    const args = ['--api-key', 'k', '--sites', '1', '--port', '0', '--now', '2026-03-01T10:20:00Z'];
    const code = await withEmulatorChild(args, async (url) => {
      const [site] = await getJson<any[]>(url, '/sites');
      const range = 'start_date=2026-03-01T08:00:00Z&end_date=2026-03-02T00:00:00Z';
      const actuals = await getJson<{ valid_time: string[] }>(url, `/sites/${site.id}/actual?${range}`);
      expect(actuals.valid_time.at(-1)).toBe('2026-03-01T10:00:00Z');
    });
    expect(code).toBe(0);
  });

  it('refuses a --now that is not an instant, naming the flag', () => {
    const result = spawnSync(process.execPath, [...CLI, 'emulator', '--api-key', 'k', '--now', 'yesterday'], {
      encoding: 'utf8',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--now');
  });

  it.each([
    ['--quota', '5/soon'],
    ['--revoke-after', '-1'],
  ])('refuses %s %s, naming the flag', (flag, value) => {
    const result = spawnSync(process.execPath, [...CLI, 'emulator', '--api-key', 'k', flag, value], {
      encoding: 'utf8',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(flag);
  });

  it('serves the vintage switches: microsecond issue times, a late kind, a failing vintage (#29)', async () => {
    const now = '2026-03-01T10:20:00Z';
    const args = [
      '--api-key',
      'k',
      '--sites',
      '1',
      '--now',
      now,
      '--fractional-issues',
      '--late-publication',
      'physical=20',
    ];
    const first = await withEmulatorChild(args, async (url) => {
      const [site] = await getJson<any[]>(url, '/sites');
      const updates = await getJson<string[]>(url, `/sites/${site.id}/forecast/updates`);
      expect(updates.at(-1)).toMatch(/^2026-03-01T\d\d:\d\d:0\d(\.\d{1,6})?Z$/);
      // physical fires at 06:00 and, 20 minutes late, issues 06:20:0x
      expect(updates.some((text) => text.startsWith('2026-03-01T06:20:0'))).toBe(true);
    });
    expect(first).toBe(0);
    const failing = await withEmulatorChild(
      ['--api-key', 'k', '--sites', '1', '--now', now, '--failing-vintage', 'nosuchsite@2026-03-01T06:00:00Z'],
      async (url) => {
        expect((await fetch(`${url}/platform/v2/sites`, { headers: { authorization: 'k' } })).status).toBe(200);
      },
    );
    expect(failing).toBe(0);
  });

  it('refuses a --failing-vintage without an instant and a --late-publication of an unknown kind', () => {
    for (const [flag, value] of [
      ['--failing-vintage', 'site-without-instant'],
      ['--late-publication', 'solar=20'],
    ]) {
      const result = spawnSync(process.execPath, [...CLI, 'emulator', '--api-key', 'k', flag, value], {
        encoding: 'utf8',
      });
      expect(result.status, flag).toBe(2);
      expect(result.stderr).toContain(flag);
    }
  });

  it('serves the untidy answers --untidy names, and refuses a kind it does not know', async () => {
    const args = ['--api-key', 'k', '--sites', '1', '--port', '0', '--now', '2026-03-01T10:20:00Z'];
    args.push('--untidy', 'update-nulls', 'duplicates');
    const code = await withEmulatorChild(args, async (url) => {
      const [site] = await getJson<any[]>(url, '/sites');
      const updates = await getJson<unknown[]>(url, `/sites/${site.id}/forecast/updates`);
      expect(updates.filter((entry) => entry === null)).toHaveLength(1);
      const range = 'start_date=2026-03-01T08:00:00Z&end_date=2026-03-01T10:00:00Z';
      const actuals = await getJson<{ valid_time: string[] }>(url, `/sites/${site.id}/actual?${range}`);
      expect(actuals.valid_time.length).toBeGreaterThan(2);
      expect(actuals.valid_time.at(-1)).toBe(actuals.valid_time[1]);
    });
    expect(code).toBe(0);
    const refused = spawnSync(process.execPath, [...CLI, 'emulator', '--api-key', 'k', '--untidy', 'messy'], {
      encoding: 'utf8',
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('--untidy');
  });

  it('refuses a fault rate outside 0..1', () => {
    const result = spawnSync(process.execPath, [...CLI, 'emulator', '--api-key', 'k', '--fault-rate', '1.5'], {
      encoding: 'utf8',
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--fault-rate');
  });
});
