/**
 * The cold store (docs/warehouse.md, "Hot and cold: where each byte lives"): the closed UTC days
 * of the series tables, moved out of the DuckDB file into immutable Parquet files written by
 * DuckDB, one per table, day of valid_time and generation, under `<dir>/<base>.cold/<table>/`.
 * `cold_files` (migration 024) says which files exist and which is current.
 *
 *   const cold = new ColdStore(warehouse, coldFolderOf(path));
 *   await cold.moveClosedDays(cutoffMs, nowMs);            // before retention and at publish: days before the cutoff leave DuckDB
 *   await cold.rewritePartition('forecasts', '2026-01-01', keepSql, nowMs); // retention thins one day
 *   await cold.dayRows('forecasts', dayMs);                // SQL: one day's cold rows (retention decides on them)
 *   await cold.currentFiles();                             // Map table → `<table>/<file>`, for the views
 *   await cold.history('forecasts');                       // SQL: hot rows UNION ALL the cold files
 *   await cold.collectGarbage(nowMs, graceMs);             // superseded files past the grace, orphans
 *
 * A file is never rewritten: a changed day gets a new file (next generation, random suffix), and
 * the switch is one transaction (new rows, old rows superseded, hot rows deleted). A kill before it
 * leaves an orphan file no row names, which collectGarbage deletes; after it, the move is whole.
 * Every file holds one table's day, and a move copies at most `rows.coldMoveChunk` rows at once (a day
 * with more alone), so memory does not grow with the history.
 *
 * presentCold and unpresentCold work on a DuckDB connection of their own (the published draft,
 * a writer draft copied from the snapshot), so they take no ColdStore.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RowSizes } from '../resources/sizes.js';
import { faultPoint } from '../fault.js';
import type { Progress } from '../progress.js';
import { chunksOf, handBackPool, halvesOf, runInHalves, runSplitting, skippedForMemory } from './executor.js';
import { fsyncPath } from './disk.js';
import { withOneThread } from './settings.js';
import { DAY } from '../time.js';
import { epochDayOf, instant, instantLiteral, quoteIdentifier, quoteLiteral } from './sql.js';

/** A table that goes cold: its rows are partitioned by the UTC day of `valid_time`. */
export interface ColdTable {
  name: string;
  /** The columns the loader keeps unique together. */
  key: readonly string[];
  /** The order of a file's rows, so that row groups' min/max let a reader skip other sites (default: the key). */
  order?: readonly string[];
  /** The column a move deletes the hot rows by, a slice of its values at a time (none: at once). */
  sliceBy?: string;
  /**
   * When a late hot row meets a cold row of the same key at a move: the hot one replaces it
   * (the newest revision of an actual), or the cold one stays (a vintage is never overwritten).
   */
  hotWins: boolean;
}

export const COLD_TABLES: readonly ColdTable[] = [
  {
    name: 'forecasts',
    key: ['site_id', 'model_name', 'model_version', 'update_time', 'valid_time'],
    sliceBy: 'site_id',
    hotWins: false,
  },
  { name: 'model_outputs', key: ['site_id', 'model_id', 'as_of', 'valid_time'], sliceBy: 'site_id', hotWins: false },
  { name: 'actuals', key: ['site_id', 'valid_time'], sliceBy: 'site_id', hotWins: true },
  { name: 'actual_revisions', key: ['site_id', 'valid_time', 'replaced_at'], sliceBy: 'site_id', hotWins: false },
  { name: 'actuals_by_type', key: ['site_id', 'type', 'valid_time'], sliceBy: 'site_id', hotWins: true },
  {
    name: 'actual_revisions_by_type',
    key: ['site_id', 'type', 'valid_time', 'replaced_at'],
    sliceBy: 'site_id',
    hotWins: false,
  },
  // The accuracy ledger (src/accuracy/input/incremental.ts): a pair is never replaced, only
  // removed (rewritePartition) and aligned anew under a new pid.
  {
    name: 'accuracy_pairs',
    key: ['pid'],
    order: ['site_id', 'valid_time', 'pid'],
    sliceBy: 'site_id',
    hotWins: false,
  },
  { name: 'accuracy_pair_quantiles', key: ['pid', 'level'], hotWins: false },
];

/** The order of the rows of `table`'s cold files (ColdTable.order, else its key). */
export function coldOrder(table: string): readonly string[] {
  const spec = coldTable(table);
  return spec.order ?? spec.key;
}

/** The name a series table with cold files has in the published file; the table's name is its view. */
export function hotNameOf(table: string): string {
  return `${table}_hot`;
}

/**
 * Rows per row group of a cold file, well under DuckDB's default: fed by a sort, its Parquet
 * writer holds a whole group, which must fit the warehouse's memory limit whatever the threads.
 * Smaller groups also let a reader of a few sites skip more of a file.
 */
const COLD_ROW_GROUP_ROWS = 16_384;

/** The current file of a day: not superseded, and not a move's file still pending (moveChunk). */
export const CURRENT = 'superseded_at IS NULL AND NOT pending';

/** `<dir>/<base>.cold` beside the published `<dir>/<base>.duckdb`. */
export function coldFolderOf(path: string): string {
  return resolve(dirname(path), `${basename(path, extname(path))}.cold`);
}

/**
 * The file_search_path of efsync's readers of the published file `path`: its folder first, where
 * the views find the cold folder even from a copy of the file elsewhere or an in-memory session
 * that attaches it (coldFilesMacroSql); the working directory next, for a user's own relative paths.
 */
export function publishedSearchPath(path: string): string[] {
  return [dirname(resolve(path)), process.cwd()];
}

/** 00:00 UTC of the day `hotWindowMs` before `nowMs`: rows before it are cold. */
export function hotCutoff(nowMs: number, hotWindowMs: number): number {
  return Math.floor((nowMs - hotWindowMs) / DAY) * DAY;
}

