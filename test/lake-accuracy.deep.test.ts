// A sharded night scores too: the same emulator synced into one warehouse and scored there, and
// synced by four shards into the lake, each scoring its own sites into its contribution, then
// the reduce: every accuracy_results row equal within 1e-9 relative, the same row set, and the
// same report. A shard scored again replaces its contribution (nothing doubles), a new number of
// shards is merged on its own, and a reduce short of a shard refuses, naming it.
import { existsSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LakeRun, reduceLake, scoreShard } from '../src/accuracy/lake.js';
import { type AccuracySettings, runWarehouseAccuracy, settingsFromConfig } from '../src/accuracy/score.js';
import type { LoadedConfig } from '../src/config.js';
import type { Emulator } from '../src/emulator/server.js';
import { FailedError } from '../src/errors.js';
import { contributionSql } from '../src/lake/contrib.js';
import { dataFiles, ensureLake, lakeFiles } from '../src/lake/layout.js';
import { vacuumLake } from '../src/lake/vacuum.js';
import { EXIT } from '../src/outcome.js';
import { writeViewsFile } from '../src/lake/views.js';
import { DAY, HOUR, startOfUtcDay } from '../src/time.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { runCli } from './fixtures/runner-child.js';
import { emulator, NOW, query, runSync, tempDir, testConfig, writeConfigFile } from './sync-support.js';

const SITES = 10;
const SHARDS = 4;

let emu: Emulator;

beforeAll(async () => {
  emu = await emulator({ sites: SITES });
});
afterAll(async () => {
  await emu?.close();
});

/** The nightly's window, every group a shard owns or shares, and both kinds of event. */
function settingsOf(config: LoadedConfig, reportPath: string): AccuracySettings {
  return {
    ...settingsFromConfig(config.accuracy, config.service.interval_label, config.capacity.dir),
    groups: ['total', 'lead', 'hour', 'date', 'site', 'model'],
    from: startOfUtcDay(NOW - 30 * DAY),
    to: NOW,
    batchPoints: 20_000,
    events: [
      { name: 'high', kind: 'threshold', threshold: 50, unit: 'pct', direction: 'up', span: HOUR },
      { name: 'ramp', kind: 'ramp', threshold: 20, unit: 'kw', direction: 'both', span: HOUR },
    ],
    reportPath,
  };
}

interface ResultRow {
  subject: string;
  model: string;
  group_name: string;
  group_key: string;
  key_order: number;
  metric: string;
  value: number | null;
}

const RESULT_COLUMNS = 'subject, model, group_name, group_key, key_order, metric, value';

function keyOf(r: ResultRow): string {
  return [r.subject, r.model, r.group_name, r.group_key, r.key_order, r.metric].join('|');
}

function expectEqualResults(actual: ResultRow[], expected: ResultRow[]): void {
  expect(actual.map(keyOf).sort()).toEqual(expected.map(keyOf).sort());
  const want = new Map(expected.map((r) => [keyOf(r), r.value]));
  const off: string[] = [];
  for (const r of actual) {
    const a = r.value;
    const b = want.get(keyOf(r))!;
    const same =
      (a === null && b === null) ||
      (a !== null && b !== null && Number.isNaN(a) && Number.isNaN(b)) ||
      a === b ||
      (a !== null && b !== null && Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b)));
    if (!same) off.push(`${keyOf(r)}: ${a} against ${b}`);
  }
  expect(off).toEqual([]);
}

/**
 * What a report shows: its text and tables without the plots, and every plotted mark's label
 * (its values), sorted, with numbers to 8 digits: sums taken in another order move the last bits,
 * and the order marks are drawn in follows the order of a row's fields, which is not fixed.
 */
function shown(html: string): { text: string; marks: string[] } {
  const digits = (text: string) =>
    text.replace(/-?\d+\.\d+(e-?\d+)?/g, (x) => String(Number(Number(x).toPrecision(8))));
  const marks = [...html.matchAll(/aria-label="([^"]*)"/g)].map((m) => digits(m[1])).sort();
  return { text: digits(html.replace(/<svg[\s\S]*?<\/svg>/g, '<svg/>')), marks };
}

async function singleResults(config: LoadedConfig, settings: AccuracySettings): Promise<ResultRow[]> {
  const wh = await Warehouse.open({ path: config.warehouse.path });
  try {
    await runWarehouseAccuracy(wh, settings, { runId: 'single', now: NOW });
    return await wh.all<ResultRow>(`SELECT ${RESULT_COLUMNS} FROM accuracy_results WHERE run_id = 'single'`);
  } finally {
    await wh.close();
  }
}

/** The lake's accuracy_results of a reduce, as analysts read them: through the views file. */
async function lakeResults(lake: string, views: string, runId: string): Promise<ResultRow[]> {
  await writeViewsFile(lake, views);
  return query<ResultRow>(views, `SELECT ${RESULT_COLUMNS} FROM accuracy_results WHERE run_id = $1`, [runId]);
}

/** Each shard's contribution runs in the lake: shard I/N and its run. */
async function contributions(lake: string): Promise<string[]> {
  const db = await openDuckDB(':memory:');
  try {
    const sql = await contributionSql(db.connection, lake, 'accuracy_runs');
    const rows = (
      await db.connection.runAndReadAll(`SELECT shard_index, shard_count, run_id FROM (${sql}) ORDER BY ALL`)
    ).getRowObjectsJS() as { shard_index: number; shard_count: number; run_id: string }[];
    return rows.map((r) => `${r.shard_index}/${r.shard_count} ${r.run_id}`);
  } finally {
    db.close();
  }
}

