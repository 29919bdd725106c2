// A spool (src/warehouse/spool.ts): rows gathered a statement at a time as Parquet files beside
// the writer file, read back with the shape's column types, by name whatever the warehouse's path
// holds; a part whose statement fails leaves nothing, and the last part can be taken back; what
// a killed run spooled goes when the warehouse opens again; and, the reason it exists, a few
// hundred parts hold nothing in DuckDB's memory where a temp table's appends did.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isOutOfMemory } from '../src/warehouse/duckdb.js';
import { handBackPool } from '../src/warehouse/executor.js';
import { withDuckDBSettings } from '../src/warehouse/settings.js';
import { Spool, spoolFolderOf } from '../src/warehouse/spool.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { openTestWarehouse } from './accuracy-fixture.js';

let wh: Warehouse | undefined;
afterEach(async () => {
  await wh?.close();
  wh = undefined;
});

const SHAPE = 'SELECT CAST(NULL AS VARCHAR) AS key, CAST(NULL AS BIGINT) AS chunk, CAST(NULL AS DOUBLE) AS value';

/** DuckDB's own count of the memory its tables hold that no eviction frees, in MB. */
async function tableMemoryMb(warehouse: Warehouse): Promise<number> {
  await handBackPool(warehouse);
  const [{ mb }] = await warehouse.all<{ mb: number }>(
    `SELECT coalesce(sum(memory_usage_bytes), 0)::DOUBLE / 2^20 AS mb FROM duckdb_memory()
     WHERE tag IN ('BASE_TABLE', 'IN_MEMORY_TABLE')`,
  );
  return mb;
}

describe('a spool', () => {
  it('reads back every part, its columns by position cast to the shape types, NaN and NULL kept', async () => {
    wh = await openTestWarehouse('spool');
    const spool = await Spool.create(wh, 'parts', SHAPE);
    expect(await wh.all(`SELECT count(*)::INTEGER AS n FROM ${spool.relation()}`)).toEqual([{ n: 0 }]);
    await spool.add(`SELECT 'a', 1, 0.5`);
    await spool.add(`SELECT 'b' AS other_name, 2::INTEGER, 'NaN'::DOUBLE UNION ALL SELECT NULL, 3, NULL`);
    const rows = await wh.all(
      `SELECT key, chunk, value::VARCHAR AS value, typeof(chunk) AS t FROM ${spool.relation()} ORDER BY chunk`,
    );
    expect(rows).toEqual([
      { key: 'a', chunk: 1n, value: '0.5', t: 'BIGINT' },
      { key: 'b', chunk: 2n, value: 'nan', t: 'BIGINT' },
      { key: null, chunk: 3n, value: null, t: 'BIGINT' },
    ]);
    spool.drop();
    expect(existsSync(spoolFolderOf(wh.writerPath))).toBe(false);
  });

  it('beside a warehouse whose path holds glob characters reads its own parts and only them', async () => {
    // not a ?: DuckDB takes what follows one in a file's path for a URL's query, the writer's WAL path included
    wh = await openTestWarehouse('spool-[1]*');
    const spool = await Spool.create(wh, 'parts', SHAPE);
    await spool.add(`SELECT 'a', 1, 1`);
    writeFileSync(join(spoolFolderOf(wh.writerPath), 'parts', 'stray.parquet'), 'PAR1 not a part');
    expect(await wh.all(`SELECT key FROM ${spool.relation()}`)).toEqual([{ key: 'a' }]);
  });

  it('keeps no part of a statement that ran out of memory, and goes on with the next', async () => {
    wh = await openTestWarehouse('spool-oom');
    const spool = await Spool.create(wh, 'parts', SHAPE);
    const warehouse = wh;
    const failed = await withDuckDBSettings(warehouse, { memory_limit: '8MB' }, () =>
      spool.add(`SELECT string_agg(md5(range::VARCHAR), ',' ORDER BY random()), 1, 1 FROM range(2000000)`).then(
        () => null,
        (error: unknown) => error,
      ),
    );
    expect(isOutOfMemory(failed)).toBe(true);
    await spool.add(`SELECT 'after', 2, 2`);
    expect(await wh.all(`SELECT key FROM ${spool.relation()}`)).toEqual([{ key: 'after' }]);
    expect(readdirSync(join(spoolFolderOf(wh.writerPath), 'parts'))).toHaveLength(2); // the empty first part and this one
  });

  it('takes back its last part, file and all, for a write to several spools that failed part way', async () => {
    wh = await openTestWarehouse('spool-take-back');
    const spool = await Spool.create(wh, 'parts', SHAPE);
    await spool.add(`SELECT 'kept', 1, 1`);
    await spool.add(`SELECT 'taken back', 2, 2`);
    spool.removeLast();
    expect(await wh.all(`SELECT key FROM ${spool.relation()}`)).toEqual([{ key: 'kept' }]);
    expect(readdirSync(join(spoolFolderOf(wh.writerPath), 'parts'))).toHaveLength(2); // the empty first part and 'kept'
  });

  it('left by a killed run goes when the warehouse opens, and a spool of the same name starts empty', async () => {
    wh = await openTestWarehouse('spool-left');
    const path = wh.path;
    const folder = join(spoolFolderOf(wh.writerPath), 'parts');
    const spool = await Spool.create(wh, 'parts', SHAPE);
    await spool.add(`SELECT 'left', 1, 1`);
    const again = await Spool.create(wh, 'parts', SHAPE);
    expect(await wh.all(`SELECT count(*)::INTEGER AS n FROM ${again.relation()}`)).toEqual([{ n: 0 }]);
    await again.add(`SELECT 'left again', 1, 1`);
    mkdirSync(join(spoolFolderOf(wh.writerPath), 'other'));
    writeFileSync(join(spoolFolderOf(wh.writerPath), 'other', 'torn.parquet'), 'PAR1 torn');
    await wh.close();
    wh = await Warehouse.open({ path });
    expect(existsSync(folder)).toBe(false);
    expect(existsSync(spoolFolderOf(wh.writerPath))).toBe(false);
  });

  it('of 300 parts holds nothing in DuckDB, where 300 appends to a temp table held memory no eviction frees', async () => {
    wh = await openTestWarehouse('spool-memory');
    const part = (i: number) => `SELECT 'k' || (range % 97), ${i}, range / 7 FROM range(20000)`;
    const spool = await Spool.create(wh, 'parts', SHAPE);
    for (let i = 0; i < 300; i++) await spool.add(part(i));
    const spooled = await tableMemoryMb(wh);
    await wh.run(`CREATE TEMP TABLE appended AS ${SHAPE} LIMIT 0`);
    for (let i = 0; i < 300; i++) await wh.run(`INSERT INTO appended ${part(i)}`);
    const appended = (await tableMemoryMb(wh)) - spooled;
    expect(await wh.all(`SELECT count(*)::INTEGER AS n, sum(chunk)::BIGINT AS s FROM ${spool.relation()}`)).toEqual(
      await wh.all(`SELECT count(*)::INTEGER AS n, sum(chunk)::BIGINT AS s FROM appended`),
    );
    expect(appended).toBeGreaterThan(4); // what the spool is for: DuckDB (1.5) keeps this
    expect(spooled).toBeLessThan(1);
  });
});