/** What ColdStore needs of the warehouse (src/warehouse/warehouse.ts has it), its buffer pool's purge included. */
export interface ColdStoreDb {
  all<T = Record<string, unknown>>(sql: string, params?: (string | number | null)[]): Promise<T[]>;
  run(sql: string, params?: (string | number | null)[]): Promise<void>;
  changed(sql: string, params?: (string | number | null)[]): Promise<number>;
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  checkpoint(): Promise<void>;
  readonly memoryLimit: string | null;
  /** The row bounds of the process's memory budget (src/resources/sizes.ts). */
  readonly rows: RowSizes;
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

export interface MovedDay {
  table: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  /** Rows of the day's new file (the hot rows merged with the day's earlier file). */
  rows: number;
}

export interface Rewritten {
  kept: number;
  removed: number;
}

/** A day's new file, written and fsynced, not yet in cold_files. */
interface Written {
  day: string;
  generation: number;
  /** Relative to the folder; null when the day is emptied. */
  file: string | null;
  rows: number;
  bytes: number;
}

interface CurrentFile {
  generation: number;
  file: string;
  row_count: bigint;
}

/** A day's rows to write, as SQL for those of a slice given its condition; `prepare` runs before each slice's. */
interface SlicedRows {
  rows: (ofSlice: string) => string;
  prepare?: (ofSlice: string) => Promise<void>;
}

/** The TEMP table a day's rows are sorted into, in their file's order (sortInto), before they are written. */
const SORTED = 'cold_sorted';

export class ColdStore {
  /** While withHistory runs: the first day its views read (null: every day) and the tables they shadow. */
  private shadows: { from: string | null; tables: Set<string> } | null = null;
  /** Rows of the tables whose vectors moves' deletes touched since the last checkpoint (removeHot). */
  private touchedSince = 0;

  constructor(
    private readonly db: ColdStoreDb,
    /** Absolute: the writer's statements name files by absolute path (the published views, relative: presentCold). */
    readonly folder: string,
  ) {}

  /**
   * Moves every day before `cutoffMs` (00:00 UTC of a day) still in a hot table into its cold
   * file: normally the one day that closed since the last publish, or a late row's day; after a
   * first sync of a long history, nearly the whole table. Days go in chunks of about
   * `rows.coldMoveChunk` rows (the budget's: src/resources/sizes.ts): a chunk of several days is
   * first copied into a TEMP table, so each day's file reads its rows alone instead of scanning
   * the hot table again (whose row groups mix days when a first sync loaded a long history per
   * site); the chunk's files are recorded pending, then its hot rows go (dropHotDays) and its files
   * are made current. When the days hold at least as many rows as they leave, every chunk is
   * written and recorded first and the hot rows go once, by a rebuild of what is left. `tables`:
   * these alone (default: every table). The hot tables are named by their catalog, so a move
   * works inside withHistory too.
   */
  async moveClosedDays(cutoffMs: number, nowMs: number, tables?: readonly string[]): Promise<MovedDay[]> {
    // What the run wrote, written to the file first: DuckDB cannot evict blocks changed since
    // the last checkpoint, and a move's sort and deletes need the pool.
    await this.checkpoint();
    const moved: MovedDay[] = [];
    for (const table of COLD_TABLES.filter((t) => tables?.includes(t.name) ?? true)) {
      const days = await this.hotDaysBefore(table.name, cutoffMs);
      if (days.length === 0) continue;
      const movedRows = days.reduce((rows, day) => rows + day.rows, 0);
      const leaveHot = movedRows >= (await this.hotRows(table.name)) - movedRows;
      for (const chunk of chunksOf(days, this.db.rows.coldMoveChunk))
        moved.push(...(await this.moveOrSplit(table, chunk.keys, nowMs, leaveHot)));
      if (leaveHot) await this.finishPendingMoves(nowMs);
    }
    return moved;
  }

  /**
   * Moves a chunk, split by the executor while it runs out of DuckDB's memory: after a checkpoint
   * (which frees what the deletes hold), whatever it recorded pending completed first, its days
   * still hot go again in halves, down to a day alone, whose one more try failing fails the move.
   */
  private async moveOrSplit(table: ColdTable, days: number[], nowMs: number, leaveHot: boolean): Promise<MovedDay[]> {
    const moved = await runInHalves(days, (part) => this.moveChunk(table, [...part], nowMs, leaveHot), {
      handBack: async () => {
        await this.checkpoint();
        await this.finishPendingMoves(nowMs);
      },
      remaining: (part) => this.stillHot(table, part),
      warehouse: this.db,
    });
    return moved.flat();
  }

  /** Which of `days` are still hot (null: none), after a move that failed part-way was completed. */
  private async stillHot(table: ColdTable, days: readonly number[]): Promise<number[] | null> {
    const hot = (await this.hotDaysBefore(table.name, days.at(-1)! + DAY))
      .map((day) => day.key)
      .filter((day) => day >= days[0]);
    return hot.length === 0 ? null : hot;
  }

  /**
   * Completes the moves recorded pending: their hot rows removed (dropHotDays), then their files
   * made current, a table at a time. Called when the writer opens, before anything reads (a
   * killed process's moves), and by a move that left its days hot. Nothing writes the hot tables
   * in between, so what is left of those days' hot rows is in the pending files.
   */
  async finishPendingMoves(nowMs: number): Promise<number> {
    const pending = await this.db.all<{ table_name: string; day: string; generation: number }>(
      `SELECT table_name, strftime(day, '%Y-%m-%d') AS day, generation FROM cold_files WHERE pending ORDER BY table_name, day`,
    );
    for (const name of new Set(pending.map((row) => row.table_name))) {
      const table = coldTable(name);
      const days = pending.filter((row) => row.table_name === name);
      await this.dropHotDays(
        table,
        days.map((row) => parseDay(row.day)),
      );
      await this.settle(table, days, nowMs);
    }
    return pending.length;
  }

  /**
   * Removes the hot rows of `days`: when they are at least as many as the rows left, by creating
   * the table again with only those left (rebuildWithout), else by deletes a slice of sites at a
   * time (removeHot). A delete holds a version of every vector it touches until a checkpoint, so
   * deleting across a long history can take all of DuckDB's memory; a rebuild writes only what
   * stays, a day after another, so the days left lie together.
   */
  private async dropHotDays(table: ColdTable, days: number[]): Promise<void> {
    const where = `${epochDayOf('valid_time')} IN (${days.map((day) => day / DAY).join(', ')})`;
    const [{ going, staying }] = await this.db.all<{ going: bigint; staying: bigint }>(
      `SELECT count(*) FILTER (WHERE ${where}) AS going, count(*) FILTER (WHERE NOT (${where})) AS staying
       FROM ${await this.hotTable(table.name)}`,
    );
    if (going === 0n) return;
    if (going >= staying && (await this.rebuildWithout(table, where))) return;
    await this.removeHot(table, where);
  }