describe('a sharded night scored into the lake', () => {
  it("ends with the single warehouse's accuracy results and report, rerun after rerun", async () => {
    const dir = tempDir('efsync-lake-accuracy-');
    const lake = join(dir, 'lake');
    const views = join(dir, 'lake.duckdb');
    const single = testConfig({ dir, url: emu.url, db: join(dir, 'single.duckdb') });
    const sharded: LoadedConfig = { ...testConfig({ dir, url: emu.url }), sink: 'parquet', lake };

    expect((await runSync(single, {}, NOW)).status).toBe('ok');
    const expected = await singleResults(single, settingsOf(single, join(dir, 'single.html')));
    expect(expected.length).toBeGreaterThan(1000);

    for (let index = 0; index < SHARDS; index++)
      expect((await runSync(sharded, { shard: { index, count: SHARDS } }, NOW)).status).toBe('ok');
    let runs = 0;
    const run = (): LakeRun => ({ lake, runId: `lake-${++runs}`, now: NOW, duckdb: {}, lockWaitMs: 0 });
    const settings = settingsOf(sharded, '');
    const scoreAll = async (count: number) => {
      for (let index = 0; index < count; index++) {
        const scored = await scoreShard(settings, { index, count }, run());
        expect(scored.skipped).toEqual([]);
      }
    };
    await scoreAll(SHARDS);
    const report = join(dir, 'lake.html');
    const reduced = await reduceLake(report, run());
    expect(reduced.shards).toBe(SHARDS);
    expectEqualResults(await lakeResults(lake, views, `lake-${runs}`), expected);
    // the same report but for the line naming the source
    const html = readFileSync(report, 'utf8').replace(`the lake ${lake}, ${SHARDS} shards`, 'the warehouse');
    expect(shown(html)).toEqual(shown(readFileSync(join(dir, 'single.html'), 'utf8')));

    // shard 1 scored again replaces its contribution: the merge does not count it twice
    await scoreShard(settings, { index: 1, count: SHARDS }, run());
    expect((await contributions(lake)).filter((c) => c.startsWith('1/4'))).toEqual([`1/4 lake-${runs}`]);
    await reduceLake(null, run());
    expectEqualResults(await lakeResults(lake, views, `lake-${runs}`), expected);
    // and vacuum deletes the files its rerun replaced, no others
    const contributed = () =>
      readdirSync(lake)
        .filter((t) => t.startsWith('shard_accuracy_'))
        .flatMap((t) => dataFiles(join(lake, t)));
    const before = contributed().length;
    expect((await vacuumLake(lake, 0)).files).toBeGreaterThan(0);
    const active = [...(await lakeFiles(lake)).entries()].filter(([t]) => t.startsWith('shard_')).flatMap(([, f]) => f);
    expect(contributed().sort()).toEqual(active.map((f) => f.file).sort());
    expect(contributed().length).toBeLessThan(before);

    // two shards now: their contributions are merged, those of four left aside
    await scoreAll(2);
    expect((await reduceLake(null, run())).shards).toBe(2);
    expectEqualResults(await lakeResults(lake, views, `lake-${runs}`), expected);

    // a reduce does not take a contribution older than --max-age
    const old = await reduceLake(null, { ...run(), now: NOW + DAY, maxAgeMs: 12 * HOUR }).catch(
      (error: unknown) => error,
    );
    expect((old as Error).message).toMatch(/shards 0\/2, 1\/2 last scored longer ago/);

    // a shard killed before its manifest's commit: its other tables hold the new run, the manifest
    // the last one; the reduce names it until it is scored again
    await scoreShard(settings, { index: 0, count: 2 }, run());
    const manifests = join(lake, 'shard_accuracy_runs', '_delta_log');
    unlinkSync(
      join(
        manifests,
        readdirSync(manifests)
          .filter((f) => f.endsWith('.json'))
          .sort()
          .at(-1)!,
      ),
    );
    const broken = await reduceLake(null, run()).catch((error: unknown) => error);
    expect((broken as Error).message).toMatch(/contributions of shards 0\/2 are incomplete/);
    await scoreShard(settings, { index: 0, count: 2 }, run());
    expect((await reduceLake(null, run())).shards).toBe(2);

    // three shards, two of them not yet scored: the reduce refuses, naming them
    await scoreShard(settings, { index: 1, count: 3 }, run());
    const refused = await reduceLake(null, run()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FailedError);
    expect((refused as Error).message).toMatch(/shards 0\/3, 2\/3 have not scored/);
  }, 600_000);

  it('says what is wrong on the command line: a shard without a lake, options given to the reduce, no lake, no shard scored', async () => {
    const dir = tempDir('efsync-lake-accuracy-cli-');
    const lake = join(dir, 'lake');
    const config = writeConfigFile(dir, { dir, url: emu.url });
    const cli = (...args: string[]) => runCli(['accuracy', '--config', config, ...args]);
    const missing = await cli('--lake', lake);
    expect([missing.code, missing.stderr]).toEqual([EXIT.config, expect.stringContaining(`no lake at ${lake}`)]);
    expect(existsSync(lake)).toBe(false);
    await ensureLake(lake);
    const noLake = await cli('--shard', '0/2');
    expect([noLake.code, noLake.stderr]).toEqual([EXIT.usage, expect.stringContaining('give --lake too')]);
    const by = await cli('--lake', lake, '--by', 'site');
    expect([by.code, by.stderr]).toEqual([
      EXIT.usage,
      expect.stringContaining('give the window and metric options to the shards'),
    ]);
    const report = await cli('--lake', lake, '--shard', '0/2', '--report', join(dir, 'r.html'));
    expect(report.code).toBe(EXIT.usage);
    const none = await cli('--lake', lake);
    expect([none.code, none.stderr]).toEqual([
      EXIT.failed,
      expect.stringContaining('no shard has scored into the lake'),
    ]);
  }, 120_000); // five processes of the command
});
