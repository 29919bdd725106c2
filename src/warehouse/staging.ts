// Staging: a batch's blocks of one series into its TEMP staging tables, through DuckDB data
// chunks (the commit queue, commit-queue.ts, stages every kind of a batch before merging them,
// series.ts). Instants travel as DOUBLE epoch ms and become TIMESTAMPTZ in the merge SQL.
import type { DuckDBDataChunk as DataChunk, DuckDBType, DuckDBValue, DuckDBVector } from '@duckdb/node-api';
import type { Vector as DuckDBRawVector } from '@duckdb/node-bindings';
import { bindings, DOUBLE, DuckDBDataChunk, INTEGER } from './duckdb-api.js';
import type { BlockSpan } from './stored-vintages.js';
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
  /** The vintage its rows are of and their valid times' span, for the merge (stored-vintages.ts). */
  span?: BlockSpan;
}

/** The staging tables of a series. */
export interface StagingTables {
  staging: string;
  /** The staging table's columns; with `shared`, block_no INTEGER follows site_no. */
  definition: string;
  /** The table of what each block's rows share (a vintage): block_no INTEGER and these columns. */
  shared?: { table: string; definition: string };
}

/**
 * A block with its site as the first staging column: the site's 1-based position in the batch's
 * sorted site list (the merge SQL maps it back to the id). An integer per row instead of the
 * 36-character id: writing a string into a data chunk cost ~1.7 s per 6 million rows.
 */
function numbered(block: StageBlock, siteNo: number): StageBlock {
  return { rows: block.rows, columns: [{ type: INTEGER, values: { constant: siteNo } }, ...block.columns] };
}

/** What was staged of a series, per site_no (index 0: site_no 1). */
export interface Staged {
  rowsBySite: number[];
  /** The spans of a site's blocks with rows; undefined where a block gave none. */
  spansBySite: (BlockSpan[] | undefined)[];
}

/**
 * The statements that create a series' staging tables empty, replacing the last batch's: cheaper
 * than deleting their rows. The commit queue runs a batch's in one call.
 */
export function freshStagingSql(series: StagingTables): string[] {
  const tables = [`CREATE OR REPLACE TEMP TABLE ${series.staging} (${series.definition})`];
  if (series.shared)
    tables.push(`CREATE OR REPLACE TEMP TABLE ${series.shared.table} (block_no INTEGER, ${series.shared.definition})`);
  return tables;
}

/**
 * Stages a batch's blocks of one series into its staging tables, fresh (freshStagingSql): with a
 * `shared` table, each block's shared values as one row of it, numbered, and that block_no on
 * each of the block's rows.
 */
export async function stage(
  warehouse: Warehouse,
  series: StagingTables,
  blocks: { block: StageBlock; siteNo: number }[],
): Promise<Staged> {
  const rowsBySite: number[] = [];
  const spansBySite: (BlockSpan[] | undefined)[] = [];
  const unnamed = new Set<number>();
  for (const { block, siteNo } of blocks) {
    if (block.rows === 0) continue;
    const index = siteNo - 1;
    rowsBySite[index] = (rowsBySite[index] ?? 0) + block.rows;
    if (!block.span) unnamed.add(index);
    else {
      const spans = spansBySite[index] ?? [];
      spans.push(block.span);
      spansBySite[index] = spans;
    }
  }
  for (const index of unnamed) spansBySite[index] = undefined;
  const staged = { rowsBySite, spansBySite };
  if (!series.shared) {
    await appendBlocks(
      warehouse,
      series.staging,
      blocks.map(({ block, siteNo }) => numbered(block, siteNo)),
    );
    return staged;
  }
  const filled = blocks.filter(({ block }) => block.rows > 0);
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
  return staged;
}

/**
 * Appends every block of a batch to a TEMP table through ONE appender, packing the rows into full data chunks:
 * an appender and a flush per block (a model output read is a few hundred rows) cost about 1 ms
 * each on the event loop, more than the rows themselves.
 */
