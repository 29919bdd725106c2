// Plan and apply against the emulator over loopback, through the runner like `efsync capacity
// apply`: afterwards the service's timeline (Get Site Capacity, capacity_kw_array, the forecast's
// capacity column) equals the file, removed points and windows included; forecasts are capped; a
// second apply pushes nothing; drift on the service shows in the plan; the ledger records every
// push; one failing site leaves the others pushed; an invalid file pushes nothing at all.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pushCapacity from '../jobs/push-capacity.js';
import type { ServiceClient } from '../src/api/client.js';
import { applyPlan } from '../src/capacity/apply.js';
import { formatPlan, planCapacity, planJson, valueAt } from '../src/capacity/plan.js';
import type { Emulator } from '../src/emulator/server.js';
import { EXIT } from '../src/outcome.js';
import { runJob } from '../src/runner/run.js';
import { DAY, parseInstant } from '../src/time.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import {
  applyEachMinute,
  capacityConfig,
  clientFor,
  NOW,
  OTHER_KEY,
  publishedLedger,
  quietLog,
  SEVILLA_WITH_WINDOW,
  siteNamed,
  startDemoEmulator,
  tempDir,
  timelineFrom,
  writeFiles,
} from './capacity-support.js';

const at = (text: string) => parseInstant(text);

const UPPSALA = `# Uppsala solar fixed: 4794 kW nameplate
site: Uppsala solar fixed
unit: kW
points:
  - valid_time: 2026-11-22T00:00Z
    value: 4000
windows:
  - from: 2026-11-22T10:00Z
    to: 2026-11-22T13:00Z
    value: 100
    reason: inverter replacement
`;

const ESBJERG = `site: Esbjerg wind
unit: MW
points:
  - valid_time: 2026-11-22T00:00Z
    value: 30.5
  - valid_time: 2026-11-23T00:00Z
    value: 1.1
`;

const FREIBURG = `# site: Freiburg load
valid_time,value
2026-11-22T00:00Z,3500
2026-11-22T18:00Z,4000
`;

let emulator: Emulator;
let client: ServiceClient;

beforeAll(async () => {
  emulator = await startDemoEmulator();
  client = clientFor(emulator);
});

afterAll(async () => {
  await client.close();
  await emulator.close();
});

/** The capacity of every site of both accounts, to prove that nothing was pushed. */
async function allCapacity() {
  const other = clientFor(emulator, OTHER_KEY);
  try {
    return [...(await allCapacityOf(client)), ...(await allCapacityOf(other))];
  } finally {
    await other.close();
  }
}

function folder(files: Record<string, string>): string {
  const dir = tempDir('capacity-apply');
  writeFiles(dir, files);
  return dir;
}

const apply = (config: ReturnType<typeof capacityConfig>) =>
  runJob(pushCapacity, { config, log: quietLog, now: () => NOW });

/** Uppsala's and Esbjerg's files with new values (kW; MW), their config, and the Esbjerg site. */
async function uppsalaAndEsbjerg(uppsalaKw: number, esbjergMw: string) {
  const dir = folder({
    'uppsala.yaml': UPPSALA.replace('value: 4000', `value: ${uppsalaKw}`),
    'esbjerg.yaml': ESBJERG.replace('30.5', esbjergMw),
  });
  return { dir, config: capacityConfig(emulator, dir), esbjerg: await siteNamed(client, 'Esbjerg wind') };
}

/** Applies `config`, expecting the push of `siteId` alone to fail, its reason holding `status`. */
async function applyFailingAlone(config: ReturnType<typeof capacityConfig>, siteId: string, status: string) {
  const result = await apply(config);
  expect(result).toMatchObject({ status: 'partial', exitCode: EXIT.partial });
  expect(result.failures).toEqual([
    expect.objectContaining({ siteId, resource: 'capacity', reason: expect.stringContaining(status) }),
  ]);
  expect(result.summary).toContain('capacity: 1 pushed, 0 unchanged, 1 failed');
  return result;
}

