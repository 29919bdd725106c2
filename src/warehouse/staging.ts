// Staging: a batch's blocks of one series into its TEMP staging tables, through DuckDB data
// chunks (the commit queue, commit-queue.ts, stages every kind of a batch before merging them,
// series.ts). Instants travel as DOUBLE epoch ms and become TIMESTAMPTZ in the merge SQL.
import { DuckDBDataChunk, INTEGER, type DuckDBType, type DuckDBValue, type DuckDBVector } from '@duckdb/node-api';
import type { Warehouse } from './warehouse.js';

/** DuckDB's vector size: a data chunk holds at most this many rows. */
const CHUNK_ROWS = 2048;

/**
 * A staged column: instants travel as DOUBLE epoch ms (exact for whole milliseconds, and no BigInt
 * per value in JavaScript) and become TIMESTAMPTZ in the merge SQL.
 */
export interface StageColumn {
  type: DuckDBType;
  /** The values, or one value repeated for every row. */
  values: ArrayLike<string | number | null> | { constant: string | number };
}

/** One block of one site's rows for the staging table, its columns in the table's order after site_no. */
export interface StageBlock {
  rows: number;
  columns: StageColumn[];
  /**
   * What every row of the block shares (constants, in the order of the series' `shared` table):
   * staged once per block and joined back by block_no, instead of repeated on every row.
   */
  shared?: StageColumn[];
}

/** The staging tables of a series. */
export interface StagingTables {
  staging: string;
  /** The staging table's columns; with `shared`, block_no INTEGER follows site_no. */
  definition: string;
  /**
   * The table of what each block's rows share: block_no INTEGER and these columns. `key`: the
   * positions of those that name a vintage, as the merge SQL partitions them; with the site, the
   * key of the rows a block holds (a model listed under two sites has its output under each).
   */
  shared?: { table: string; definition: string; key: readonly number[] };
}

/**
 * A block with its site as the first staging column: the site's 1-based position in the batch's
 * sorted site list (the merge SQL maps it back to the id). An integer per row instead of the
 * 36-character id: writing a string into a data chunk cost ~1.7 s per 6 million rows.
 */
function numbered(block: StageBlock, siteNo: number): StageBlock {
  return { rows: block.rows, columns: [{ type: INTEGER, values: { constant: siteNo } }, ...block.columns] };
}

/** What was staged of a series: blocks 1..alone need no collapsing (see stage); rows per site_no (index 0: site_no 1). */
export interface Staged {
  alone: number;
  blocks: number;
  rowsBySite: number[];
}

/**
 * Stages a batch's blocks of one series: with a `shared` table, each block's shared values as one
 * row of it, numbered, and that block_no on each of the block's rows. Returns how many blocks
 * are alone: numbered first, 1..alone, they are the blocks of vintages (shared key, and site)
 * whose valid times (first column) do not repeat within the batch, so none of their rows can
 * repeat a key of the batch and the merge takes them as they are. Collapsing repeated keys
 * (a hash aggregate over every staged row) was about half of a first sync's merge statements;
 * only the other blocks (the same vintage read twice) still go through it.
 */
export async function stage(
  warehouse: Warehouse,
  series: StagingTables,
  blocks: { block: StageBlock; siteNo: number }[],
): Promise<Staged> {
  const rowsBySite: number[] = [];
  for (const { block, siteNo } of blocks) {
    if (block.rows > 0) rowsBySite[siteNo - 1] = (rowsBySite[siteNo - 1] ?? 0) + block.rows;
  }
  // Replacing the tables is cheaper than deleting their rows (2 s of a 1,000-site sync).
  await warehouse.run(`CREATE OR REPLACE TEMP TABLE ${series.staging} (${series.definition})`);
  if (!series.shared) {
    await appendBlocks(
      warehouse,
      series.staging,
      blocks.map(({ block, siteNo }) => numbered(block, siteNo)),
    );
    return { alone: 0, blocks: blocks.length, rowsBySite };
  }
  await warehouse.run(
    `CREATE OR REPLACE TEMP TABLE ${series.shared.table} (block_no INTEGER, ${series.shared.definition})`,
  );
  const { alone, filled } = aloneFirst(
    blocks.filter(({ block }) => block.rows > 0),
    series.shared.key,
  );
  const blockNo = (index: number): StageColumn => ({ type: INTEGER, values: { constant: index + 1 } });
  await appendBlocks(
    warehouse,
    series.shared.table,
    filled.map(({ block }, index) => ({ rows: 1, columns: [blockNo(index), ...(block.shared ?? [])] })),
  );
  await appendBlocks(
    warehouse,
    series.staging,
    filled.map(({ block, siteNo }, index) =>
      numbered({ rows: block.rows, columns: [blockNo(index), ...block.columns] }, siteNo),
    ),
  );
  return { alone, blocks: filled.length, rowsBySite };
}

