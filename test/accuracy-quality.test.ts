// Data-quality flags on actuals: computed by the loader on every load (and anew for revised
// values), with outage windows from the capacity files; flagged actuals are left out of scores
// unless asked, and counted beside every score.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshCapacityWindows } from '../src/capacity/windows.js';
import { DEFAULT_QUALITY } from './warehouse-support.js';
import { FLAGS, flagActuals, reflagActuals, withSunUp } from '../src/warehouse/flags.js';
import { runWarehouseAccuracy, scoreWarehouse, settingsFromConfig } from '../src/accuracy/score.js';
import { Config } from '../src/config.js';
import { sunVector } from '../src/emulator/solar.js';
import type { Status } from '../src/runner/status.js';
import { loadActuals } from '../src/warehouse/loader.js';
import type { Warehouse } from '../src/warehouse/warehouse.js';
import { addCapacity, addForecast, addSite, openTestWarehouse } from './accuracy-fixture.js';
import { CLI } from './fixtures/runner-child.js';

const run = promisify(execFile);
const MIN = 60_000;
const HOUR = 60 * MIN;
/** The default thresholds, for actuals labelled interval-ending (14:00 is 13:45-14:00). */
const ENDING = { ...DEFAULT_QUALITY, label: 'ending' as const };
const DAY_START = Date.parse('2026-03-01T00:00:00Z');
const at = (hhmm: string) => Date.parse(`2026-03-01T${hhmm}:00Z`);

/** 15-minute interval-ending actuals of one March day at a solar site near Stockholm (the sun above the horizon from about 06:00 to 16:10 UTC). */
function day(): Map<number, number | null> {
  const values = new Map<number, number | null>();
  for (let i = 1; i <= 96; i++) {
    const t = DAY_START + i * 15 * MIN;
    const hour = (t - DAY_START) / 3_600_000;
    values.set(t, hour <= 6 || hour > 16 ? 0 : 10 + (i % 7) * 3);
  }
  values.set(at('02:00'), 20); // output at night
  values.set(at('03:00'), null); // a gap
  values.set(at('08:00'), -10); // a solar site cannot consume 10% of its capacity
  values.set(at('09:00'), 150); // capacity 100 then
  values.set(at('09:45'), 150); // capacity 200 then
  for (let t = at('10:00'); t <= at('13:00'); t += 15 * MIN) values.set(t, 42.5); // a frozen meter
  // a plateau
  [80, 80.2, 80.1, 80.3, 80.2].forEach((v, i) => {
    values.set(at('14:00') + i * 15 * MIN, v);
  });
  return values;
}

async function load(wh: Warehouse, values: Map<number, number | null>, now: number) {
  return loadActuals(
    wh,
    's1',
    { valid_time: [...values.keys()], value: [...values.values()] },
    { now, quality: ENDING },
  );
}

async function flagsByTime(wh: Warehouse): Promise<Map<string, string[]>> {
  const rows = await wh.all<{ t: string; names: string[] }>(
    `SELECT strftime(valid_time, '%H:%M') AS t, flag_names AS names FROM actuals_quality WHERE flags <> 0 ORDER BY valid_time`,
  );
  return new Map(rows.map((r) => [r.t, [...r.names]]));
}

const times = (from: string, to: string) => {
  const out: string[] = [];
  for (let t = at(from); t <= at(to); t += 15 * MIN) out.push(new Date(t).toISOString().slice(11, 16));
  return out;
};

let wh: Warehouse;
const dir = mkdtempSync(join(tmpdir(), 'efsync-quality-'));

beforeAll(async () => {
  wh = await openTestWarehouse('quality');
  await addSite(wh, 's1', 'solar', 100);
  await addCapacity(wh, 's1', [
    [null, '2026-03-01T09:30:00Z', 100],
    ['2026-03-01T09:30:00Z', '2026-03-01T10:00:00Z', 200],
    ['2026-03-01T10:00:00Z', null, 100],
  ]);
});
afterAll(async () => wh.close());

