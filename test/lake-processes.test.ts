// Four shard processes at once against one emulator: the lake, read through the views file,
// equals a single-writer warehouse of the same data. A shard killed (SIGKILL) mid-run leaves
// nothing visible; its rerun removes what it left uncommitted and completes the lake. The CLI
// compacts the lake without changing what readers see.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { lakeFiles, tableCommits } from '../src/lake/layout.js';
import { writeViewsFile } from '../src/lake/views.js';
import {
  DATA_TABLES,
  emulator,
  NOW,
  runSync,
  tableHashes,
  tempDir,
  testConfig,
  writeConfigFile,
} from './sync-support.js';
import { CLI } from './fixtures/runner-child.js';

const SITES = 16;
const TABLES = [...DATA_TABLES, 'actuals_by_type', 'interval_labels'];

let emu: Emulator;

beforeAll(async () => {
  emu = await emulator({ sites: SITES });
});

afterAll(async () => {
  await emu?.close();
});

function lakeConfigFile(dir: string, lake: string): string {
  return writeConfigFile(dir, {
    dir,
    url: emu.url,
    db: join(dir, 'unused.duckdb'),
    sync: { concurrency: 2 },
    extra: { sink: 'parquet', lake, log: { level: 'debug' } },
  });
}

/** Runs a shard in a child process; with `killAfterSites`, SIGKILLs it once that many sites have synced. */
function shard(
  configFile: string,
  spec: string,
  killAfterSites?: number,
): Promise<{ code: number | null; signal: string | null; landed: number; problems: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join('test', 'lake-child.ts'), configFile, String(NOW), spec],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let landed = 0;
    // Warnings, errors and anything not a log line (a crash's stack), to say why a shard did not exit 0.
    const problems: string[] = [];
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (line.includes('"msg":"site synced"')) landed += 1;
      if (!line.startsWith('{"level":') || /^\{"level":[456]0/.test(line)) problems.push(`${spec}: ${line}`);
      if (killAfterSites !== undefined && landed >= killAfterSites) child.kill('SIGKILL');
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, landed, problems }));
  });
}

function cli(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout }));
  });
}

describe('shard processes writing one lake', () => {
  it('equal a single writer; a killed shard rerun loses and duplicates nothing; compaction changes nothing readers see', async () => {
    const dir = tempDir('efsync-lake-procs-');
    const lake = join(dir, 'lake');
    const views = join(dir, 'lake.duckdb');
    const configFile = lakeConfigFile(dir, lake);
    const single = testConfig({ dir, url: emu.url, db: join(dir, 'single.duckdb'), sync: { concurrency: 2 } });
    expect((await runSync(single)).status).toBe('ok');
    const expected = await tableHashes(single.warehouse.path, TABLES);

    const runs = await Promise.all(
      ['0/4', '1/4', '2/4', '3/4'].map((spec) => shard(configFile, spec, spec === '1/4' ? 1 : undefined)),
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