  /**
   * Creates the hot table again (same DDL and comments) holding only the rows not matching
   * `where`, a day after another, in one transaction: a kill leaves the table as it was. False
   * when it ran out of memory (rolled back), for the caller to delete instead.
   */
  private async rebuildWithout(table: ColdTable, where: string): Promise<boolean> {
    await this.checkpoint();
    const hot = await this.hotTable(table.name);
    const before = quoteIdentifier(`${table.name}_before_move`);
    const staying = await this.db.all<{ day: bigint }>(
      `SELECT DISTINCT ${epochDayOf('valid_time')} AS day FROM ${hot} WHERE NOT (${where}) ORDER BY day`,
    );
    const skipped = await skippedForMemory(() =>
      this.db.transaction(async () => {
        await this.createAgain(table.name, `ALTER TABLE ${hot} RENAME TO ${before}`);
        for (const { day } of staying) {
          await this.db.run(`INSERT INTO ${hot} SELECT * FROM ${before} WHERE ${dayFilter(Number(day) * DAY)}`);
          faultPoint('cold-rebuild');
        }
        await this.db.run(`DROP TABLE ${before}`);
      }),
    );
    if (skipped !== null) return false;
    await this.checkpoint();
    return true;
  }

  /**
   * Thins the cold file of one day: a new generation holding only the rows for which `keepSql`
   * holds (null: none, and the file is not read). `keepSql` is a SQL boolean over the table's
   * columns, evaluated in a query whose FROM is the day's rows named as the table (so a
   * correlated subquery on the table's name sees the same day, or the same slice of its sites
   * when the day is sorted in slices and `prepare` runs before each; window functions go inside
   * such a subquery). Costs one day of one table. The hot
   * rows of that day, if any (a late row not moved yet), are not touched: delete those in the
   * hot table. A day with no cold file, or whose file keeps every row, is left as it is.
   */
  async rewritePartition(
    table: string,
    day: string,
    keepSql: string | null,
    nowMs: number,
    prepare?: (ofSlice: string) => Promise<void>,
  ): Promise<Rewritten> {
    const spec = coldTable(table);
    const dayMs = parseDay(day);
    const current = await this.currentFile(spec.name, dayMs);
    if (!current) return { kept: 0, removed: 0 };
    if (keepSql === null) {
      await this.commit(spec, [await this.writeDay(spec, dayMs, false)], nowMs);
      return { kept: 0, removed: Number(current.row_count) };
    }
    const source = `read_parquet(${quoteLiteral(this.absolute(current.file))})`;
    const name = quoteIdentifier(spec.name);
    const kept = await this.sortInto(spec, source, {
      rows: (of) => `WITH ${name} AS (SELECT * FROM ${source} WHERE ${of}) SELECT * FROM ${name} WHERE ${keepSql}`,
      prepare,
    });
    const removed = Number(current.row_count) - kept;
    if (removed === 0) {
      await this.db.run(`DROP TABLE IF EXISTS ${SORTED}`);
      return { kept, removed: 0 };
    }
    const written = await this.writeDay(spec, dayMs, kept > 0);
    await this.commit(spec, [written], nowMs);
    return { kept, removed };
  }

  /** SQL for the rows of one table's day in its current cold file, to put where a table name goes; null when the day has none. */
  async dayRows(table: string, dayMs: number): Promise<string | null> {
    const current = await this.currentFile(coldTable(table).name, dayMs);
    return current ? `read_parquet(${quoteLiteral(this.absolute(current.file))})` : null;
  }

  /**
   * Runs `fn` with each table that has cold files of days from `fromMs` on (every day:
   * undefined) shadowed, on this connection only, by a temporary view of the same name: the table
   * (named by its catalog) UNION ALL those files. Statements that read days older than the hot
   * window, such as a score whose window reaches past it, then read them unchanged; a window
   * inside the hot days shadows nothing and costs nothing. A statement that writes a shadowed
   * table names it by `hotTable`. A day rewritten meanwhile (rewritePartition) is read from its
   * new file at once. The tables are not touched; the views are dropped when `fn` ends.
   */
  async withHistory<T>(fromMs: number | undefined, fn: () => Promise<T>): Promise<T> {
    const rows = await this.db.all<{ table_name: string }>(
      `SELECT DISTINCT table_name FROM cold_files WHERE ${CURRENT} AND file IS NOT NULL`,
    );
    this.shadows = {
      from: fromMs === undefined ? null : dayText(Math.floor(fromMs / DAY) * DAY),
      tables: new Set(),
    };
    const { tables } = this.shadows;
    try {
      for (const { table_name } of rows) await this.shadow(table_name);
      return await fn();
    } finally {
      this.shadows = null;
      for (const table of tables) await this.db.run(`DROP VIEW IF EXISTS temp.main.${quoteIdentifier(table)}`);
    }
  }

  /**
   * The table itself, named by its catalog, where `withHistory` shadows its name with a view of
   * hot and cold rows: for statements that write its hot rows.
   */
  async hotTable(table: string): Promise<string> {
    const [{ catalog }] = await this.db.all<{ catalog: string }>('SELECT current_database() AS catalog');
    return `${quoteIdentifier(catalog)}.main.${quoteIdentifier(coldTable(table).name)}`;
  }

  /**
   * Empties the hot rows of `table` by creating its table again, with the same DDL and comments:
   * for a writer about to replace every one of them. DuckDB keeps what a DELETE marks, per vector
   * it touches, in memory until a checkpoint rewrites the row group, so deleting every row, even a
   * site at a time, holds memory that grows with the table.
   */
  async emptyHot(table: string): Promise<void> {
    await this.createAgain(table, `DROP TABLE ${await this.hotTable(table)}`);
  }