describe('data-quality flags', () => {
  it('are computed on load, one documented bit per check', async () => {
    await load(wh, day(), DAY_START + 2 * 86_400_000);
    const flags = await flagsByTime(wh);
    const expected = new Map<string, string[]>([
      ['02:00', ['night']],
      ['03:00', ['missing']],
      ['08:00', ['negative']],
      ['09:00', ['over_capacity']],
      // held from 10:00: stale from two hours on
      ...times('12:00', '13:00').map((t): [string, string[]] => [t, ['stale']]),
      ...times('14:00', '15:00').map((t): [string, string[]] => [t, ['clipping']]),
    ]);
    expect(flags).toEqual(expected);
    const bits = await wh.all<{ bit: number; name: string }>('SELECT bit, name FROM quality_flags ORDER BY bit');
    expect(Object.fromEntries(bits.map((b) => [b.name, b.bit]))).toEqual(FLAGS);
  });

  it('are computed anew for revised values', async () => {
    const revised = day();
    revised.set(at('11:00'), 43); // the frozen run breaks: 11:15 starts a new one
    revised.set(at('02:00'), 0);
    await load(wh, revised, DAY_START + 3 * 86_400_000);
    const flags = await flagsByTime(wh);
    expect(flags.get('02:00')).toBeUndefined();
    expect(flags.get('12:00')).toBeUndefined();
    expect([...flags].filter(([, names]) => names.includes('stale')).map(([t]) => t)).toEqual(times('13:15', '13:00'));
  });

  it('mark values inside an outage window of the capacity files', async () => {
    writeFileSync(
      join(dir, 's1.yaml'),
      `site: Site s1
unit: kW
points:
  - valid_time: 2026-03-01T00:00Z
    value: 100
windows:
  - from: 2026-03-01T16:00Z
    to: 2026-03-01T16:30Z
    value: 0
    reason: inverter swap
`,
    );
    expect(await refreshCapacityWindows(wh, dir)).toEqual({ windows: 1, unreadable: 0 });
    await flagActuals(wh, ENDING, { now: Date.now() });
    const flags = await flagsByTime(wh);
    // interval-ending: 16:15 and 16:30 describe 16:00-16:30
    expect(flags.get('16:00')).toBeUndefined();
    expect(flags.get('16:15')).toEqual(['outage']);
    expect(flags.get('16:30')).toEqual(['outage']);
    expect(flags.get('16:45')).toBeUndefined();
  });

  it('leave flagged actuals out of scores by default, counted beside every score', async () => {
    // a forecast of 10 for every point of the day, issued the day before
    await addForecast(
      wh,
      's1',
      '2026-02-28T00:00:00Z',
      [...day().keys()].map((t) => [new Date(t).toISOString(), 10]),
    );
    const options = {
      groups: ['total' as const],
      tz: 'UTC',
      leadBuckets: [],
      deadbandPct: 0,
      mapeMinActualPct: 1,
      forecastLabel: 'ending' as const,
      actualLabel: 'ending' as const,
      maxMissingPct: 10,
      forecastIntervalMs: 15 * MIN,
      from: at('00:15'),
      to: at('23:59'),
    };
    // no reference (no actuals the day before): every point drops for it, after its actual
    const excluded = (await scoreWarehouse(wh, options)).rows[0].values;
    const included = (await scoreWarehouse(wh, { ...options, includeFlagged: true })).rows[0].values;
    const flagged = Number(
      (await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM actual_flags WHERE flags & ${FLAGS.missing} = 0`))[0].n,
    );
    expect(flagged).toBeGreaterThan(0);
    expect(excluded.dropped_flagged).toBe(flagged);
    expect(included.dropped_flagged).toBe(0);
    expect(included.dropped_actual).toBe(1); // the gap at 03:00
    expect(excluded.dropped_actual).toBe(1);
  });
});

describe('a wind site', () => {
  it('at its rated power for hours is neither stale nor clipped; frozen below it, stale', async () => {
    await addSite(wh, 'w1', 'wind', 3000);
    const times: number[] = [];
    const values: number[] = [];
    for (let i = 1; i <= 24; i++) {
      times.push(DAY_START + i * HOUR);
      values.push(i <= 8 ? 3000 : i <= 12 ? 1000 + i * 37 : 900); // rated 8h, varying, then frozen from 13:00
    }
    await loadActuals(wh, 'w1', { valid_time: times, value: values }, { now: Date.now(), quality: ENDING });
    const rows = await wh.all<{ t: string; names: string[] }>(
      `SELECT strftime(valid_time, '%H:%M') AS t, flag_names AS names FROM actuals_quality WHERE site_id = 'w1' AND flags <> 0 ORDER BY valid_time`,
    );
    // held from 13:00: stale from 15:00 (2h) to the end of the day
    expect(rows.map((r) => [r.t, [...r.names]])).toEqual(
      Array.from({ length: 10 }, (_, i) => [`${15 + i === 24 ? '00' : 15 + i}:00`, ['stale']]),
    );
  });
});

describe('the accuracy run', () => {
  it('flags the window anew and shows the counts in the report, beside dropped_flagged', async () => {
    const config = Config.parse({});
    const settings = {
      ...settingsFromConfig(config.accuracy, { forecasts: 'ending', actuals: 'ending' }, dir),
      groups: ['total' as const],
      from: at('00:15'),
      to: at('23:59'),
      forecastIntervalMs: 15 * MIN,
      sites: ['s1'],
      reportPath: join(dir, 'report.html'),
    };
    const run = await runWarehouseAccuracy(wh, settings, { runId: 'quality-1', now: Date.now() });
    expect(run.result.rows[0].values.dropped_flagged).toBe(9); // the gap counts as dropped_actual
    const html = readFileSync(settings.reportPath, 'utf8');
    expect(html).toContain('<h2>Data quality of the actuals</h2>');
    // missing, negative, over_capacity, clipping, outage for the site, in bit order
    expect(html).toMatch(
      /<th>site<\/th><th>missing<\/th><th>negative<\/th><th>over_capacity<\/th><th>clipping<\/th><th>outage<\/th><\/tr><\/thead><tbody><tr><td>Site s1<\/td><td>1<\/td><td>1<\/td><td>1<\/td><td>5<\/td><td>2<\/td><\/tr>/,
    );
    expect(html).toMatch(/<td>dropped_flagged<\/td><td>9<\/td>/);
  });
});

describe('the flags the accuracy run recomputes', () => {
  it('recomputes a site only when its rules, basis or window changed, its flags those of a recompute of all', async () => {
    const basisDir = mkdtempSync(join(tmpdir(), 'efsync-quality-basis-'));
    const w = await openTestWarehouse('quality-basis');
    try {
      await addSite(w, 's1', 'solar', 100);
      await addSite(w, 's2', 'solar', 100);
      await addCapacity(w, 's1', [[null, null, 100]]);
      await addCapacity(w, 's2', [[null, null, 100]]);
      const values = day();
      for (const site of ['s1', 's2'])
        await loadActuals(
          w,
          site,
          { valid_time: [...values.keys()], value: [...values.values()] },
          { now: DAY_START + 2 * 86_400_000, quality: ENDING },
        );
      const scope = { sites: ['s1', 's2'], fromMs: at('06:00') };
      const flags = async () =>
        w.all<{ site_id: string; t: string; flags: number }>(
          `SELECT site_id, strftime(valid_time, '%H:%M') AS t, flags FROM actual_flags ORDER BY ALL`,
        );
      /** The flags a recompute of every site and valid time gives, from a copy of the flags table. */
      const recomputedAll = async () => {
        await w.run('CREATE OR REPLACE TEMP TABLE kept_flags AS FROM actual_flags');
        await flagActuals(w, ENDING, { now: 0 });
        const all = await flags();
        await w.run('DELETE FROM actual_flags');
        await w.run('INSERT INTO actual_flags FROM kept_flags');
        return all;
      };
      const recompute = (now: number, extra: Partial<typeof scope> = {}, settings = ENDING) =>
        reflagActuals(w, settings, { ...scope, ...extra, now });

      // the first run recomputes both and records them; the next recomputes neither
      expect(await recompute(1)).toBe(2);
      expect(await recompute(2)).toBe(0);
      expect(await flags()).toEqual(await recomputedAll());

      // new actuals of s2 flagged as they load, by the same rules: still neither
      const revised = new Map([[at('20:00'), -50]]);
      await loadActuals(
        w,
        's2',
        { valid_time: [...revised.keys()], value: [...revised.values()] },
        { now: DAY_START + 3 * 86_400_000, quality: ENDING },
      );
      expect(await recompute(3)).toBe(0);
      expect(await flags()).toEqual(await recomputedAll());

      // s1's capacity timeline: s1 alone, 09:00 no longer over its capacity
      await w.run(`UPDATE site_capacity SET value_kw = 200 WHERE site_id = 's1'`);
      expect(await recompute(4)).toBe(1);
      expect(await flags()).toEqual(await recomputedAll());
      const [{ n }] = await w.all<{ n: bigint }>(
        `SELECT count(*) AS n FROM actual_flags WHERE site_id = 's1' AND flags & ${FLAGS.over_capacity} <> 0`,
      );
      expect(Number(n)).toBe(0);

      // an outage window in s2's capacity file: s2 alone
      writeFileSync(
        join(basisDir, 's2.yaml'),
        ['site: Site s2', 'unit: kW', 'points:', '  - valid_time: 2026-03-01T00:00Z', '    value: 100', 'windows:']
          .concat([
            '  - from: 2026-03-01T16:00Z',
            '    to: 2026-03-01T16:30Z',
            '    value: 0',
            '    reason: inverter swap',
          ])
          .join('\n'),
      );
      expect(await refreshCapacityWindows(w, basisDir)).toEqual({ windows: 1, unreadable: 0 });
      expect(await recompute(5)).toBe(1);
      expect(await flags()).toEqual(await recomputedAll());

      // a window starting earlier, or other thresholds: both again
      expect(await recompute(6, { fromMs: at('03:00') })).toBe(2);
      expect(await recompute(7, { fromMs: at('04:00') })).toBe(0);
      const stricter = { ...ENDING, overCapacityPct: 1 };
      expect(await recompute(8, {}, stricter)).toBe(2);
      expect(await recompute(9, {}, stricter)).toBe(0);

      // a load flagged by other thresholds than those recorded leaves its site to be recomputed
      await loadActuals(
        w,
        's1',
        { valid_time: [...revised.keys()], value: [...revised.values()] },
        { now: DAY_START + 4 * 86_400_000, quality: ENDING },
      );
      expect(await recompute(10, {}, stricter)).toBe(1);
      const [basis] = await w.all<{ n: bigint; at: bigint }>(
        `SELECT count(*) AS n, max(epoch_ms(flagged_at)) AS at FROM actual_flags_basis`,
      );
      expect([Number(basis.n), Number(basis.at)]).toEqual([2, 10]);
    } finally {
      await w.close();
    }
  });
});

describe('efsync status', () => {
  it('counts the flagged actuals per site (by name, with its id) and flag', async () => {
    await wh.publish();
    const { stdout } = await run(process.execPath, [...CLI, 'status', '--json', '--db', wh.path], { cwd: dir });
    const flags = (JSON.parse(stdout) as Status).flags
      .filter((f) => f.siteId === 's1')
      .map((f) => [f.site, f.siteId, f.flag, f.count]);
    expect(flags).toEqual([
      ['Site s1', 's1', 'missing', 1],
      ['Site s1', 's1', 'negative', 1],
      ['Site s1', 's1', 'over_capacity', 1],
      ['Site s1', 's1', 'clipping', 5],
      ['Site s1', 's1', 'outage', 2],
    ]);
    const text = await run(process.execPath, [...CLI, 'status', '--db', wh.path], { cwd: dir });
    expect(text.stdout).toMatch(
      /data-quality flags on actuals[^\n]*\n\s+site\s+id\s+flag\s+actuals\s+latest \(UTC\)\n\s+Site s1\s+s1\s+missing\s+1\s+2026-03-01T03:00:00.000Z/,
    );
  }, 60_000);
});

describe('the sun in SQL', () => {
  it('is where the emulator puts it', async () => {
    const cases: [number, number, number][] = [
      [59.3, 18.1, Date.parse('2026-03-01T11:00:00Z')],
      [-33.9, 151.2, Date.parse('2026-12-21T02:00:00Z')],
      [59.3, 18.1, Date.parse('2026-06-21T23:30:00Z')],
      [40.7, -74, Date.parse('2026-09-01T16:45:00Z')],
    ];
    for (const [lat, lon, ms] of cases) {
      const [{ up }] = await wh.all<{ up: number }>(
        `SELECT sun_t AS up FROM ${withSunUp(`SELECT ${lat} AS latitude, ${lon} AS longitude`, { t: String(ms / 1000) })}`,
      );
      expect(up).toBeCloseTo(sunVector(ms, lat, lon).up, 9);
    }
  });
});
