// Shards writing a Parquet lake: four shards against one emulator give, read through the views
// file and read raw (the active files of each Delta log, no newest-per-key resolution, as any
// Delta engine reads them), the same data as one writer to one warehouse file, row for row; so
// do later incremental runs (revised actuals, new vintages) and a run with the number of shards
// changed from 4 to 3.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LoadedConfig } from '../src/config.js';
import { lakeFiles, tableCommits } from '../src/lake/layout.js';
import { writeViewsFile } from '../src/lake/views.js';
import { CLOCK_STEPS, rawComparison } from './lake-support.js';
import { DATA_TABLES, emuForFile, NOW, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const SITES = 10;
const HOUR = 3_600_000;
const TABLES = [...DATA_TABLES, 'actuals_by_type', 'actual_revisions_by_type', 'interval_labels', 'quality_flags'];
/** Read raw too: the flags (a recheck deletes and rewrites them) and the sync states. */
const RAW_TABLES = [...TABLES, 'actual_flags', 'sync_state'];

let clock = NOW;
const served = emuForFile({ sites: SITES, now: () => clock });

function lakeConfig(dir: string, lake: string): LoadedConfig {
  return { ...testConfig({ dir, url: served.emu.url }), sink: 'parquet', lake };
}

async function shardRun(config: LoadedConfig, count: number, now: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const result = await runSync(config, { shard: { index, count } }, now);
    expect(result.error).toBeNull();
    expect(result.status).toBe('ok');
  }
}

describe('a sharded sync into the lake', () => {
  it('equals a single-writer warehouse, through the views file, run after run and when N changes', async () => {
    const dir = tempDir('efsync-lake-');
    const lake = join(dir, 'lake');
    const views = join(dir, 'lake.duckdb');
    const single = testConfig({ dir, url: served.emu.url, db: join(dir, 'single.duckdb') });
    const config = lakeConfig(dir, lake);

    for (const [step, count] of CLOCK_STEPS) {
      clock = NOW + step * HOUR;
      expect((await runSync(single, {}, clock)).status).toBe('ok');
      await shardRun(config, count, clock);
      await writeViewsFile(lake, views);
      const expected = await tableHashes(single.warehouse.path, TABLES);
      expect(await tableHashes(views, TABLES)).toEqual(expected);
      const raw = await rawComparison(lake, single.warehouse.path, RAW_TABLES, dir);
      expect(raw.delta).toEqual(raw.expected);
    }
    const [{ n: sites }] = await query<{ n: bigint }>(views, 'SELECT count(DISTINCT site_id) AS n FROM sync_state');
    expect(Number(sites)).toBe(SITES);
    // The views' replay of the logs in SQL and the log reader's (PROTOCOL.md's reconciliation,
    // src/lake/delta/snapshot.ts) agree on every table's active files.
    const replayed = await query<{ filename: string }>(views, 'SELECT filename FROM lake_files ORDER BY filename');
    const reconciled = [...(await lakeFiles(lake)).values()].flat().map((f) => f.file);
    expect(replayed.map((r) => r.filename)).toEqual(reconciled.sort());
    // One commit of the run ledger per shard run.
    const commits = tableCommits(lake, 'runs');
    expect(
      commits.filter((c) => (c.info.efsync as { kind: string } | undefined)?.kind === 'sync').length,
    ).toBeGreaterThanOrEqual(8);
    const [{ n: ok }] = await query<{ n: bigint }>(views, "SELECT count(*) AS n FROM runs WHERE status = 'ok'");
    expect(Number(ok)).toBe(4 + 4 + 3);
  }, 600_000);
});