  /** Creates the hot table of `table` again, with the same DDL and comments, once `away` took the old one out of its name. */
  private async createAgain(table: string, away: string): Promise<void> {
    const { name } = coldTable(table);
    const [{ sql }] = await this.db.all<{ sql: string }>(
      `SELECT sql FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
      [name],
    );
    const comments = await commentsOf(this.db, name);
    await this.db.run(away);
    await this.db.run(sql);
    await putComments(this.db, 'TABLE', await this.hotTable(table), comments);
  }

  /** (Re)creates the view withHistory shadows `table` with, over its current files from the first day it reads. */
  private async shadow(table: string): Promise<void> {
    if (!this.shadows) return;
    const union = await this.unionOfDays(table, this.shadows.from, null);
    await this.db.run(`CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(table)} AS ${union}`);
    this.shadows.tables.add(table);
  }

  /**
   * SQL for the rows of `table`, hot and cold, to put where a table name goes, reading only the
   * cold files of the days in [fromMs, toMs) (UTC days, either end open when null; the rows are
   * not filtered): for a statement over a few days of a long window. Through the table's view
   * DuckDB opens every file of the window, each statement, to skip it by its statistics.
   */
  async between(table: string, fromMs: number | null, toMs: number | null): Promise<string> {
    const day = (ms: number | null) => (ms === null ? null : dayText(Math.floor(ms / DAY) * DAY));
    return `(${await this.unionOfDays(table, day(fromMs), day(toMs === null ? null : toMs + DAY - 1))})`;
  }

  /** The hot rows of `table` and those of its current files of days in [from, to) (either open when null). */
  private async unionOfDays(table: string, from: string | null, to: string | null): Promise<string> {
    const rows = await this.db.all<{ file: string; end_ms: number }>(
      `SELECT file, epoch_ms(day + 1)::DOUBLE AS end_ms FROM cold_files WHERE table_name = $1 AND ${CURRENT} AND file IS NOT NULL
         AND ($2::VARCHAR IS NULL OR day >= $2::DATE) AND ($3::VARCHAR IS NULL OR day < $3::DATE)
       ORDER BY day`,
      [table, from, to],
    );
    const hot = await this.hotTable(table);
    const spec = coldTable(table);
    const last = rows.at(-1);
    return unionSql(
      hot,
      await columnsOf(this.db, table),
      this.fileList(rows.map((row) => row.file)),
      spec.hotWins && last ? replacedByLateSql(hot, spec.key, last.end_ms) : '',
    );
  }

  /** Per table with cold files, its current files as `<table>/<file>` under the cold folder, oldest day first. */
  async currentFiles(): Promise<Map<string, string[]>> {
    const rows = await this.db.all<{ table_name: string; file: string }>(
      `SELECT table_name, file FROM cold_files WHERE ${CURRENT} ORDER BY table_name, day`,
    );
    const files = new Map<string, string[]>();
    for (const row of rows) {
      const paths = files.get(row.table_name) ?? [];
      paths.push(row.file);
      files.set(row.table_name, paths);
    }
    return files;
  }

  /**
   * SQL for every row a series table holds, hot and cold, to put where a table name goes
   * (`SELECT ... FROM ${await cold.history('forecasts')} f`): for statements inside efsync that
   * read older days than the hot window in the writer file.
   */
  async history(table: string): Promise<string> {
    const spec = coldTable(table);
    const files = (await this.currentFiles()).get(spec.name) ?? [];
    const columns = await columnsOf(this.db, spec.name);
    return `(${unionSql(quoteIdentifier(spec.name), columns, this.fileList(files))})`;
  }

  /**
   * Deletes the files of generations superseded more than `graceMs` ago (and forgets them), and
   * files under the folder that no row names (a move or rewrite killed before its commit). Only
   * the writer lock's holder calls it, between moves, so no file it deletes is being written.
   */
  async collectGarbage(nowMs: number, graceMs: number): Promise<number> {
    const expired = await this.db.all<{ file: string }>(
      `SELECT file FROM cold_files WHERE superseded_at < ${instant('$1')}`,
      [nowMs - graceMs],
    );
    for (const { file } of expired) rmSync(this.absolute(file), { force: true });
    if (expired.length > 0) {
      await this.db.run(`DELETE FROM cold_files WHERE superseded_at < ${instant('$1')}`, [nowMs - graceMs]);
    }
    const named = new Set((await this.db.all<{ file: string }>('SELECT file FROM cold_files')).map((row) => row.file));
    let orphans = 0;
    for (const file of this.filesOnDisk()) {
      if (named.has(file)) continue;
      rmSync(this.absolute(file), { force: true });
      orphans++;
    }
    return expired.length + orphans;
  }

  private async hotRows(table: string): Promise<number> {
    const [{ n }] = await this.db.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${await this.hotTable(table)}`);
    return Number(n);
  }

  /** The days before the cutoff with hot rows (epoch ms), oldest first, with their rows. */
  private async hotDaysBefore(table: string, cutoffMs: number): Promise<{ key: number; rows: number }[]> {
    const rows = await this.db.all<{ day: bigint; n: bigint }>(
      `SELECT ${epochDayOf('valid_time')} AS day, count(*) AS n
       FROM ${await this.hotTable(table)} WHERE valid_time < ${instantLiteral(cutoffMs)}
       GROUP BY day ORDER BY day`,
    );
    return rows.map((row) => ({ key: Number(row.day) * DAY, rows: Number(row.n) }));
  }

  /**
   * Moves a chunk of days: their files written and recorded as pending, then their hot rows
   * removed (dropHotDays) and the files made current in one transaction; with `leaveHot`, those
   * two are left to finishPendingMoves. Between the record and the switch, the days are in
   * neither place for a reader of the writer file; none reads it then (analysts read the published
   * file), and a process killed there is completed by finishPendingMoves at the next open.
   */
  private async moveChunk(table: ColdTable, days: number[], nowMs: number, leaveHot: boolean): Promise<MovedDay[]> {
    const range = `valid_time >= ${instantLiteral(days[0])} AND valid_time < ${instantLiteral(days.at(-1)! + DAY)}`;
    let source = await this.hotTable(table.name);
    if (days.length > 1) {
      await this.db.run(`CREATE OR REPLACE TEMP TABLE cold_move AS SELECT * FROM ${source} WHERE ${range}`);
      source = 'cold_move';
    }
    await this.touched(0, this.db.rows.coldCheckpointBeforeWrite);
    await handBackPool(this.db);
    const written: Written[] = [];
    try {
      for (const dayMs of days) {
        const merged = await this.mergedDay(table, dayMs, source);
        written.push(await this.writeDay(table, dayMs, (await this.sortInto(table, merged.all, merged)) > 0));
      }
    } finally {
      if (days.length > 1) await this.db.run('DROP TABLE IF EXISTS cold_move');
    }
    await this.db.transaction(async () => {
      for (const w of written) await this.record(table, w, nowMs, true);
    });
    faultPoint('cold-pending');
    if (!leaveHot) {
      await this.dropHotDays(table, days);
      await this.settle(table, written, nowMs);
    }
    return written.map((w) => ({ table: table.name, day: w.day, rows: w.rows }));
  }