describe('capacity plan and apply', () => {
  it('plans, pushes, and the service and its forecasts follow the timeline; a second apply pushes nothing', async () => {
    const dir = folder({ 'uppsala.yaml': UPPSALA, 'esbjerg.yaml': ESBJERG, 'freiburg.csv': FREIBURG });
    const config = capacityConfig(emulator, dir);
    const uppsala = await siteNamed(client, 'Uppsala solar fixed');
    const start = at('2026-11-22T00:00Z');
    const before = await client.getSiteForecast(uppsala.site_id, { start, end: start + DAY });

    const plan = await planCapacity(dir, client, null, 10);
    const text = formatPlan(plan);
    expect(text).toContain(`Uppsala solar fixed (${uppsala.site_id})  ${join(dir, 'uppsala.yaml')}`);
    // The service holds the site's nameplate; the file changes it from its first point on.
    expect(text).toContain('against the service: 2 added, 1 changed, 0 removed  -> apply uploads it');
    expect(text).toMatch(/2026-11-22T10:00Z\s+4794\s+-\s+100\s+added\s+never pushed\s+never pushed/);
    expect(text).toContain('3 sites: 3 to push, 0 unchanged');
    expect(planJson(plan).sites.find((s) => s.site_name === 'Esbjerg wind')).toMatchObject({
      push: true,
      delete_first: false,
      points: [
        { valid_time: '2026-11-22T00:00Z', value: 30500 },
        { valid_time: '2026-11-23T00:00Z', value: 1100 },
      ],
      vs_service: {
        added: [{ valid_time: '2026-11-23T00:00Z', before: null, after: 1100 }],
        changed: [{ valid_time: '2026-11-22T00:00Z', before: 36000, after: 30500 }],
        removed: [],
      },
      last_push: null,
    });

    const first = await apply(config);
    expect(first).toMatchObject({ status: 'ok', exitCode: EXIT.ok, rows: { capacity_pushes: 3 } });
    expect(first.summary).toContain('capacity: 3 pushed, 0 unchanged, 0 failed');

    // From the file's first point on, the service's timeline is the file's; before it, the site's nameplate stays.
    const after = await client.getSite(uppsala.site_id);
    expect(after.capacity_kw_array).toEqual([
      { value: 4794, dateStart: at('2026-11-07T00:00Z'), dateEnd: at('2026-11-22T00:00Z') },
      { value: 4000, dateStart: at('2026-11-22T00:00Z'), dateEnd: at('2026-11-22T10:00Z') },
      { value: 100, dateStart: at('2026-11-22T10:00Z'), dateEnd: at('2026-11-22T13:00Z') },
      { value: 4000, dateStart: at('2026-11-22T13:00Z'), dateEnd: null },
    ]);

    // The forecast's capacity column follows the timeline, and forecasts are capped by it.
    const timeline = [
      { time: start, valueKw: 4000 },
      { time: at('2026-11-22T10:00Z'), valueKw: 100 },
      { time: at('2026-11-22T13:00Z'), valueKw: 4000 },
    ];
    const forecast = await client.getSiteForecast(uppsala.site_id, { start, end: start + DAY });
    expect(forecast.valid_time.length).toBeGreaterThan(0);
    forecast.valid_time.forEach((t, i) => {
      expect(forecast.capacity[i]).toBe(valueAt(timeline, t));
      expect(forecast.forecast[i]!).toBeLessThanOrEqual(forecast.capacity[i]!);
    });
    const inWindow = (t: number) => t >= at('2026-11-22T10:00Z') && t < at('2026-11-22T13:00Z');
    const uncapped = before.valid_time.map((t, i) => (inWindow(t) ? before.forecast[i]! : 0));
    expect(Math.max(...uncapped)).toBeGreaterThan(100);
    expect(Math.max(...forecast.valid_time.map((t, i) => (inWindow(t) ? forecast.forecast[i]! : 0)))).toBe(100);

    // MW converted; the CSV file's points landed too.
    const esbjerg = await siteNamed(client, 'Esbjerg wind');
    const wind = await client.getSiteForecast(esbjerg.site_id, { start, end: start + 2 * DAY });
    expect(new Set(wind.capacity)).toEqual(new Set([30500, 1100]));
    const freiburg = await siteNamed(client, 'Freiburg load');
    expect(freiburg.capacity_kw_array.slice(1).map((s) => s.value)).toEqual([3500, 4000]);

    // The ledger: one row per site with file, content hash, points and response; no git repository here.
    const ledger = await publishedLedger(config);
    expect(ledger).toHaveLength(3);
    const row = ledger.find((r) => r.site_id === uppsala.site_id)!;
    expect(row).toMatchObject({
      run_id: first.runId,
      file: join(dir, 'uppsala.yaml'),
      status: 'ok',
      error: null,
      git_commit: null,
      content_hash: createHash('sha256')
        .update(readFileSync(join(dir, 'uppsala.yaml')))
        .digest('hex'),
    });
    expect(JSON.parse(row.points)).toEqual([
      { valid_time: '2026-11-22T00:00Z', value: 4000 },
      { valid_time: '2026-11-22T10:00Z', value: 100 },
      { valid_time: '2026-11-22T13:00Z', value: 4000 },
    ]);
    expect(JSON.parse(row.response!)).toEqual({ message: 'Capacity uploaded successfully' });
    expect(row.deleted_points).toBeNull();

    // A second apply with nothing changed pushes nothing.
    const second = await apply(config);
    expect(second).toMatchObject({ status: 'ok', rows: { capacity_pushes: 0 } });
    expect(second.summary).toContain('capacity: 0 pushed, 3 unchanged, 0 failed');
    expect(await publishedLedger(config)).toHaveLength(3);

    // An edit shows in the plan against the service and the last push, and only that site is pushed.
    writeFiles(dir, { 'freiburg.csv': FREIBURG.replace('3500', '3000') });
    const ledgerWarehouse = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
    const edited = await planCapacity(dir, client, ledgerWarehouse, 10);
    await ledgerWarehouse.close();
    const freiburgPlan = planJson(edited).sites.find((s) => s.site_name === 'Freiburg load')!;
    expect(freiburgPlan.vs_service).toEqual({
      added: [],
      changed: [{ valid_time: '2026-11-22T00:00Z', before: 3500, after: 3000 }],
      removed: [],
    });
    expect(freiburgPlan.vs_last_push).toEqual(freiburgPlan.vs_service);
    expect(freiburgPlan).toMatchObject({ delete_first: false, drift: { added: [], changed: [], removed: [] } });
    expect(freiburgPlan.last_push).toMatchObject({ file: join(dir, 'freiburg.csv') });
    expect(formatPlan(edited)).toContain('3 sites: 1 to push, 2 unchanged');
    const third = await apply(config);
    expect(third.summary).toContain('capacity: 1 pushed, 2 unchanged, 0 failed');
    const thirdRows = (await publishedLedger(config)).filter((r) => r.run_id === third.runId);
    expect(thirdRows.map((r) => [r.site_id, r.deleted_points])).toEqual([[freiburg.site_id, null]]);

    // A file removed: the plan says the service keeps what was pushed last.
    rmSync(join(dir, 'esbjerg.yaml'));
    const reopened = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
    const removed = await planCapacity(dir, client, reopened, 10);
    await reopened.close();
    expect(removed.notInFolder.map((p) => p.siteId)).toEqual([esbjerg.site_id]);
    expect(formatPlan(removed)).toContain(
      `no file any more for site ${esbjerg.site_id} (last pushed 2026-11-21T06:00Z from ${join(dir, 'esbjerg.yaml')}): the service keeps that timeline`,
    );
  });

  it('--site narrows the push, while every file is still validated', async () => {
    const dir = folder({
      'uppsala.yaml': UPPSALA.replace('value: 4000', 'value: 3600'),
      'freiburg.csv': FREIBURG.replace('3500', '2600'),
    });
    const config = capacityConfig(emulator, dir);
    const only = await runJob(pushCapacity, {
      config,
      log: quietLog,
      now: () => NOW,
      options: { sites: ['Freiburg load'] },
    });
    expect(only.summary).toEqual([
      expect.stringMatching(/^pushed {5}Freiburg load/),
      'capacity: 1 pushed, 0 unchanged, 0 failed',
    ]);
    const unknown = await runJob(pushCapacity, {
      config,
      log: quietLog,
      now: () => NOW,
      options: { sites: ['Atlantis'] },
    });
    expect(unknown).toMatchObject({
      status: 'failed',
      exitCode: EXIT.usage,
      error: '--site "Atlantis": no capacity file covers that site',
    });
    writeFiles(dir, { 'broken.csv': 'valid_time,value\nsoon,1\n' });
    const invalid = await runJob(pushCapacity, {
      config,
      log: quietLog,
      now: () => NOW,
      options: { sites: ['Freiburg load'] },
    });
    expect(invalid).toMatchObject({ status: 'failed', exitCode: EXIT.usage });
    expect(invalid.error).toContain('broken.csv:2:1: valid_time: must be UTC at minute precision');
  });

  it('the example files in config/capacity/ are valid for the demo sites', async () => {
    const plan = await planCapacity('config/capacity', client, null, 10);
    expect(plan.sites.map((s) => s.timeline.siteName).sort()).toEqual([
      'Esbjerg wind',
      'Freiburg load',
      'Uppsala solar fixed',
    ]);
  });

  it('records the git commit of the capacity folder when it is a git repository', async () => {
    const dir = folder({ 'sevilla.csv': '# site: Sevilla solar tracking\nvalid_time,value\n2026-11-22T00:00Z,7000\n' });
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', dir, '-c', 'user.name=ops', '-c', 'user.email=ops@example.com', ...args], {
        encoding: 'utf8',
      });
    git('init', '-q');
    git('add', '.');
    git('commit', '-q', '-m', 'Sevilla capacity');
    const head = git('rev-parse', 'HEAD').trim();
    const config = capacityConfig(emulator, dir);
    expect(await apply(config)).toMatchObject({ status: 'ok' });
    expect((await publishedLedger(config)).map((r) => r.git_commit)).toEqual([head]);
  });

  it("removing a window from the file: the service's timeline equals the file after apply; drift shows in plan", async () => {
    const sevilla = await siteNamed(client, 'Sevilla solar tracking');
    const dir = folder({ 'sevilla.yaml': SEVILLA_WITH_WINDOW });
    const config = capacityConfig(emulator, dir);
    const planNow = async () => {
      const ledger = await Warehouse.open({ path: config.warehouse.path, readOnly: true });
      try {
        return await planCapacity(dir, client, ledger, 10);
      } finally {
        await ledger.close();
      }
    };
    /** The service's points from the file's first point on (before it, the site's nameplate stays). */
    const timeline = () => timelineFrom(client, sevilla.site_id, at('2026-11-22T00:00Z'));
    const applyLater = applyEachMinute(config);
    expect(await applyLater()).toMatchObject({ status: 'ok' });
    expect(await timeline()).toEqual([
      ['2026-11-22T00:00Z', 6000],
      ['2026-11-23T08:00Z', 0],
      ['2026-11-23T16:00Z', 6000],
    ]);

    // The window is taken out of the file: an upload alone would leave it on the service.
    writeFiles(dir, { 'sevilla.yaml': SEVILLA_WITH_WINDOW.replace(/windows:\n.*\n/, '') });
    const plan = planJson(await planNow()).sites[0];
    expect(plan).toMatchObject({
      push: true,
      delete_first: true,
      vs_service: {
        added: [],
        changed: [],
        removed: [
          { valid_time: '2026-11-23T08:00Z', before: 0, after: null },
          { valid_time: '2026-11-23T16:00Z', before: 6000, after: null },
        ],
      },
    });
    const removed = await applyLater();
    expect(removed.summary[0]).toMatch(
      /^pushed {5}Sevilla solar tracking .*: 1 points \(2 changed; then the 2 points the file removed deleted\)$/,
    );
    expect(await timeline()).toEqual([['2026-11-22T00:00Z', 6000]]);
    const forecast = await client.getSiteForecast(sevilla.site_id, {
      start: at('2026-11-23T08:00Z'),
      end: at('2026-11-23T16:00Z'),
    });
    expect(new Set(forecast.capacity)).toEqual(new Set([6000]));
    expect(await applyLater()).toMatchObject({ status: 'ok', rows: { capacity_pushes: 0 } });

    // Someone changes the service outside the config: the plan shows the drift, and apply undoes it.
    await client.uploadSiteCapacity(sevilla.site_id, { data: [{ valid_time: '2026-11-25T00:00Z', value: 3000 }] });
    const drifted = await planNow();
    expect(planJson(drifted).sites[0]).toMatchObject({
      push: true,
      drift: { added: [{ valid_time: '2026-11-25T00:00Z', before: null, after: 3000 }], changed: [], removed: [] },
      vs_last_push: { added: [], changed: [], removed: [] },
      vs_service: { removed: [{ valid_time: '2026-11-25T00:00Z', before: 3000, after: null }] },
    });
    const text = formatPlan(drifted);
    expect(text).toContain(
      'drift: the service changed outside the config since the last push: 1 added, 0 changed, 0 removed',
    );
    expect(text).toMatch(/2026-11-25T00:00Z\s+3000\s+6000\s+6000\s+removed\s+-\s+added/);
    await applyLater();
    expect(await timeline()).toEqual([['2026-11-22T00:00Z', 6000]]);
    expect(formatPlan(await planNow())).toContain('drift: none (the service holds what efsync pushed last)');
  });

  it("when one site's push fails, pushes the others and records which failed and why", async () => {
    const { config, esbjerg } = await uppsalaAndEsbjerg(3900, '29');
    const uppsala = await siteNamed(client, 'Uppsala solar fixed');
    emulator.setFaults({
      faultHook: (c) => (c.method === 'POST' && c.siteId === esbjerg.site_id ? 'http500' : undefined),
    });
    try {
      const result = await applyFailingAlone(config, esbjerg.site_id, '500');
      expect(result.summary.find((l) => l.startsWith('FAILED'))).toContain(`Esbjerg wind (${esbjerg.site_id})`);
    } finally {
      emulator.setFaults({ faultHook: null });
    }
    const values = async (siteId: string) => (await client.getSite(siteId)).capacity_kw_array.map((s) => s.value);
    expect(await values(uppsala.site_id)).toContain(3900);
    expect(await values(esbjerg.site_id)).not.toContain(29000);
    const ledger = await publishedLedger(config);
    expect(ledger.map((r) => [r.site_id, r.status])).toEqual(
      expect.arrayContaining([
        [uppsala.site_id, 'ok'],
        [esbjerg.site_id, 'failed'],
      ]),
    );
    const failed = ledger.find((r) => r.status === 'failed')!;
    expect(failed.error).toContain('500');
    // Only values changed: the upload alone was to make the service equal the file, nothing was deleted.
    expect(failed.deleted_points).toBeNull();

    // The failed site still differs from the service, so the next apply pushes it (and only it).
    const retry = await apply(config);
    expect(retry.summary).toContain('capacity: 1 pushed, 1 unchanged, 0 failed');
    expect((await values(esbjerg.site_id)).slice(1)).toEqual([29000, 1100]);
  });

  it('a site whose timeline the service does not give is not pushed, the others are', async () => {
    const { dir, config, esbjerg } = await uppsalaAndEsbjerg(3950, '28');
    emulator.setFaults({
      faultHook: (c) =>
        c.method === 'GET' && c.path.endsWith('/capacity') && c.siteId === esbjerg.site_id ? 'http503' : undefined,
    });
    try {
      const plan = await planCapacity(dir, client, null, 10);
      expect(formatPlan(plan)).toContain('against the service: UNKNOWN, its timeline could not be read');
      expect(formatPlan(plan)).toContain('2 sites: 1 to push, 0 unchanged, 1 unknown');
      await applyFailingAlone(config, esbjerg.site_id, '503');
    } finally {
      emulator.setFaults({ faultHook: null });
    }
    expect((await client.getSite(esbjerg.site_id)).capacity_kw_array.map((s) => s.value)).not.toContain(28000);
    expect((await publishedLedger(config)).map((r) => r.site_id)).toEqual([
      (await siteNamed(client, 'Uppsala solar fixed')).site_id,
    ]);
  });

  it("a site gone by the time of its push (404: another account's id) fails alone", async () => {
    const dir = folder({
      'uppsala.yaml': UPPSALA.replace('value: 4000', 'value: 3800'),
      'freiburg.csv': FREIBURG.replace('3500', '2500'),
    });
    const config = capacityConfig(emulator, dir);
    const other = clientFor(emulator, OTHER_KEY);
    const foreign = await siteNamed(other, 'Freiburg load');
    await other.close();
    const plan = await planCapacity(dir, client, null, 10);
    const moved = {
      ...plan,
      sites: plan.sites.map((s) =>
        s.timeline.siteName === 'Freiburg load' ? { ...s, timeline: { ...s.timeline, siteId: foreign.site_id } } : s,
      ),
    };
    const warehouse = await Warehouse.open({ path: config.warehouse.path });
    try {
      const result = await applyPlan(moved, client, warehouse, { runId: null, now: () => NOW });
      expect(result.pushed.map((p) => p.plan.timeline.siteName)).toEqual(['Uppsala solar fixed']);
      expect(result.failed).toHaveLength(1);
      expect(result.failed[0].error).toContain('404');
      const rows = await warehouse.all<{ site_id: string; status: string; response: string }>(
        'SELECT site_id, status, response::VARCHAR AS response FROM capacity_pushes ORDER BY status',
      );
      expect(rows.map((r) => [r.site_id, r.status])).toEqual([
        [foreign.site_id, 'failed'],
        [plan.sites.find((s) => s.timeline.siteName === 'Uppsala solar fixed')!.timeline.siteId, 'ok'],
      ]);
      expect(JSON.parse(rows[0].response)).toMatchObject({ status: 404 });
    } finally {
      await warehouse.close();
    }
    expect((await siteNamed(client, 'Uppsala solar fixed')).capacity_kw_array.map((s) => s.value)).toContain(3800);
  });
});

