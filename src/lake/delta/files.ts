// The data files of a commit: rows written by DuckDB as Parquet straight into the table's folder
// (hive-style `month=YYYY-MM/` folders for a partitioned table, the partition column left out
// of the file as Delta expects), each described by an `add` action with its size, time and
// statistics. Until a commit names them no Delta reader sees them; files of a commit that never
// landed are deleted by vacuum.
import type { DuckDBConnection } from '@duckdb/node-api';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { quoteIdentifier, quoteLiteral } from '../../warehouse/sql.js';
import type { AddFile } from './actions.js';
import { fsyncPath } from './commit.js';
import { fileStats } from './stats.js';

export interface WriteFilesInput {
  /** The table's root folder. */
  table: string;
  /** A SELECT of the rows, the partition columns among its columns. */
  query: string;
  partitionColumns: readonly string[];
  /** File name prefix (part-<who>-<run>): who wrote a file, for people reading the folder. */
  prefix: string;
  /** Columns to give min/max/null-count statistics (the key and time columns). */
  statsColumns: readonly string[];
  /** dataChange of the adds: false for a compaction's rewrite of rows already there. */
  dataChange: boolean;
  /**
   * A folder on the table's file system, outside the table, where DuckDB writes before each
   * file is renamed into the table: a reader globbing the table's folder never meets a file
   * being written.
   */
  staging: string;
  /** The adds' tags (efsync's commit order, src/lake/read.ts). */
  tags?: Record<string, string>;
}

/** Writes the query's rows into new files of the table; their add actions (none when it has no rows). */
export async function writeDataFiles(db: DuckDBConnection, input: WriteFilesInput): Promise<AddFile[]> {
  const staging = join(input.staging, randomUUID());
  mkdirSync(staging, { recursive: true });
  try {
    const pattern = `${input.prefix}-${randomUUID().slice(0, 8)}-{i}`;
    const target =
      input.partitionColumns.length > 0 ? staging : join(staging, `${pattern.replace('{i}', '0')}.parquet`);
    const partitionBy =
      input.partitionColumns.length > 0
        ? `, PARTITION_BY (${input.partitionColumns.map(quoteIdentifier).join(', ')}), FILENAME_PATTERN ${quoteLiteral(pattern)}`
        : '';
    const copied = await db.run(`COPY (${input.query}) TO ${quoteLiteral(target)} (FORMAT parquet${partitionBy})`);
    if (Number(copied.rowsChanged) === 0) return [];
    const adds: AddFile[] = [];
    for (const file of parquetFiles(staging)) {
      const path = relative(staging, file).split(sep).join('/');
      const destination = join(input.table, ...path.split('/'));
      mkdirSync(join(destination, '..'), { recursive: true });
      fsyncPath(file);
      renameSync(file, destination);
      fsyncPath(join(destination, '..'));
      const stat = statSync(destination);
      adds.push({
        path: encodeURI(path),
        partitionValues: partitionValues(path, input.partitionColumns),
        size: stat.size,
        modificationTime: Math.floor(stat.mtimeMs),
        dataChange: input.dataChange,
        stats: JSON.stringify(await fileStats(db, destination, input.statsColumns)),
        ...(input.tags ? { tags: input.tags } : {}),
      });
    }
    return adds;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

function parquetFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return parquetFiles(path);
    return entry.name.endsWith('.parquet') ? [path] : [];
  });
}

/** The partition values of a file from its `key=value` folders (as DuckDB's PARTITION_BY named them). */
function partitionValues(path: string, columns: readonly string[]): Record<string, string | null> {
  const folders = new Map(
    path
      .split('/')
      .slice(0, -1)
      .map((segment) => {
        const at = segment.indexOf('=');
        return [decodeURIComponent(segment.slice(0, at)), decodeURIComponent(segment.slice(at + 1))] as const;
      }),
  );
  return Object.fromEntries(
    columns.map((c) => {
      const value = folders.get(c);
      return [c, value === undefined || value === 'NULL' || value === '__HIVE_DEFAULT_PARTITION__' ? null : value];
    }),
  );
}
