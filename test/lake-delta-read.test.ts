// efsync's Delta log reader (src/lake/delta/) against Delta tables written by Apache Spark: the
// golden tables of delta-io/delta in test/fixtures/delta-golden/ (README there), each with
// its expected version, partition columns, schema, active files and rows. All of them are
// reader version 1 without table features, so efsync reads every one; the refusals (a reader
// version or feature it does not implement, a missing commit) are tested on copies changed so.
import { appendFileSync, cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeltaTableError } from '../src/errors.js';
import { readSnapshot } from '../src/lake/delta/snapshot.js';
import { snapshotSql } from '../src/lake/delta/scan.js';
import { commitName, logDir } from '../src/lake/delta/log.js';
import type { DeltaField } from '../src/lake/delta/types.js';
import { openDuckDB, type DuckDBHandle } from '../src/warehouse/duckdb.js';
import { quoteIdentifier } from '../src/warehouse/sql.js';
import { tempDir } from './sync-support.js';

/** Copied unchanged from delta-io/delta (Apache-2.0: the folder's README has the notice). */
const GOLDEN = join(import.meta.dirname, 'fixtures', 'delta-golden');
const tables = readdirSync(GOLDEN).filter((name) => existsSync(join(GOLDEN, `${name}.expected.json`)));

interface Expected {
  version: number;
  protocol: { minReaderVersion: number; minWriterVersion: number };
  partition_columns: string[];
  schema: { fields: DeltaField[] };
  active_files: string[];
  row_count: number;
  rows: Record<string, unknown>[];
  rows_at_version?: Record<string, Record<string, unknown>[]>;
  ambiguous_columns?: Record<string, unknown>;
}

let db: DuckDBHandle;

beforeAll(async () => {
  db = await openDuckDB(':memory:');
});

afterAll(() => {
  db?.close();
});