describe('an invalid file stops the whole apply: nothing is pushed', () => {
  const valid = { 'uppsala.yaml': UPPSALA.replace('value: 4000', 'value: 3700') };
  const cases: [string, Record<string, string>, RegExp][] = [
    [
      'an unknown site',
      { 'bad.yaml': 'site: Atlantis solar\nunit: kW\npoints:\n  - {valid_time: 2026-11-22T00:00Z, value: 10}\n' },
      /bad\.yaml:1:7: site: unknown site "Atlantis solar": no site of this account has that id or name/,
    ],
    ['a site of another account', {}, /bad\.yaml:1:7: site: unknown site "[0-9a-f-]+": no site of this account/],
    [
      'a value above the nameplate by more than the margin',
      { 'bad.yaml': 'site: Freiburg load\nunit: MW\npoints:\n  - valid_time: 2026-11-22T00:00Z\n    value: 5.5\n' },
      /bad\.yaml:5:12: value: 5500 kW is above the site's nameplate 4964 kW by more than 10% \(at most 5460\.4 kW\)/,
    ],
    [
      'a window above the nameplate',
      {
        'bad.yaml': `site: Esbjerg wind
unit: kW
points: [{valid_time: 2026-11-22T00:00Z, value: 36000}]
windows: [{from: 2026-11-23T00:00Z, to: 2026-11-23T06:00Z, value: 40000, reason: typo}]
`,
      },
      /bad\.yaml:4:67: value: 40000 kW is above the site's nameplate 36000 kW/,
    ],
    [
      'two files for one site',
      { 'again.csv': '# site: Uppsala solar fixed\nvalid_time,value\n2026-11-22T00:00Z,10\n' },
      /uppsala\.yaml:2:7: site: Uppsala solar fixed \([0-9a-f-]+\) already has its capacity in .*again\.csv/,
    ],
    [
      'a timestamp not at minute precision',
      { 'bad.yaml': 'site: Freiburg load\nunit: kW\npoints:\n  - valid_time: 2026-11-22T00:00:00Z\n    value: 1\n' },
      /bad\.yaml:4:17: points\.0\.valid_time: must be UTC at minute precision/,
    ],
    [
      'a negative value',
      { 'bad.csv': '# site: Freiburg load\nvalid_time,value\n2026-11-22T00:00Z,-3\n' },
      /bad\.csv:3:19: value: must not be negative/,
    ],
    [
      'duplicate times',
      { 'bad.csv': '# site: Freiburg load\nvalid_time,value\n2026-11-22T00:00Z,3\n2026-11-22T00:00Z,4\n' },
      /bad\.csv:4:1: valid_time: duplicate 2026-11-22T00:00Z, also at line 3/,
    ],
    [
      'an unknown unit',
      { 'bad.yaml': 'site: Freiburg load\nunit: kw\npoints: [{valid_time: 2026-11-22T00:00Z, value: 1}]\n' },
      /bad\.yaml:2:7: unit: unknown unit "kw": use kW or MW/,
    ],
  ];

  it.each(cases)('%s', async (name, files, expected) => {
    let bad = files;
    if (name === 'a site of another account') {
      const other = clientFor(emulator, OTHER_KEY);
      const foreign = await siteNamed(other, 'Freiburg load');
      await other.close();
      bad = { 'bad.yaml': `site: ${foreign.site_id}\nunit: kW\npoints: [{valid_time: 2026-11-22T00:00Z, value: 1}]\n` };
    }
    const dir = folder({ ...valid, ...bad });
    const config = capacityConfig(emulator, dir);
    const capacityBefore = await allCapacity();
    const result = await apply(config);
    expect(result).toMatchObject({ status: 'failed', exitCode: EXIT.usage });
    expect(result.error).toMatch(expected);
    expect(await allCapacity()).toEqual(capacityBefore);
    expect(await publishedLedger(config)).toEqual([]);
  });
});