  /**
   * Deletes the hot rows of `where`, consecutive sites to a transaction, each slice of sites
   * holding at most `rows.coldDeleteSlice` hot rows in all (a site with more alone), with a checkpoint
   * once `rows.coldCheckpointAfter` rows' worth of the table were touched, to free the versions the
   * deletes hold. The pool is purged before each slice and each chunk's write: DuckDB does not
   * evict the blocks the deletes' scans cached, even for a statement that then fails for want of
   * memory, and a purge frees most of them.
   */
  private async removeHot(table: ColdTable, where: string): Promise<void> {
    const name = await this.hotTable(table.name);
    if (!table.sliceBy) {
      await this.db.run(`DELETE FROM ${name} WHERE ${where}`);
      const [{ n }] = await this.db.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${name}`);
      return this.touched(Number(n));
    }
    const by = quoteIdentifier(table.sliceBy);
    const sites = await this.db.all<{ site: string; n: bigint }>(
      `SELECT ${by} AS site, count(*) AS n FROM ${name}
       WHERE ${by} IN (SELECT DISTINCT ${by} FROM ${name} WHERE ${where}) GROUP BY ${by} ORDER BY ${by}`,
    );
    const slices = chunksOf(
      sites.map((row) => ({ key: row.site, rows: Number(row.n) })),
      this.db.rows.coldDeleteSlice,
    );
    for (const { keys, rows } of slices) {
      const of = `${by} BETWEEN ${quoteLiteral(keys[0])} AND ${quoteLiteral(keys.at(-1)!)}`;
      await handBackPool(this.db);
      await this.db.run(`DELETE FROM ${name} WHERE ${where} AND ${of}`);
      await this.touched(rows);
    }
  }

  /** Checkpoints, which frees the versions the deletes since the last one hold. */
  private async checkpoint(): Promise<void> {
    await this.db.checkpoint();
    this.touchedSince = 0;
  }

  /** Counts the table rows deletes touched since the last checkpoint, and checkpoints past `threshold` of them. */
  private async touched(rows: number, threshold = this.db.rows.coldCheckpointAfter): Promise<void> {
    this.touchedSince += rows;
    if (this.touchedSince < threshold) return;
    await this.checkpoint();
  }

  /**
   * A day's rows of `source` merged with the day's current file, if any: SQL for those of a slice
   * (`rows`, given a condition on the table's columns), and for every row of both sides (`all`).
   */
  private async mergedDay(table: ColdTable, dayMs: number, source: string): Promise<SlicedRows & { all: string }> {
    const columns = await columnsOf(this.db, table.name);
    const hot = (of: string) => `SELECT ${columns} FROM ${source} WHERE ${dayFilter(dayMs)} AND ${of}`;
    const current = await this.currentFile(table.name, dayMs);
    if (!current) return { rows: hot, all: `(${hot('TRUE')})` };
    const file = `read_parquet(${quoteLiteral(this.absolute(current.file))})`;
    const cold = (of: string) => `SELECT ${columns} FROM ${file} WHERE ${of}`;
    const match = table.key
      .map((column) => `k.${quoteIdentifier(column)} = d.${quoteIdentifier(column)}`)
      .join(' AND ');
    // the rows of the losing side whose key the winning side has are dropped
    const [winner, loser] = table.hotWins ? [hot, cold] : [cold, hot];
    return {
      rows: (of) => `WITH w AS (${winner(of)}), l AS (${loser(of)})
        SELECT * FROM w UNION ALL SELECT * FROM l d WHERE NOT EXISTS (SELECT 1 FROM w k WHERE ${match})`,
      all: `(${hot('TRUE')} UNION ALL ${cold('TRUE')})`,
    };
  }

  /**
   * Fills the TEMP table SORTED with a day's rows (`day.rows`), in the order of its file, a slice
   * of consecutive sites at a time (those of `counted`, a relation holding the day's rows or
   * more, `rows.coldSortSlice` rows a slice; a site with more alone), each slice sorted alone and
   * `day.prepare` run before it; returns the rows in it. A table without `sliceBy` is one slice.
   */
  private async sortInto(table: ColdTable, counted: string, day: SlicedRows): Promise<number> {
    const order = coldOrder(table.name).map(quoteIdentifier).join(', ');
    await this.db.run(`CREATE OR REPLACE TEMP TABLE ${SORTED} AS SELECT * FROM ${counted} LIMIT 0`);
    let rows = 0;
    for (const slice of await this.slicesOf(table, counted)) rows += await this.sortSlice(table, slice, day, order);
    return rows;
  }

  /**
   * One slice of sortInto (the `sliceBy` values it holds; null: every row), sorted into SORTED.
   * The executor splits one that runs out of DuckDB's memory (its statement rolled back) into
   * halves of its values, down to a value alone, which fails: nothing is held that a hand-back
   * would free.
   */
  private async sortSlice(table: ColdTable, slice: string[] | null, day: SlicedRows, order: string): Promise<number> {
    const sorted = await runSplitting(slice, (part) => this.sortPart(table, part, day, order), {
      halves: (part) => (part === null ? null : halvesOf(part)),
    });
    return sorted.reduce((rows, n) => rows + n, 0);
  }

  private async sortPart(table: ColdTable, slice: string[] | null, day: SlicedRows, order: string): Promise<number> {
    const of =
      slice === null
        ? 'TRUE'
        : `${quoteIdentifier(table.sliceBy!)} BETWEEN ${quoteLiteral(slice[0])} AND ${quoteLiteral(slice.at(-1)!)}`;
    await day.prepare?.(of);
    return withOneThread(this.db, () =>
      this.db.changed(`INSERT INTO ${SORTED} SELECT * FROM (${day.rows(of)}) ORDER BY ${order}`),
    );
  }

  /** The `sliceBy` values of `relation`, in order, cut into slices of `rows.coldSortSlice` rows (a value with more alone); [null]: one slice. */
  private async slicesOf(table: ColdTable, relation: string): Promise<(string[] | null)[]> {
    if (!table.sliceBy) return [null];
    const by = quoteIdentifier(table.sliceBy);
    const values = await this.db.all<{ value: string; n: bigint }>(
      `SELECT ${by} AS value, count(*) AS n FROM ${relation} GROUP BY ${by} ORDER BY ${by}`,
    );
    if (values.length === 0) return [null];
    return chunksOf(
      values.map((row) => ({ key: row.value, rows: Number(row.n) })),
      this.db.rows.coldSortSlice,
    ).map(({ keys }) => keys);
  }

  /**
   * Writes the rows of SORTED (sortInto; `hasRows` false: the day is to be emptied) to a new
   * generation's file (writeFile) and drops SORTED.
   */
  private async writeDay(table: ColdTable, dayMs: number, hasRows: boolean): Promise<Written> {
    const written = await this.writeFile(table, dayMs, hasRows ? SORTED : null);
    await this.db.run(`DROP TABLE IF EXISTS ${SORTED}`);
    return written;
  }

  /**
   * Writes the rows of `source` (a relation in the file's order, sorted by the key, so that
   * row-group min/max let a reader skip other sites; null: the day is to be emptied) to a new
   * generation's file in that order, and fsyncs it. Not yet committed: a kill from here to
   * commit() leaves a file no row names.
   */
  private async writeFile(table: ColdTable, dayMs: number, source: string | null): Promise<Written> {
    const day = dayText(dayMs);
    const [{ generation }] = await this.db.all<{ generation: number }>(
      `SELECT coalesce(max(generation), 0) + 1 AS generation FROM cold_files WHERE table_name = $1 AND day = CAST($2 AS DATE)`,
      [table.name, day],
    );
    if (source === null) return { day, generation, file: null, rows: 0, bytes: 0 };
    const file = `${table.name}/${day}.g${generation}-${randomUUID().slice(0, 8)}.parquet`;
    const path = this.absolute(file);
    mkdirSync(dirname(path), { recursive: true });
    // one thread keeps the relation's order: no sort of the whole day
    const count = await withOneThread(this.db, () =>
      this.db.changed(
        `COPY (SELECT * FROM ${source}) TO ${quoteLiteral(path)} (FORMAT parquet, ROW_GROUP_SIZE ${COLD_ROW_GROUP_ROWS})`,
      ),
    );
    fsyncPath(path, 'r');
    fsyncPath(dirname(path), 'r');
    faultPoint('cold-write');
    return { day, generation, file, rows: count, bytes: statSync(path).size };
  }

  /**
   * Writes days that have no hot rows straight to new generations of their cold files, made
   * current in one transaction (a day's current file, if any, superseded: nothing is merged):
   * `rows(dayMs)` is a day's rows already in their file's order (a full alignment's spool of the
   * ledger), so nothing is sorted. A day with no row gets no file.
   */
  async writeDays(
    table: string,
    days: readonly number[],
    rows: (dayMs: number) => string,
    nowMs: number,
  ): Promise<MovedDay[]> {
    const spec = coldTable(table);
    const written: Written[] = [];
    for (const dayMs of days) {
      const day = await this.writeFile(spec, dayMs, rows(dayMs));
      if (day.rows > 0) written.push(day);
      else rmSync(this.absolute(day.file!), { force: true });
    }
    await this.commit(spec, written, nowMs);
    return written.map((w) => ({ table: spec.name, day: w.day, rows: w.rows }));
  }

  /** In one transaction: each written day's current file superseded and its new one recorded as current. */
  private async commit(table: ColdTable, written: Written[], nowMs: number): Promise<void> {
    await this.db.transaction(async () => {
      for (const w of written) {
        await this.supersede(table, w.day, nowMs);
        if (w.file !== null) await this.record(table, w, nowMs, false);
      }
      await this.shadow(table.name);
    });
  }

  /** In one transaction: each day's current file superseded and its pending generation made current. */
  private async settle(table: ColdTable, days: { day: string; generation: number }[], nowMs: number): Promise<void> {
    await this.db.transaction(async () => {
      for (const { day, generation } of days) {
        await this.supersede(table, day, nowMs);
        await this.db.run(
          `UPDATE cold_files SET pending = false WHERE table_name = $1 AND day = CAST($2 AS DATE) AND generation = $3`,
          [table.name, day, generation],
        );
      }
      await this.shadow(table.name);
    });
  }

  private async supersede(table: ColdTable, day: string, nowMs: number): Promise<void> {
    await this.db.run(
      `UPDATE cold_files SET superseded_at = ${instant('$3')}
       WHERE table_name = $1 AND day = CAST($2 AS DATE) AND ${CURRENT}`,
      [table.name, day, nowMs],
    );
  }

  private async record(table: ColdTable, w: Written, nowMs: number, pending: boolean): Promise<void> {
    await this.db.run(
      `INSERT INTO cold_files (table_name, day, generation, file, row_count, bytes, written_at, superseded_at, pending)
       VALUES ($1, CAST($2 AS DATE), $3, $4, $5, $6, ${instant('$7')}, NULL, ${pending})`,
      [table.name, w.day, w.generation, w.file, w.rows, w.bytes, nowMs],
    );
  }

  private async currentFile(table: string, dayMs: number): Promise<CurrentFile | null> {
    const rows = await this.db.all<CurrentFile>(
      `SELECT generation, file, row_count FROM cold_files
       WHERE table_name = $1 AND day = CAST($2 AS DATE) AND ${CURRENT}`,
      [table, dayText(dayMs)],
    );
    return rows[0] ?? null;
  }

  /** Paths relative to the folder of every Parquet file under it (`<table>/<file>`). */
  private filesOnDisk(): string[] {
    if (!existsSync(this.folder)) return [];
    return readdirSync(this.folder, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => readdirSync(join(this.folder, entry.name)).map((file) => `${entry.name}/${file}`));
  }

  private absolute(file: string): string {
    return join(this.folder, file);
  }

  /** The absolute paths of `files` (`<table>/<file>`) as a SQL list; null when there is none. */
  private fileList(files: readonly string[]): string | null {
    return files.length === 0 ? null : fileListSql(files.map((file) => this.absolute(file)));
  }
}

/** The macro of the published file that turns `<table>/<file>` names into paths of its cold folder. */
const COLD_FILES_MACRO = 'efsync_cold_files';

/**
 * In a copy of the writer file about to be published: each series table with cold files becomes
 * `<table>_hot`, and a view of the table's name reads it together with its files, with the
 * table's comments. The view names its files relative to the database file (coldFilesMacroSql),
 * so the published folder can be moved or copied whole.
 */
export async function presentCold(
  connection: DuckDBConnection,
  coldFolderName: string,
  files: Map<string, string[]>,
): Promise<void> {
  const db = connectionDb(connection);
  await connection.run(coldFilesMacroSql(coldFolderName));
  for (const [table, names] of files) {
    if (names.length === 0) continue;
    const columns = await columnsOf(db, table);
    const hot = hotNameOf(table);
    const list = `${COLD_FILES_MACRO}(${fileListSql(names)})`;
    await connection.run(`ALTER TABLE ${quoteIdentifier(table)} RENAME TO ${quoteIdentifier(hot)}`);
    await connection.run(`CREATE VIEW ${quoteIdentifier(table)} AS ${unionSql(quoteIdentifier(hot), columns, list)}`);
    await putComments(db, 'VIEW', quoteIdentifier(table), await commentsOf(db, hot));
  }
}

/**
 * DuckDB resolves a relative path in a view against the reader's working directory (or its
 * file_search_path), never against the database file, and a table function takes no subquery
 * (so not duckdb_databases().path). The one per-reader fact that names the file is
 * temp_directory, `<database file>.tmp` by default: the macro puts the cold folder beside that
 * file. A reader that set file_search_path, or whose temp_directory is not a database's (an
 * in-memory session that ATTACHes the file), gets paths relative to its search path instead.
 * `lambda` needs DuckDB 1.3 or later in the reader; a list of macro calls binds far slower.
 */
function coldFilesMacroSql(coldFolderName: string): string {
  const temp = "current_setting('temp_directory')";
  const folder = `parse_dirpath(${temp})`;
  const besideFile = `current_setting('file_search_path') = '' AND ${temp} LIKE '_%.tmp' AND ${folder} <> ''`;
  const prefix = `CASE WHEN ${besideFile} THEN ${folder} || '/' ELSE '' END || ${quoteLiteral(`${coldFolderName}/`)}`;
  return `CREATE OR REPLACE MACRO ${COLD_FILES_MACRO}(files) AS list_transform(files, lambda f: ${prefix} || f)`;
}

/** Undoes presentCold in a writer file copied from the published snapshot: views dropped, tables renamed back. */
export async function unpresentCold(connection: DuckDBConnection): Promise<void> {
  for (const { name } of COLD_TABLES) {
    const reader = await connection.runAndReadAll(
      `SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND view_name = $1`,
      [name],
    );
    if (Number(reader.getRows()[0][0]) === 0) continue;
    await connection.run(`DROP VIEW ${quoteIdentifier(name)}`);
    await connection.run(`ALTER TABLE ${quoteIdentifier(hotNameOf(name))} RENAME TO ${quoteIdentifier(name)}`);
  }
  await connection.run(`DROP MACRO IF EXISTS ${COLD_FILES_MACRO}`);
}

/**
 * Turns each series view presentCold made (hot rows and cold files) into a table of its own rows,
 * read from the same view of the database `source` and, with `window`, only its valid times
 * in [from, to): a copy of the published snapshot that no file beside it serves (efsync snapshot).
 * A series table or view already dropped from the copy is skipped. Each table keeps the hot
 * table's comments. Returns the rows of each table made; `progress` counts the rows copied.
 */
export async function materializeCold(
  connection: DuckDBConnection,
  source: string,
  window: { from: number | null; to: number | null },
  progress: Progress,
): Promise<Map<string, number>> {
  const db = connectionDb(connection);
  const rows = new Map<string, number>();
  const within = windowSql(window.from, window.to);
  for (const { name } of COLD_TABLES) {
    const kind = await relationKind(db, name);
    const table = quoteIdentifier(name);
    if (kind === 'view') {
      await copyViewInSlices(db, source, name, window, progress);
    } else if (kind === 'table' && within !== 'true') {
      await db.run(`DELETE FROM ${table} WHERE NOT (${within})`);
    }
    if (kind === null) continue;
    const [{ n }] = await db.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`);
    rows.set(name, Number(n));
  }
  await connection.run(`DROP MACRO IF EXISTS ${COLD_FILES_MACRO}`);
  return rows;
}