/** A field's value in the README's encoding: timestamps ISO 8601 UTC with microseconds, decimals and dates as text. */
function encoded(field: DeltaField): string {
  const column = quoteIdentifier(field.name);
  if (field.type === 'timestamp') return `strftime(${column}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
  if (field.type === 'date' || (typeof field.type === 'string' && field.type.startsWith('decimal')))
    return `${column}::VARCHAR`;
  return column;
}

/** The rows of `table` at `version`, encoded, without the ambiguous columns, each as its JSON text, sorted. */
async function rowsOf(table: string, version: number | undefined, skip: string[]): Promise<string[]> {
  const snapshot = await readSnapshot(db.connection, table, version);
  const fields = snapshot.schema.fields.filter((f) => !skip.includes(f.name));
  const sql = `SELECT to_json(struct_pack(${fields.map((f) => `${quoteIdentifier(f.name)} := ${encoded(f)}`).join(', ')}))::VARCHAR AS row FROM (${snapshotSql(snapshot)})`;
  const rows = (await db.connection.runAndReadAll(sql)).getRowObjectsJS();
  return rows.map((r) => JSON.stringify(JSON.parse(String(r.row)))).sort();
}

function expectedRows(rows: Record<string, unknown>[], skip: string[]): string[] {
  return rows
    .map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).filter(([k]) => !skip.includes(k)))))
    .sort();
}

describe('the golden tables Spark wrote', () => {
  it('are all here (seven tables)', () => {
    expect(tables.length).toBe(7);
  });

  for (const name of tables) {
    it(`${name}: version, protocol, partition columns, schema, active files and rows`, async () => {
      const expected = JSON.parse(readFileSync(join(GOLDEN, `${name}.expected.json`), 'utf8')) as Expected;
      const table = join(GOLDEN, name);
      const snapshot = await readSnapshot(db.connection, table);
      expect(snapshot.version).toBe(expected.version);
      expect(snapshot.protocol.minReaderVersion).toBe(expected.protocol.minReaderVersion);
      expect(snapshot.metadata.partitionColumns).toEqual(expected.partition_columns);
      expect(snapshot.schema.fields).toEqual(expected.schema.fields);
      expect([...snapshot.files.values()].map((f) => f.path).sort()).toEqual([...expected.active_files].sort());
      // The one ambiguous column (a zone-less timestamp partition value) is read as UTC, the
      // convention scan.ts documents, which is the value the expected rows hold.
      const skip: string[] = [];
      const rows = await rowsOf(table, undefined, skip);
      expect(rows).toHaveLength(expected.row_count);
      expect(rows).toEqual(expectedRows(expected.rows, skip));
      for (const [version, atVersion] of Object.entries(expected.rows_at_version ?? {})) {
        expect(await rowsOf(table, Number(version), skip)).toEqual(expectedRows(atVersion, skip));
      }
    });
  }

  it('reads a table at a version before its checkpoint from the commits alone, and after it from the checkpoint', async () => {
    const table = join(GOLDEN, 'basic-with-inserts-deletes-checkpoint');
    const atNine = await readSnapshot(db.connection, table, 9);
    const atTen = await readSnapshot(db.connection, table, 10);
    expect(atNine.version).toBe(9);
    // Version 10 is a DELETE: the checkpoint holds its result and the removes as tombstones.
    expect(atTen.files.size).toBe(6);
    expect(atTen.tombstones.size).toBeGreaterThan(0);
  });

  it('reads a checkpoint in two parts (multi-part), and passes over one missing a part', async () => {
    const table = copyOf('basic-with-inserts-deletes-checkpoint');
    const single = join(logDir(table), '00000000000000000010.checkpoint.parquet');
    const part = (i: number) => join(logDir(table), `00000000000000000010.checkpoint.000000000${i}.0000000002.parquet`);
    const rows = `SELECT *, row_number() OVER () AS n FROM read_parquet('${single}')`;
    await db.connection.run(
      `COPY (SELECT * EXCLUDE (n) FROM (${rows}) WHERE n % 2 = 0) TO '${part(1)}' (FORMAT parquet)`,
    );
    await db.connection.run(
      `COPY (SELECT * EXCLUDE (n) FROM (${rows}) WHERE n % 2 = 1) TO '${part(2)}' (FORMAT parquet)`,
    );
    rmSync(single);
    for (let v = 0; v <= 10; v++) rmSync(join(logDir(table), commitName(v)));
    expect(await rowsOf(table, undefined, [])).toHaveLength(41);
    rmSync(part(2));
    await expect(readSnapshot(db.connection, table)).rejects.toThrow(/commit 0 is missing/);
  });

  it('passes over a checkpoint that does not read, for the commits before it', async () => {
    const table = copyOf('basic-with-inserts-deletes-checkpoint');
    writeFileSync(join(logDir(table), '00000000000000000010.checkpoint.parquet'), 'not parquet');
    expect(await rowsOf(table, undefined, [])).toHaveLength(41);
  });
});

describe('tables efsync refuses, with DeltaTableError', () => {
  it('refuses reader version 3 with deletion vectors: rows a deletion vector hides would be read', async () => {
    const table = copyOf('snapshot-data2-deleted');
    appendCommit(table, 5, [
      {
        protocol: {
          minReaderVersion: 3,
          minWriterVersion: 7,
          readerFeatures: ['deletionVectors'],
          writerFeatures: ['deletionVectors'],
        },
      },
    ]);
    const refused = await readSnapshot(db.connection, table).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DeltaTableError);
    expect((refused as DeltaTableError).reason).toBe('unsupported');
    expect((refused as Error).message).toMatch(
      /reader version 3 \(reader features: deletionVectors\) is not supported/,
    );
    // The version before the upgrade still reads.
    expect((await readSnapshot(db.connection, table, 4)).files.size).toBeGreaterThan(0);
  });

  it('refuses reader version 2 (column mapping: files name columns by physical names efsync would not map)', async () => {
    const table = copyOf('time-travel-start-start20-start40');
    appendCommit(table, 3, [{ protocol: { minReaderVersion: 2, minWriterVersion: 5 } }]);
    await expect(readSnapshot(db.connection, table)).rejects.toThrow(/reader version 2 is not supported/);
  });

  it('refuses a log with a missing commit', async () => {
    const table = copyOf('snapshot-data2-deleted');
    rmSync(join(logDir(table), commitName(2)));
    const refused = await readSnapshot(db.connection, table).catch((error: unknown) => error);
    expect((refused as DeltaTableError).reason).toBe('corrupt');
    expect((refused as Error).message).toMatch(/commit 2 is missing/);
  });

  it('refuses a folder that is not a Delta table', async () => {
    await expect(readSnapshot(db.connection, tempDir('not-delta-'))).rejects.toThrow(/is not a Delta table/);
  });
});

function copyOf(name: string): string {
  const dir = join(tempDir('delta-golden-'), name);
  cpSync(join(GOLDEN, name), dir, { recursive: true });
  return dir;
}

function appendCommit(table: string, version: number, actions: object[]): void {
  appendFileSync(join(logDir(table), commitName(version)), actions.map((a) => `${JSON.stringify(a)}\n`).join(''));
}