describe('a key revoked halfway through an apply', () => {
  it('stops the whole apply (exit 4): the push that landed and the one refused are recorded, the rest left for the next apply; a plan ends on it', async () => {
    const own = await startDemoEmulator();
    const dir = folder({
      'uppsala.yaml': UPPSALA.replace('value: 4000', 'value: 3600'),
      'esbjerg.yaml': ESBJERG.replace('30.5', '27'),
      'freiburg.csv': FREIBURG.replace('3500', '2400'),
    });
    const loaded = capacityConfig(own, dir);
    // One site pushed at a time, so that the revocation falls between two pushes.
    const config = { ...loaded, sync: { ...loaded.sync, concurrency: 1 } };
    const reader = clientFor(own);
    try {
      const before = await allCapacityOf(reader);
      // The key is revoked once the first upload is answered: every request after it is refused.
      let uploads = 0;
      own.setFaults({
        faultHook: (c) => {
          // stats() counts this request after the hook: it is the one past that count.
          if (c.method === 'POST' && ++uploads === 1) own.setLimits({ revokeAfter: own.stats().requests + 1 });
          return undefined;
        },
      });
      const stopped = await apply(config);
      expect(stopped).toMatchObject({ status: 'failed', exitCode: 4 });
      expect(stopped.error).toMatch(/^the service rejected the API key \(401\)/);
      const ledger = await publishedLedger(config);
      expect(ledger.map((row) => row.status).sort()).toEqual(['failed', 'ok']);
      expect(ledger.find((row) => row.status === 'failed')!.error).toMatch(/401/);

      own.setFaults({ faultHook: null });
      own.setLimits({ revokeAfter: null });
      const after = await allCapacityOf(reader);
      const changed = after.filter((site, i) => JSON.stringify(site) !== JSON.stringify(before[i]));
      expect(changed).toHaveLength(1);
      const next = await apply(config);
      expect(next.summary).toContain('capacity: 2 pushed, 1 unchanged, 0 failed');

      // A plan whose reads meet the stop ends on it, rather than listing every site as unknown:
      // the key is revoked after the site list.
      own.setLimits({ revokeAfter: own.stats().requests + 1 });
      const refused = clientFor(own);
      await expect(planCapacity(dir, refused, null, 10)).rejects.toThrow(/rejected the API key \(401\)/);
      await refused.close();
    } finally {
      await reader.close();
      await own.close();
    }
  });
});

/** The capacity of every site the client's account holds. */
async function allCapacityOf(reader: ServiceClient) {
  return (await reader.listSites()).map((s) => ({ id: s.site_id, capacity: s.capacity_kw_array }));
}