/** Rows a statement of the snapshot copies at most, besides a day that alone has more: the bar moves, memory stays bounded. */
const SNAPSHOT_SLICE_ROWS = 2_000_000;

/**
 * The series view `name` of `source` as a table of the current database, by slices of whole
 * cold days (from `source`'s cold_files) and a last slice with the rest (the hot rows).
 */
async function copyViewInSlices(
  db: Pick<ColdStoreDb, 'all' | 'run' | 'changed'>,
  source: string,
  name: string,
  window: { from: number | null; to: number | null },
  progress: Progress,
): Promise<void> {
  const overlapping = [
    ...(window.from === null ? [] : [`day + 1 > ${instantLiteral(window.from)}`]),
    ...(window.to === null ? [] : [`day < ${instantLiteral(window.to)}`]),
  ].map((bound) => ` AND ${bound}`);
  const days = await db.all<{ end_ms: number; rows: bigint }>(
    `SELECT epoch_ms(day + 1)::DOUBLE AS end_ms, row_count AS rows FROM ${quoteIdentifier(source)}.main.cold_files
     WHERE table_name = $1 AND ${CURRENT} AND file IS NOT NULL${overlapping.join('')}
     ORDER BY day`,
    [name],
  );
  const hot = hotNameOf(name);
  const [{ n: hotRows }] = await db.all<{ n: bigint }>(
    `SELECT count(*) AS n FROM ${quoteIdentifier(hot)} WHERE ${windowSql(window.from, window.to)}`,
  );
  const coldRows = days.reduce((sum, day) => sum + Number(day.rows), 0);
  progress.start(coldRows + Number(hotRows), name);
  const view = `${quoteIdentifier(source)}.main.${quoteIdentifier(name)}`;
  const copy = quoteIdentifier(`${name}__copy`);
  await db.run(`CREATE TABLE ${copy} AS SELECT * FROM ${view} LIMIT 0`);
  let lower = window.from;
  for (const slice of chunksOf(
    days.map((day) => ({ key: day.end_ms, rows: Number(day.rows) })),
    SNAPSHOT_SLICE_ROWS,
  )) {
    const end = slice.keys[slice.keys.length - 1];
    const upper = window.to === null ? end : Math.min(end, window.to);
    progress.tick(await copyRows(db, view, copy, lower, upper));
    lower = upper;
  }
  progress.tick(await copyRows(db, view, copy, lower, window.to));
  progress.stop();
  await putComments(db, 'TABLE', copy, await commentsOf(db, hot));
  await db.run(`DROP VIEW ${quoteIdentifier(name)}`);
  await db.run(`DROP TABLE ${quoteIdentifier(hot)}`);
  await db.run(`ALTER TABLE ${copy} RENAME TO ${quoteIdentifier(name)}`);
}

