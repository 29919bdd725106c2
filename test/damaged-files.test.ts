// Files damaged on disk: a published warehouse that is not DuckDB's any more, a lake's Parquet file
// cut to garbage, a Delta commit that is not JSON. Each command that reads one ends in one line
// naming the file (exit 2), and a published file is written again by the next run, with
// everything the writer stored.
import { cpSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { runCli } from './fixtures/runner-child.js';
import { emuForFile, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';

const served = emuForFile({ sites: 2 });

/** The lines a user reads on stderr: not the JSON log's. */
const lines = (stderr: string) => stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));

describe('a damaged published warehouse', () => {
  it('readers get one line naming it; the next run publishes it again, nothing stored lost', async () => {
    const config = testConfig({ dir: tempDir('efsync-damaged-'), url: served.emu.url });
    const path = config.warehouse.path;
    expect((await runSync(config)).status).toBe('ok');
    const stored = await tableHashes(path);
    // The published file is read-only (0444): replaced, as a damaged disk or a stray copy would.
    rmSync(path);
    writeFileSync(path, 'not a database '.repeat(300));

    for (const command of [['sql', 'SELECT 1'], ['status']]) {
      const { code, stderr } = await runCli([...command, '--db', path]);
      expect(code).toBe(EXIT.config);
      expect(lines(stderr)).toEqual([
        `efsync ${command[0]}: ${path} is not a DuckDB database file (damaged?); ` +
          'the next run that writes the warehouse publishes it again from its writer file',
      ]);
    }
    expect((await runSync(config)).status).toBe('ok');
    expect(await tableHashes(path)).toEqual(stored);
  });
});

describe('a damaged lake', () => {
  /** A lake of one shard's sync of sites and actuals, copied for each test to damage. */
  let synced: string;
  beforeAll(async () => {
    const dir = tempDir('efsync-damaged-lake-');
    synced = join(dir, 'lake');
    const config = {
      ...testConfig({ dir, url: served.emu.url, sync: { resources: ['sites', 'actuals'] } }),
      sink: 'parquet' as const,
      lake: synced,
    };
    expect((await runSync(config, { shard: { index: 0, count: 1 } })).error).toBeNull();
  });
  function lakeCopy(): string {
    const lake = join(tempDir('efsync-damaged-lake-'), 'lake');
    cpSync(synced, lake, { recursive: true });
    return lake;
  }
  const views = (lake: string) => runCli(['lake', 'views', '--lake', lake, '--out', join(lake, '..', 'views.duckdb')]);

  it('an undamaged copy reads', async () => {
    expect((await views(lakeCopy())).code).toBe(EXIT.ok);
  });

  it('a Parquet file that is not one: one line naming it', async () => {
    const lake = lakeCopy();
    const month = join(lake, 'actuals', readdirSync(join(lake, 'actuals')).find((name) => name.startsWith('month='))!);
    const file = join(month, readdirSync(month).find((name) => name.endsWith('.parquet'))!);
    writeFileSync(file, 'not parquet '.repeat(100));
    const { code, stderr } = await views(lake);
    expect(code).toBe(EXIT.config);
    expect(lines(stderr)).toEqual([
      `efsync lake views: ${file}: not a Parquet file (damaged?); restore it from a backup`,
    ]);
  });

  it('a Delta commit that is not JSON: one line naming it', async () => {
    const lake = lakeCopy();
    const commit = join(lake, 'actuals', '_delta_log', '00000000000000000001.json');
    writeFileSync(commit, '{"add": {"path": ');
    const { code, stderr } = await views(lake);
    expect(code).toBe(EXIT.config);
    expect(lines(stderr)).toEqual([`efsync lake views: ${commit}: line 1 is not JSON`]);
  });
});
