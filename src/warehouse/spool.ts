/**
 * A spool: rows a step gathers a statement at a time (a slice of sites each) and reads back as one
 * relation, kept as Parquet files in a folder beside the writer file, `<writer file>.spool/<name>/`,
 * rather than appended to a temp table. DuckDB keeps what it needs to know about every row
 * appended to a table (counted as `BASE_TABLE`, and no eviction frees it) until a checkpoint
 * writes the table, and a temp table is never checkpointed: appended to slice after slice, it
 * holds memory that grows with the slices until the step runs out. A file written holds nothing
 * in DuckDB.
 */
import { mkdirSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { explainDiskFull } from './disk.js';
import { quoteIdentifier, quoteLiteral } from './sql.js';

/** What a spool needs of a warehouse (src/warehouse/warehouse.ts has it). */
export interface Spooling {
  readonly writerPath: string;
  all<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  run(sql: string): Promise<void>;
}

/** The folder of every spool of the writer file at `writerPath` (removed whole when it opens). */
export function spoolFolderOf(writerPath: string): string {
  return `${writerPath}.spool`;
}

export class Spool {
  /** The parts written, by name: a glob of the folder would misread a path holding `*`, `?` or `[`. */
  private readonly parts: string[] = [];

  private constructor(
    private readonly wh: Spooling,
    private readonly folder: string,
    /** `SELECT CAST(c1 AS t1) AS c1, ...`: every part's columns, by position, as the shape's. */
    private readonly columns: string,
    private readonly names: string,
  ) {}

  /**
   * An empty spool `name` whose rows have the columns of `shape` (a query; its rows are not
   * read); what a spool of that name left (a run killed) goes.
   */
  static async create(wh: Spooling, name: string, shape: string): Promise<Spool> {
    const folder = join(spoolFolderOf(wh.writerPath), name);
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const described = await wh.all<{ column_name: string; column_type: string }>(`DESCRIBE ${shape}`);
    const names = described.map((c) => quoteIdentifier(c.column_name)).join(', ');
    const columns = described
      .map((c) => `CAST(${quoteIdentifier(c.column_name)} AS ${c.column_type}) AS ${quoteIdentifier(c.column_name)}`)
      .join(', ');
    const spool = new Spool(wh, folder, columns, names);
    await spool.add(`${shape} LIMIT 0`); // so the relation has the columns with no part added
    return spool;
  }

  /** Adds the rows of `query` (its columns by position, as the shape's), as one file. */
  async add(query: string): Promise<void> {
    const file = join(this.folder, `part-${String(this.parts.length).padStart(6, '0')}.parquet`);
    try {
      await this.wh.run(
        `COPY (SELECT ${this.columns} FROM (${query}) AS part(${this.names})) TO ${quoteLiteral(file)} (FORMAT parquet)`,
      );
      this.parts.push(file);
    } catch (error) {
      // a statement that failed (out of memory, say) leaves no part for the relation to read
      rmSync(file, { force: true });
      throw explainDiskFull(error, file);
    }
  }

  /** Removes the part added last: what a caller writing to several spools at once takes back when a later write fails. */
  removeLast(): void {
    const file = this.parts.pop();
    if (file) rmSync(file, { force: true });
  }

  /** Every row added, as a relation (a parenthesised query). */
  relation(): string {
    return `(SELECT * FROM read_parquet([${this.parts.map(quoteLiteral).join(', ')}]))`;
  }

  /** Removes the spool's files, and the spools' folder once no other spool is in it. */
  drop(): void {
    rmSync(this.folder, { recursive: true, force: true });
    try {
      rmdirSync(dirname(this.folder));
    } catch {
      // another spool is still open (or the folder is gone already)
    }
  }
}