/** The blocks alone (see stage) first, then the others; and how many are alone. */
function aloneFirst(
  blocks: { block: StageBlock; siteNo: number }[],
  key: readonly number[],
): { alone: number; filled: { block: StageBlock; siteNo: number }[] } {
  const keyOf = ({ block, siteNo }: { block: StageBlock; siteNo: number }) =>
    [siteNo, ...key.map((index) => constantOf(block.shared?.[index]))].join('\0');
  const groups = new Map<string, StageBlock[]>();
  for (const entry of blocks) {
    const group = groups.get(keyOf(entry));
    if (group) group.push(entry.block);
    else groups.set(keyOf(entry), [entry.block]);
  }
  const aloneGroups = new Set([...groups].filter(([, group]) => distinctTimes(group)).map(([name]) => name));
  const first = blocks.filter((entry) => aloneGroups.has(keyOf(entry)));
  return { alone: first.length, filled: [...first, ...blocks.filter((entry) => !aloneGroups.has(keyOf(entry)))] };
}

/**
 * Whether no valid time (first column) repeats within the blocks of one vintage: each block's
 * rise strictly, and those of several blocks (a vintage some reads returned in part) differ.
 */
function distinctTimes(group: readonly StageBlock[]): boolean {
  if (!group.every((block) => rising(block.columns[0]))) return false;
  if (group.length === 1) return true;
  const times = new Set<unknown>();
  let rows = 0;
  for (const block of group) {
    const values = block.columns[0].values as ArrayLike<unknown>;
    for (let i = 0; i < values.length; i++) times.add(values[i]);
    rows += values.length;
  }
  return times.size === rows;
}

function constantOf(column: StageColumn | undefined): string | number {
  return column && 'constant' in column.values ? column.values.constant : '';
}

/** Whether a column's values rise strictly (so no value repeats); a constant column does not. */
function rising(column: StageColumn | undefined): boolean {
  if (!column || 'constant' in column.values) return false;
  const values = column.values;
  for (let i = 1; i < values.length; i++) {
    if (!((values[i] as number) > (values[i - 1] as number))) return false;
  }
  return true;
}

/**
 * Appends every block of a batch through ONE appender, packing the rows into full data chunks:
 * an appender and a flush per block (a model output read is a few hundred rows) cost about 1 ms
 * each on the event loop, more than the rows themselves.
 */
async function appendBlocks(warehouse: Warehouse, table: string, blocks: readonly StageBlock[]): Promise<void> {
  const filled = blocks.filter((block) => block.rows > 0);
  const total = filled.reduce((sum, block) => sum + block.rows, 0);
  if (total === 0) return;
  const types = filled[0].columns.map((c) => c.type);
  const appender = await warehouse.connection.createAppender(table, 'main', 'temp');
  try {
    let blockIndex = 0;
    let offset = 0; // within filled[blockIndex]
    for (let done = 0; done < total; done += CHUNK_ROWS) {
      const size = Math.min(CHUNK_ROWS, total - done);
      const chunk = DuckDBDataChunk.create(types, size);
      const vectors = types.map((_, index) => chunk.getColumnVector(index));
      for (let row = 0; row < size; ) {
        const block = filled[blockIndex];
        const count = Math.min(size - row, block.rows - offset);
        block.columns.forEach((column, index) => {
          setItems(vectors[index], row, column, offset, count);
        });
        row += count;
        offset += count;
        if (offset === block.rows) {
          blockIndex += 1;
          offset = 0;
        }
      }
      for (const vector of vectors) vector.flush();
      appender.appendDataChunk(chunk);
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

/** Copies `count` values of `column` from `offset` into `vector` from row `row`. */
function setItems(vector: DuckDBVector, row: number, column: StageColumn, offset: number, count: number): void {
  const values = column.values;
  if ('constant' in values) {
    for (let i = 0; i < count; i++) vector.setItem(row + i, values.constant as DuckDBValue);
  } else {
    for (let i = 0; i < count; i++) vector.setItem(row + i, values[offset + i] as DuckDBValue);
  }
}
