// Four shard processes at once against one emulator: the lake, read through the views file,
// equals a single-writer warehouse of the same data. A shard killed (SIGKILL) mid-run leaves
// nothing visible; its rerun removes what it left uncommitted and completes the lake. The CLI
// compacts the lake without changing what readers see.
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { lakeFiles, tableCommits } from '../src/lake/layout.js';
import { writeViewsFile } from '../src/lake/views.js';
import { cli, lakeConfigFile, shard } from './lake-support.js';
import { DATA_TABLES, emulator, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const SITES = 16;
const TABLES = [...DATA_TABLES, 'actuals_by_type', 'interval_labels'];

let emu: Emulator;

beforeAll(async () => {
  emu = await emulator({ sites: SITES });
});

afterAll(async () => {
  await emu?.close();
});

describe('shard processes writing one lake', () => {
  it('equal a single writer; a killed shard rerun loses and duplicates nothing; compaction changes nothing readers see', async () => {
    const dir = tempDir('efsync-lake-procs-');
    const lake = join(dir, 'lake');
    const views = join(dir, 'lake.duckdb');
    const configFile = lakeConfigFile(dir, lake, emu.url);
    const single = testConfig({ dir, url: emu.url, db: join(dir, 'single.duckdb'), sync: { concurrency: 2 } });
    expect((await runSync(single)).status).toBe('ok');
    const expected = await tableHashes(single.warehouse.path, TABLES);

    const runs = await Promise.all(
      ['0/4', '1/4', '2/4', '3/4'].map((spec) =>
        shard(configFile, spec, { killAfterSites: spec === '1/4' ? 1 : undefined }),
      ),
    );
    const problems = runs.flatMap((r) => (r.code === 0 ? [] : r.problems)).join('\n');
    expect(
      runs.map((r) => r.code),
      problems,
    ).toEqual([0, null, 0, 0]);
    expect(runs[1].signal).toBe('SIGKILL');
    expect(
      tableCommits(lake, 'runs')
        .map((c) => (c.info.efsync as { shard: string } | undefined)?.shard)
        .filter((shard) => shard !== undefined)
        .sort(),
    ).toEqual(['0/4', '2/4', '3/4']);

    // What a shard killed between moving its files into place and its commit leaves.
    const [committed] = (await lakeFiles(lake)).get('forecasts') ?? [];
    const stray = committed.file.replace(/part-s\d+of4-[^/]*$/, 'part-s1of4-20261118T000000Z-killed00-0.parquet');
    copyFileSync(committed.file, stray);

    await writeViewsFile(lake, views);
    const partial = await tableHashes(views, TABLES);
    expect(partial.sites).not.toEqual(expected.sites);
    expect(partial.forecasts).not.toEqual(expected.forecasts);

    const rerun = await shard(configFile, '1/4');
    expect(rerun.code, rerun.problems.join('\n')).toBe(0);
    expect(existsSync(stray)).toBe(false);
    expect(await tableHashes(views, TABLES)).toEqual(expected);

    // A second run of shard 1 adds a second file of its own to some tables (its run's ledger row
    // at least): the compactor merges each owner's files, so now it has something to merge.
    const again = await shard(configFile, '1/4');
    expect(again.code, again.problems.join('\n')).toBe(0);
    const filesBefore = [...(await lakeFiles(lake)).values()].flat().length;
    const compacted = await cli(['lake', 'compact', '--lake', lake]);
    expect(compacted.code).toBe(0);
    expect(compacted.stdout).toMatch(/^compacted \d+ files into \d+/);
    expect([...(await lakeFiles(lake)).values()].flat().length).toBeLessThan(filesBefore);
    const rewritten = await cli(['lake', 'views', '--lake', lake, '--out', views]);
    expect(rewritten.code).toBe(0);
    expect(await tableHashes(views, TABLES)).toEqual(expected);
  }, 600_000);
});