/** Copies the rows of `view` with valid times in [from, to) into `copy`; returns how many. */
async function copyRows(
  db: Pick<ColdStoreDb, 'changed'>,
  view: string,
  copy: string,
  from: number | null,
  to: number | null,
): Promise<number> {
  return db.changed(`INSERT INTO ${copy} SELECT * FROM ${view} WHERE ${windowSql(from, to)}`);
}

/** SQL true for the valid times in [from, to); a null bound is none. */
function windowSql(from: number | null, to: number | null): string {
  const where = [
    ...(from === null ? [] : [`valid_time >= ${instantLiteral(from)}`]),
    ...(to === null ? [] : [`valid_time < ${instantLiteral(to)}`]),
  ];
  return where.length > 0 ? where.join(' AND ') : 'true';
}

/** Whether `name` is a view or a table of the current database, or neither. */
async function relationKind(db: Pick<ColdStoreDb, 'all'>, name: string): Promise<'view' | 'table' | null> {
  const [row] = await db.all<{ views: bigint; tables: bigint }>(
    `SELECT (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND view_name = $1) AS views,
            (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = $1) AS tables`,
    [name],
  );
  if (Number(row.views) > 0) return 'view';
  return Number(row.tables) > 0 ? 'table' : null;
}

/** A SQL list of string literals. */
function fileListSql(paths: readonly string[]): string {
  return `[${paths.map(quoteLiteral).join(', ')}]`;
}