export async function appendBlocks(warehouse: Warehouse, table: string, blocks: readonly StageBlock[]): Promise<void> {
  const filled = blocks.filter((block) => block.rows > 0);
  const total = filled.reduce((sum, block) => sum + block.rows, 0);
  if (total === 0) return;
  const types = filled[0].columns.map((c) => c.type);
  const writers = types.map(columnWriter);
  const appender = await warehouse.connection.createAppender(table, 'main', 'temp');
  try {
    let blockIndex = 0;
    let offset = 0; // within filled[blockIndex]
    for (let done = 0; done < total; done += CHUNK_ROWS) {
      const size = Math.min(CHUNK_ROWS, total - done);
      const chunk = DuckDBDataChunk.create(types, size);
      for (const [index, writer] of writers.entries()) writer.start(chunk, index);
      for (let row = 0; row < size; ) {
        const block = filled[blockIndex];
        const count = Math.min(size - row, block.rows - offset);
        for (let index = 0; index < writers.length; index++)
          writers[index].write(block.columns[index], row, offset, count);
        row += count;
        offset += count;
        if (offset === block.rows) {
          blockIndex += 1;
          offset = 0;
        }
      }
      for (const writer of writers) writer.finish(size);
      appender.appendDataChunk(chunk);
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

/** Writes one column of each data chunk: start, then its values run by run, then finish. */
interface ColumnWriter {
  start(chunk: DataChunk, index: number): void;
  write(column: StageColumn, row: number, offset: number, count: number): void;
  finish(size: number): void;
}

function columnWriter(type: DuckDBType): ColumnWriter {
  if (type === DOUBLE) return numberWriter(new Float64Array(CHUNK_ROWS), type);
  if (type === INTEGER) return numberWriter(new Int32Array(CHUNK_ROWS), type);
  return valueWriter();
}

/**
 * A DOUBLE or INTEGER column, gathered in a typed array and copied into the chunk's vector at once
 * (its nulls as a validity mask): a node-api vector's setItem per value boxes each double it is
 * passed and, once the chunk has a null, computes every later row's validity bit in BigInts.
 */
function numberWriter(data: Float64Array<ArrayBuffer> | Int32Array<ArrayBuffer>, type: DuckDBType): ColumnWriter {
  // DuckDB's validity: bit (row % 64) of 64-bit word (row / 64), little-endian, 1 = valid.
  const validity = new Uint8Array(CHUNK_ROWS / 8);
  const integer = data instanceof Int32Array;
  let vector: DuckDBRawVector;
  let nulls = false;
  return {
    start(chunk, index) {
      vector = bindings.data_chunk_get_vector(chunk.chunk, index);
      validity.fill(0xff);
      nulls = false;
    },
    write({ values }, row, offset, count) {
      if ('constant' in values) {
        data.fill(checked(values.constant, integer, type), row, row + count);
        return;
      }
      for (let i = 0; i < count; i++) {
        const value = values[offset + i];
        if (value == null) {
          validity[(row + i) >> 3] &= ~(1 << ((row + i) & 7));
          nulls = true;
        } else data[row + i] = integer ? checked(value, true, type) : (value as number);
      }
    },
    finish(size) {
      bindings.copy_data_to_vector(vector, 0, data.buffer, 0, size * data.BYTES_PER_ELEMENT);
      if (!nulls) return;
      bindings.vector_ensure_validity_writable(vector);
      bindings.copy_data_to_vector_validity(vector, 0, validity.buffer, 0, Math.ceil(size / 64) * 8);
    },
  };
}

/** A number for a numeric column: an INTEGER column takes whole numbers in int32's range only. */
function checked(value: string | number, integer: boolean, type: DuckDBType): number {
  const fits = typeof value === 'number' && (!integer || (Number.isInteger(value) && value === (value | 0)));
  if (!fits) throw new Error(`staging: ${JSON.stringify(value)} is not a ${type} value`);
  return value;
}

/** Any other column, value by value through the node-api vector. */
function valueWriter(): ColumnWriter {
  let vector: DuckDBVector;
  return {
    start(chunk, index) {
      vector = chunk.getColumnVector(index);
    },
    write({ values }, row, offset, count) {
      for (let i = 0; i < count; i++) {
        vector.setItem(row + i, ('constant' in values ? values.constant : values[offset + i]) as DuckDBValue);
      }
    },
    finish() {
      vector.flush();
    },
  };
}
