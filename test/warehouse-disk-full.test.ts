// A full disk: the run fails cleanly (exit 4, the cause in one line with the path and the bytes
// free, no uncaught error), the published snapshot is untouched, a run whose publish failed is
// never recorded ok, and the next run after space is freed succeeds with a clean run's data.
// Needs a small tmpfs: skipped where this process may not mount one (it must be root), failed
// under CI (test/tools.ts).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../src/emulator/server.js';
import { openWriterFile } from '../src/warehouse/writer-file.js';
import { emulator, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';
import { needTool, titled } from './tools.js';

const SITES = 5;
let emu: Emulator;
let cleanHashes: Record<string, string>;
/** Size of a clean run's writer file. */
let warehouseBytes: number;
const mounted: string[] = [];

function mountTmpfs(bytes: number): string {
  const dir = tempDir('efsync-full-');
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${Math.round(bytes / 4096) * 4096}`, 'tmpfs', dir]);
  if (result.status !== 0) throw new Error(`mount tmpfs: ${result.stderr}`);
  mounted.push(dir);
  return dir;
}

function resize(dir: string, bytes: number): void {
  const result = spawnSync('mount', ['-o', `remount,size=${bytes}`, dir]);
  expect(result.status, result.stderr.toString()).toBe(0);
}

const canMount = needTool('mount');

beforeAll(async () => {
  if (!canMount) return;
  emu = await emulator({ sites: SITES });
  const dir = tempDir();
  const clean = testConfig({ dir, url: emu.url });
  expect((await runSync(clean)).status).toBe('ok');
  cleanHashes = await tableHashes(clean.warehouse.path);
  warehouseBytes = statSync(join(dir, 'warehouse.writer.duckdb')).size;
}, 120_000);

afterAll(async () => {
  await emu?.close();
  for (const dir of mounted) spawnSync('umount', [dir]);
});

describe.skipIf(!canMount)(titled('a full disk', 'mount', canMount), () => {
  it.each([
    ['the writer file', 0.8],
    ['the publish copy', 1.4],
  ])(
    'when %s cannot be written, the run fails in one line, and the next run after space is freed succeeds',
    async (_what, share) => {
      const dir = mountTmpfs(warehouseBytes * share);
      const config = testConfig({ dir, url: emu.url });
      const published = join(dir, 'warehouse.duckdb');

      const full = await runSync(config);
      expect(full).toMatchObject({ status: 'failed', exitCode: 4 });
      expect(full.error).toMatch(
        new RegExp(
          `^disk full: (cannot write ${dir}/\\S+ \\(\\d+ bytes free\\)|${published} needs \\d+ bytes, \\d+ bytes free)$`,
        ),
      );
      expect(full.error).not.toMatch(/no transaction is active/);

      resize(dir, warehouseBytes * 4);
      const next = await runSync(config);
      expect(next.exitCode, next.error ?? '').toBe(0);
      expect(await tableHashes(published)).toEqual(cleanHashes);
      const runs = new Map(
        (
          await query<{ run_id: string; status: string; error_summary: string | null }>(
            published,
            'SELECT run_id, status, error_summary FROM runs',
          )
        ).map((r) => [r.run_id, r]),
      );
      expect([...runs.keys()].sort()).toEqual([full.runId, next.runId].sort());
      // Failed if its row could still be written, crashed if not even that: never ok.
      const failed = runs.get(full.runId)!;
      expect(['failed', 'crashed']).toContain(failed.status);
      if (failed.status === 'failed') expect(failed.error_summary).toBe(full.error);
      expect(runs.get(next.runId)!.status).toBe('ok');
    },
    120_000,
  );

  it('a publish that finds no room leaves the published snapshot as it was', async () => {
    const dir = mountTmpfs(warehouseBytes * 4);
    const config = testConfig({ dir, url: emu.url });
    const published = join(dir, 'warehouse.duckdb');
    expect((await runSync(config, { only: ['sites', 'models', 'forecasts', 'outputs'] })).status).toBe('ok');
    const before = readFileSync(published);
    // Room for the writer's few new rows (the actuals), not for a second copy of the file. A run
    // that writes nothing would not publish at all.
    resize(dir, Math.round((statSync(published).size * 2.3) / 4096) * 4096);
    const again = await runSync(config);
    expect(again.status).toBe('failed');
    expect(again.error).toMatch(/^disk full: /);
    expect(readFileSync(published).equals(before)).toBe(true);
  }, 120_000);

  it('a compaction with no room for its draft leaves the writer file as it was, and the writer opens', async () => {
    const dir = mountTmpfs(96 << 20);
    const published = join(dir, 'warehouse.duckdb');
    const writer = join(dir, 'warehouse.writer.duckdb');
    const keep = { compactAboveBytes: Number.MAX_SAFE_INTEGER };
    const first = await openWriterFile(published, writer, keep);
    try {
      // 24 MB of rows that a move then took out: a writer file mostly free blocks
      await first.connection.run('CREATE TABLE filler AS SELECT range AS i, random() AS x FROM range(1500000)');
      await first.connection.run('CHECKPOINT');
      await first.connection.run('DROP TABLE filler');
      await first.connection.run('CHECKPOINT');
    } finally {
      first.close();
    }
    const before = readFileSync(writer);
    resize(dir, Math.ceil((before.length + (64 << 10)) / 4096) * 4096);
    const opened = await openWriterFile(published, writer, { compactAboveBytes: 0 });
    try {
      expect(opened.compactionSkipped).toMatch(/^disk full: /);
      const [[runs]] = (await opened.connection.runAndReadAll('SELECT count(*) FROM runs')).getRows();
      expect(Number(runs)).toBe(0);
    } finally {
      opened.close();
    }
    expect(readFileSync(writer).equals(before)).toBe(true);
    expect(readdirSync(dir).filter((name) => name.includes('.draft-'))).toEqual([]);
  }, 60_000);
});