/** The hot table's rows and those of the cold files `files` (a SQL list; alias c), less those `replaced` (a join) leaves out; null: no file. */
function unionSql(hotTable: string, columns: string, files: string | null, replaced = ''): string {
  const hot = `SELECT ${columns} FROM ${hotTable}`;
  if (files === null) return hot;
  return `${hot} UNION ALL SELECT ${columns} FROM read_parquet(${files}) c ${replaced}`;
}

/**
 * Leaves out the cold rows a hot row of the same key replaces: a late revision of a closed day (an
 * actual revised after its day went cold) waits in the hot table for the next move to merge it,
 * and until then a reader of hot and cold saw both values (a score between a sync and its publish
 * averaged them). An anti join built on the hot rows of the cold days alone, up to `coldEndMs`:
 * the late ones, few against the hot window's (a correlated NOT EXISTS builds on the cold rows'
 * keys, which grow with the cold days read).
 */
function replacedByLateSql(hotTable: string, key: readonly string[], coldEndMs: number): string {
  const keys = key.map(quoteIdentifier);
  return `ANTI JOIN (SELECT ${keys.join(', ')} FROM ${hotTable} WHERE valid_time < ${instantLiteral(coldEndMs)}) h
    ON ${keys.map((k) => `c.${k} = h.${k}`).join(' AND ')}`;
}

/** A table's comments, its own and its columns', as the catalog holds them. */
interface Comments {
  table: string | null;
  columns: [column: string, text: string][];
}

async function commentsOf(db: Pick<ColdStoreDb, 'all'>, table: string): Promise<Comments> {
  const [row] = await db.all<{ comment: string | null }>(
    `SELECT comment FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
    [table],
  );
  const columns = await db.all<{ column_name: string; comment: string }>(
    `SELECT column_name, comment FROM duckdb_columns()
     WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1 AND comment IS NOT NULL`,
    [table],
  );
  return { table: row?.comment ?? null, columns: columns.map((c) => [c.column_name, c.comment]) };
}

/** Puts `comments` on the table or view `target` (a quoted, possibly qualified, name). */
async function putComments(
  db: Pick<ColdStoreDb, 'run'>,
  kind: 'TABLE' | 'VIEW',
  target: string,
  comments: Comments,
): Promise<void> {
  if (comments.table !== null) await db.run(`COMMENT ON ${kind} ${target} IS ${quoteLiteral(comments.table)}`);
  for (const [column, text] of comments.columns)
    await db.run(`COMMENT ON COLUMN ${target}.${quoteIdentifier(column)} IS ${quoteLiteral(text)}`);
}

/** The table's columns in order, quoted and comma-separated. */
async function columnsOf(db: Pick<ColdStoreDb, 'all'>, table: string): Promise<string> {
  const rows = await db.all<{ column_name: string }>(
    `SELECT column_name FROM duckdb_columns()
     WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1 ORDER BY column_index`,
    [table],
  );
  if (rows.length === 0) throw new Error(`cold store: no table ${table}`);
  return rows.map((row) => quoteIdentifier(row.column_name)).join(', ');
}

function connectionDb(connection: DuckDBConnection): Pick<ColdStoreDb, 'all' | 'run' | 'changed'> {
  return {
    changed: async (sql: string, params?: (string | number | null)[]) =>
      Number((await connection.run(sql, params)).rowsChanged),
    all: async <T>(sql: string, params?: (string | number | null)[]) =>
      (await connection.runAndReadAll(sql, params)).getRowObjectsJS() as T[],
    run: async (sql: string, params?: (string | number | null)[]) => {
      await connection.run(sql, params);
    },
  };
}

function coldTable(name: string): ColdTable {
  const spec = COLD_TABLES.find((table) => table.name === name);
  if (!spec) throw new Error(`cold store: table ${name} is not one of ${COLD_TABLES.map((t) => t.name).join(', ')}`);
  return spec;
}

function dayFilter(dayMs: number): string {
  return `valid_time >= ${instantLiteral(dayMs)} AND valid_time < ${instantLiteral(dayMs + DAY)}`;
}

function dayText(dayMs: number): string {
  return new Date(dayMs).toISOString().slice(0, 10);
}

/** The epoch ms of a UTC day written YYYY-MM-DD (MovedDay's day). */
export function parseDay(day: string): number {
  const ms = Date.parse(`${day}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(ms))
    throw new Error(`cold store: day ${day}: expected YYYY-MM-DD`);
  return ms;
}
