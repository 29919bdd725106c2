/**
 * The warehouse: DuckDB files written by one efsync process at a time.
 *
 *   const wh = await Warehouse.open({ path: 'data/warehouse.duckdb', lockWaitMs?: 10_000,
 *                                     holder?: { job: 'nightly', runId }, onWait?: (holder) => log,
 *                                     onRecover?: (recovery) => log, onCompactionSkipped?: (reason) => log });
 *   await wh.run(sql, params); await wh.all<T>(sql, params); await wh.changed(sql, params) → rows changed;
 *   await wh.transaction(async () => ...);   // nested calls join the outer transaction
 *   await wh.checkpoint(); // what is committed into the file, and DuckDB's pool freed of it
 *   await wh.moveClosedDays(); // the days before the hot window's cutoff to the cold store (publish does it too)
 *   await wh.publish();   // analysts see the new data from here on
 *   await wh.close();     // releases the writer lock (also released on process exit)
 *
 * Files, for `path` = data/warehouse.duckdb:
 *   data/warehouse.duckdb         the PUBLISHED snapshot analysts open read-only (mode 0444); replaced
 *                                 atomically (rename) by publish(), so open readers keep their old snapshot
 *   data/warehouse.duckdb.wal     a symlink to /dev/null, so no reader's WAL is ever replayed onto it
 *   data/warehouse.writer.duckdb  the writer's own file; nobody else opens it. Made, migrated and
 *                                 recovered by writer-file.ts: when it is missing, or will not open,
 *                                 open() rebuilds it from the published file.
 *   data/warehouse.cold/          the series' closed days, immutable Parquet files (cold.ts) the published
 *                                 file's views read; retention and publish move days older than hotWindowMs there
 *   data/warehouse.duckdb.lock    the writer lock (lock.ts). A second writer waits up to lockWaitMs,
 *                                 then throws WarehouseBusyError naming the holder; the lock of a
 *                                 dead holder is taken over.
 *
 * `Warehouse.open({ path, readOnly: true })` opens the published snapshot read-only, without lock.
 * Opening writes nothing unless it must (migrations pending, a writer file to rebuild).
 * Everything that uses the connection goes through one queue (`exclusive`), so concurrent callers
 * (the sync's sites in flight) never interleave inside each other's transactions.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join } from 'node:path';
import type {
  DuckDBConnection,
  DuckDBInstance,
  DuckDBMaterializedResult,
  DuckDBType,
  DuckDBValue,
} from '@duckdb/node-api';
import { ConfigError } from '../errors.js';
import { DEFAULT_SIZES, type RowSizes } from '../resources/sizes.js';
import { faultPoint } from '../fault.js';
import { DuckDBResultReader } from './duckdb-api.js';
import { type DuckDBHandle, openDuckDB } from './duckdb.js';
import { handBackPool } from './executor.js';
import { ColdStore, coldFolderOf, hotCutoff, type MovedDay, presentCold, publishedSearchPath } from './cold.js';
import { DiskFullError, explainDiskFull, freeBytes, fsyncPath } from './disk.js';
import { writeWarehouseInfo } from './info.js';
import { spoolFolderOf } from './spool.js';
import { WriterLock, type LockHolder } from './lock.js';
import { cloneFile, compactIfMostlyFree, openWriterFile, type Recovery } from './writer-file.js';
import { quoteIdentifier, quoteLiteral } from './sql.js';
import { DAY } from '../time.js';

export { WarehouseBusyError, type LockHolder } from './lock.js';
export type { Recovery } from './writer-file.js';

export type SqlParams = DuckDBValue[] | Record<string, DuckDBValue>;

export interface OpenOptions {
  /** The published warehouse file analysts open (default data/warehouse.duckdb, chosen by the caller). */
  path: string;
  /** How long to wait for another efsync writer to finish before WarehouseBusyError; default 10 s. */
  lockWaitMs?: number;
  /** Who writes, for the lock file and the busy message. */
  holder?: { job: string; runId: string };
  /** Called once when another writer holds the lock and open() starts waiting (to log it). */
  onWait?: (holder: LockHolder) => void;
  /** Called when the writer file would not open and was rebuilt from the published snapshot (to log it). */
  onRecover?: (recovery: Recovery) => void;
  /** Called when the writer file needed compacting and ran out of memory or disk doing it: left as it was, tried at the next open (to log it). */
  onCompactionSkipped?: (reason: string) => void;
  /** Open the published snapshot read-only: no lock, no migrations, no publish. */
  readOnly?: boolean;
  /**
   * Days of the series kept in the DuckDB file (warehouse.hot_window): retention and each publish
   * first move the days before 00:00 UTC of `now - hotWindowMs` to the cold store (cold.ts). Unset: none moves.
   */
  hotWindowMs?: number;
  /** How long a superseded cold file is kept for readers of older snapshots (warehouse.cold_grace); default 7 days. */
  coldGraceMs?: number;
  /** The run's clock, for the hot cutoff and the cold store's times; default Date.now. */
  now?: () => number;
  /**
   * DuckDB's memory_limit outside the steps that set their own (warehouse.memory_limit): the
   * publish, the writer file's compaction at open; unset: DuckDB's default, up to 80% of RAM.
   */
  memoryLimit?: string | null;
  /** The row bounds of the process's memory budget (src/resources/sizes.ts); unset: the default budget's. */
  rows?: RowSizes;
}

/** What publish needs to know of the cold store's settings. */
interface ColdSettings {
  hotWindowMs: number | undefined;
  graceMs: number;
  now: () => number;
}

const DEFAULT_COLD_GRACE_MS = 7 * DAY;

const DEFAULT_LOCK_WAIT_MS = 10_000;
/** Room kept for the checkpoint of a run's last ledger rows at publish: four DuckDB blocks. */
const LAST_CHECKPOINT_MARGIN = 4 * 262_144;

/** The one line that says a writer file was rebuilt, and why. */
export function describeRecovery(recovery: Recovery): string {
  return (
    `the writer file would not open (${recovery.reason}); moved it to ${recovery.movedTo} ` +
    `and rebuilt it from the ${recovery.rebuiltFrom}: what was published is all there, the next sync continues from it`
  );
}

/** `<dir>/<base>.writer.duckdb` beside the published `<dir>/<base>.duckdb`. */
export function writerPathOf(path: string): string {
  const extension = extname(path) || '.duckdb';
  return join(dirname(path), `${basename(path, extname(path))}.writer${extension}`);
}

export class Warehouse {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly holding = new AsyncLocalStorage<true>();
  private inTransaction = false;
  /** Statements of the open transaction waiting to go with its next one (defer). */
  private deferred: string[] = [];
  private coldSettings: ColdSettings = { hotWindowMs: undefined, graceMs: DEFAULT_COLD_GRACE_MS, now: Date.now };
  /** DuckDB's memory_limit between steps (OpenOptions.memoryLimit): what a step's own limit gives way to. */
  memoryLimit: string | null = null;
  /** Told why a compaction the writer file needed was left for later (OpenOptions.onCompactionSkipped). */
  private onCompactionSkipped?: (reason: string) => void;
  /** The row bounds of the pieces of work (OpenOptions.rows) that DuckDB's memory limits must hold. */
  rows: RowSizes = DEFAULT_SIZES.rows;
  /** The closed days of the series, in Parquet files beside the published file (cold.ts). */
  readonly cold: ColdStore;

  private constructor(
    /** The published file analysts open. */
    readonly path: string,
    /** The file this process writes (the published file itself when read-only). */
    readonly writerPath: string,
    /** The DuckDB instance and its connection: opened again when a publish compacts the writer file. */
    private duckdb: Pick<DuckDBHandle, 'instance' | 'connection'>,
    private readonly lock: WriterLock | undefined,
    /** Set when open() found the writer file unopenable and rebuilt it (also in `writer_recoveries`). */
    readonly recovery: Recovery | null = null,
    /** Run after close (removes a private copy read instead of a locked published file). */
    private readonly cleanup?: () => void,
  ) {
    this.cold = new ColdStore(this, coldFolderOf(path));
  }

  /**
   * Use it only inside `exclusive` (or `transaction`), so no other caller interleaves, and not
   * while a deferred statement waits (`defer`): it would run before them.
   */
  get connection(): DuckDBConnection {
    if (this.deferred.length > 0) throw new Error('Warehouse: the connection is used while statements wait (defer)');
    return this.duckdb.connection;
  }

  private get instance(): DuckDBInstance {
    return this.duckdb.instance;
  }

  static async open(options: OpenOptions): Promise<Warehouse> {
    if (options.readOnly) return Warehouse.openReadOnly(options.path);
    mkdirSync(dirname(options.path), { recursive: true });
    const lock = await WriterLock.acquire(
      `${options.path}.lock`,
      options.path,
      options.holder ?? { job: 'efsync', runId: '-' },
      options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS,
      options.onWait,
    );
    try {
      faultPoint('open');
      const writerPath = writerPathOf(options.path);
      rmSync(spoolFolderOf(writerPath), { recursive: true, force: true }); // what a killed run spooled
      const memoryLimit = options.memoryLimit ?? null;
      const { instance, connection, recovery, compactionSkipped } = await openWriterFile(options.path, writerPath, {
        memoryLimit,
      });
      if (compactionSkipped !== null) options.onCompactionSkipped?.(compactionSkipped);
      const warehouse = new Warehouse(options.path, writerPath, { instance, connection }, lock, recovery);
      warehouse.onCompactionSkipped = options.onCompactionSkipped;
      warehouse.memoryLimit = memoryLimit;
      warehouse.rows = options.rows ?? DEFAULT_SIZES.rows;
      warehouse.coldSettings = {
        hotWindowMs: options.hotWindowMs,
        graceMs: options.coldGraceMs ?? DEFAULT_COLD_GRACE_MS,
        now: options.now ?? Date.now,
      };
      if (recovery) {
        await warehouse.recordRecovery(recovery, lock.holder);
        options.onRecover?.(recovery);
      }
      // a move to the cold store that a killed process left half-way is completed before anything reads
      await warehouse.cold.finishPendingMoves(warehouse.coldSettings.now());
      return warehouse;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private async recordRecovery(recovery: Recovery, by: LockHolder): Promise<void> {
    await this.run(
      `INSERT INTO writer_recoveries (recovered_at, moved_to, reason, rebuilt_from, job, run_id) VALUES (now(), $1, $2, $3, $4, $5)`,
      [recovery.movedTo, recovery.reason, recovery.rebuiltFrom, by.job, by.runId],
    );
  }

  /**
   * A session that opened the published file read-write (DuckDB's default) holds an exclusive OS
   * lock on it, so a read-only open fails; then a private copy is read instead (it is consistent:
   * that session cannot commit, see publish) and removed on close. A published file that is not
   * DuckDB's (damaged) is a wrong file, named: readers cannot repair it, the writer's publish does.
   */
  private static async openReadOnly(path: string): Promise<Warehouse> {
    try {
      const { instance, connection } = await openDuckDB(path, {
        readOnly: true,
        fileSearchPath: publishedSearchPath(path),
      });
      return new Warehouse(path, path, { instance, connection }, undefined);
    } catch (error) {
      if (/not a valid DuckDB database file/.test((error as Error).message)) {
        throw new ConfigError(
          `${path} is not a DuckDB database file (damaged?)`,
          'the next run that writes the warehouse publishes it again from its writer file',
        );
      }
      if (!/Could not set lock on file/.test((error as Error).message)) throw error;
      const folder = mkdtempSync(join(tmpdir(), 'efsync-snapshot-'));
      const copy = join(folder, basename(path));
      try {
        cloneFile(path, copy);
        const { instance, connection } = await openDuckDB(copy, {
          readOnly: true,
          fileSearchPath: publishedSearchPath(path),
        });
        return new Warehouse(path, copy, { instance, connection }, undefined, null, () =>
          rmSync(folder, { recursive: true, force: true }),
        );
      } catch (copyError) {
        rmSync(folder, { recursive: true, force: true });
        throw copyError;
      }
    }
  }

  /**
   * Runs `fn` with the connection to itself: callers queue, so concurrent loads never interleave
   * statements inside each other's transactions. Re-entrant: `fn` may call run/all/transaction.
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.holding.getStore()) return fn();
    const result = this.queue.then(() => this.holding.run(true, fn));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Whether the caller runs inside `exclusive` (or `transaction`), holding the connection. */
  holdsConnection(): boolean {
    return this.holding.getStore() === true;
  }

  /** Whether the file has the table: a snapshot published before its migration has not. */
  async hasTable(name: string): Promise<boolean> {
    return (await this.all(`SELECT 1 FROM duckdb_tables() WHERE table_name = $1`, [name])).length > 0;
  }

  /** Rows as plain JS objects (TIMESTAMPTZ as Date, BIGINT as bigint, DOUBLE as number). */
  async all<T = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.exclusive(async () => (await readInPlace(await this.execute(sql, params))).getRowObjectsJS() as T[]);
  }

  /** A query's columns, each an array of its values: many rows without an object each. */
  async columns<T extends unknown[]>(sql: string, params?: SqlParams): Promise<{ [K in keyof T]: T[K][] }> {
    return this.exclusive(async () => {
      const reader = await readInPlace(await this.execute(sql, params));
      // The reader gives no column at all for no rows.
      const columns = reader.currentRowCount > 0 ? reader.getColumnsJS() : [];
      return Array.from({ length: reader.columnCount }, (_, i) => columns[i] ?? []) as { [K in keyof T]: T[K][] };
    });
  }

  /** `types` binds params as given where a JS value's own type is wrong (typeForValue): an integral DOUBLE past int64 is no BIGINT. */
  async run(sql: string, params?: SqlParams, types?: DuckDBType[]): Promise<void> {
    await this.exclusive(() => this.execute(sql, params, types));
  }

  /** A statement's result whole, as DuckDB materialized it: its chunks are read in place (`getChunk`). */
  async result(sql: string): Promise<DuckDBMaterializedResult> {
    return this.exclusive(() => this.execute(sql));
  }

  /**
   * Runs `sql` in the open transaction with its next statement, or its COMMIT, in one call: each
   * call to DuckDB waits for the event loop to take its answer (~4 ms a call in a busy sync), so
   * statements whose answer nobody reads share one. No parameters: the statements go as one text.
   * One that fails fails the call that carries it, in the same transaction, which rolls back.
   */
  defer(sql: string): void {
    if (!this.inTransaction || !this.holdsConnection()) throw new Error('Warehouse.defer: only inside a transaction');
    this.deferred.push(sql);
  }

  /**
   * Runs `sql` after the deferred statements: with them in one call (DuckDB answers for the
   * last), or, with parameters, prepared after them (two calls: prepare, execute).
   */
  private async execute(sql: string, params?: SqlParams, types?: DuckDBType[]): Promise<DuckDBMaterializedResult> {
    const { connection } = this.duckdb;
    const deferred = this.deferred.splice(0);
    if (!params) return connection.run([...deferred, sql].join(';\n'));
    if (deferred.length > 0) await connection.run(deferred.join(';\n'));
    const prepared = await connection.prepare(sql);
    try {
      prepared.bind(params, types);
      return await prepared.run();
    } finally {
      prepared.destroySync();
    }
  }

  /**
   * Stops the statement running on the connection now: it fails with DuckDB's "INTERRUPT Error"
   * and its transaction rolls back. For a second signal, which must not wait for a long statement.
   */
  interrupt(): void {
    this.duckdb.connection.interrupt();
  }

  /**
   * Runs one statement on a connection of its own, committed at once, outside the queue: for the
   * last words of a process stopped hard while a transaction holds the main connection.
   */
  async runAside(sql: string, params?: SqlParams): Promise<void> {
    const connection = await this.instance.connect();
    try {
      await connection.run(sql, params);
    } finally {
      connection.closeSync();
    }
  }

  /** Runs a statement and returns how many rows it inserted, updated or deleted. */
  async changed(sql: string, params?: SqlParams): Promise<number> {
    return this.exclusive(async () => (await this.execute(sql, params)).rowsChanged);
  }

  /** Whether a transaction of `transaction` is open (in which a nested call runs as part of it). */
  get insideTransaction(): boolean {
    return this.inTransaction;
  }

  /** Runs `fn` in one transaction: all of it lands, or none of it. Nested calls join the outer one. */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      if (this.inTransaction) return fn();
      // BEGIN goes with the transaction's first statement (defer).
      this.deferred.push('BEGIN TRANSACTION');
      this.inTransaction = true;
      try {
        const result = await fn();
        await this.execute('COMMIT');
        faultPoint('commit');
        return result;
      } catch (error) {
        this.deferred = [];
        // A COMMIT that failed (a full disk) has ended the transaction already, and a failure
        // before the first statement began none: the ROLLBACK's own error ("no transaction is
        // active") must not hide the cause.
        await this.duckdb.connection.run('ROLLBACK').catch(() => undefined);
        throw explainDiskFull(error, this.writerPath);
      } finally {
        this.inTransaction = false;
      }
    });
  }

  /**
   * Makes what is committed so far visible to analysts: moves the closed days to the cold store
   * (with a hot window set), checkpoints the writer file, compacts it when the moves left it
   * mostly free space, clones it (cloneFile) beside the
   * published file, turns the series tables with cold files into views over hot and cold there
   * (presentCold), makes it read-only (mode 0444), fsyncs, and renames it over the published one.
   * Readers holding the old file keep their snapshot (and the cold files it names, kept for the
   * grace); the next reader to open sees the new one. Last, expired cold files are deleted.
   *
   * `<path>.wal` is a symlink to /dev/null from the first publish on. DuckDB replays whatever
   * WAL lies beside a file onto it, and a reader that opened the file read-write (DuckDB's
   * default) and wrote left one that the next reader replayed onto the NEW snapshot (rows of the
   * old one deleted, a stray table). With the symlink, a read-only reader replays nothing, and a
   * read-write session's commits fail ("Could not fsync file …wal"), so it changes nothing.
   */
  async publish(): Promise<void> {
    if (!this.lock) throw new Error(`warehouse ${this.path} is open read-only: nothing to publish`);
    await this.exclusive(async () => {
      const { graceMs, now } = this.coldSettings;
      await this.moveClosedDays();
      await this.checkpoint();
      faultPoint('checkpoint');
      await this.compactIfMostlyFree();
      const files = await this.cold.currentFiles();
      const draft = `${this.path}.tmp-${randomUUID().slice(0, 8)}`;
      const size = statSync(this.writerPath).size;
      try {
        const free = freeBytes(draft);
        if (free !== null && free < size) throw new DiskFullError(this.path, size, free);
        cloneFile(this.writerPath, draft);
        await this.presentIn(draft, files, now());
        chmodSync(draft, 0o444);
        fsyncPath(draft, 'r');
        faultPoint('publish-copy');
        neutraliseWal(this.path);
        renameSync(draft, this.path);
      } catch (error) {
        rmSync(draft, { force: true });
        throw explainDiskFull(error, this.path, size);
      } finally {
        rmSync(`${draft}.wal`, { force: true });
      }
      faultPoint('publish-rename');
      fsyncPath(dirname(this.path), 'r');
      await this.cold.collectGarbage(now(), graceMs);
    });
  }

  /**
   * Compacts the writer file when the moves left it mostly free space (compactIfMostlyFree), so
   * that the publish copies only its data. Called with the connection held and no transaction
   * open: it closes the DuckDB instance and opens it again, with the memory limit it was opened
   * with (a publish runs outside the steps' own limits).
   */
  private async compactIfMostlyFree(): Promise<void> {
    const { handle, skipped } = await compactIfMostlyFree(
      { ...this.duckdb, close: () => this.closeDuckDB() },
      this.writerPath,
      { memoryLimit: this.memoryLimit },
    );
    this.duckdb = handle;
    if (skipped !== null) this.onCompactionSkipped?.(skipped);
  }

  /**
   * Moves the days before the hot cutoff (00:00 UTC of the day the hot window before the run's
   * clock) to the cold store; nothing without a hot window. Retention calls it before it thins,
   * so that it thins closed days in their files a day at a time, whatever a first sync loaded.
   * `only`: of these tables, the days before `before` too (a full alignment moves the ledger's
   * days as it completes them).
   */
  async moveClosedDays(only?: { tables: readonly string[]; before: number }): Promise<MovedDay[]> {
    const cutoff = this.coldCutoff();
    if (cutoff === null) return [];
    const before = Math.min(cutoff, only?.before ?? Number.POSITIVE_INFINITY);
    return this.exclusive(() => this.cold.moveClosedDays(before, this.coldSettings.now(), only?.tables));
  }

  /** The hot cutoff: days before it belong in the cold store (null: no hot window, none does). */
  coldCutoff(): number | null {
    const { hotWindowMs, now } = this.coldSettings;
    return hotWindowMs === undefined ? null : hotCutoff(now(), hotWindowMs);
  }

  /** Writes days of `table` that have no hot rows straight to their cold files (ColdStore.writeDays). */
  async writeColdDays(table: string, days: readonly number[], rows: (dayMs: number) => string): Promise<MovedDay[]> {
    return this.exclusive(() => this.cold.writeDays(table, days, rows, this.coldSettings.now()));
  }

  /**
   * Gets ready to publish what is committed: checkpoints it, and throws DiskFullError unless the
   * disk has room for the copy (the writer file's size, and a margin for the checkpoint of the
   * last ledger rows). The runner calls it before it records a run ok: a checkpoint that fails
   * for lack of space leaves that record in the WAL, replayed as ok by the next open although
   * nothing was published.
   */
  async prepareToPublish(): Promise<void> {
    await this.checkpoint();
    const needed = statSync(this.writerPath).size + LAST_CHECKPOINT_MARGIN;
    const free = freeBytes(this.path);
    if (free !== null && free < needed) throw new DiskFullError(this.path, needed, free);
  }

  /** Bytes of the writer file's WAL: what the next checkpoint writes into the file (0 when none). */
  walBytes(): number {
    try {
      return statSync(`${this.writerPath}.wal`).size;
    } catch {
      return 0;
    }
  }

  /**
   * Writes what is committed into the file, then purges DuckDB's pool (handBackPool). The table
   * data written since the last checkpoint sits in the pool until then; the checkpoint itself
   * reads and writes blocks that stay there, unpinned but allocated, until something evicts them,
   * so that the work after a checkpoint would build on them (tens of MiB past the limit).
   */
  async checkpoint(): Promise<void> {
    await this.exclusive(() =>
      this.connection.run('CHECKPOINT').catch((error: unknown) => {
        throw explainDiskFull(error, this.writerPath);
      }),
    );
    await handBackPool(this);
  }

  /**
   * What the publish draft shows readers: its series tables with cold files become views over hot
   * and cold, and warehouse_info says what it holds; checkpointed, so no WAL stays. The draft is
   * attached to the writer's own DuckDB instance, on a connection of its own, so that it shares the
   * writer's memory instead of a second instance's.
   */
  private async presentIn(draft: string, files: Map<string, string[]>, takenAt: number): Promise<void> {
    const coldFolder = files.size > 0 ? basename(coldFolderOf(this.path)) : null;
    const connection = await this.instance.connect();
    try {
      const writer = String((await connection.runAndReadAll('SELECT current_database()')).getRows()[0][0]);
      await connection.run(`ATTACH ${quoteLiteral(draft)} AS efsync_publish`);
      try {
        await connection.run('USE efsync_publish');
        if (coldFolder !== null) await presentCold(connection, coldFolder, files);
        await writeWarehouseInfo(connection, {
          kind: 'published',
          takenAt,
          validFrom: null,
          validTo: null,
          source: null,
          coldFolder,
        });
        await connection.run('CHECKPOINT efsync_publish');
      } finally {
        await connection.run(`USE ${quoteIdentifier(writer)}`);
        await connection.run('DETACH efsync_publish');
      }
    } finally {
      connection.closeSync();
    }
  }

  private closeDuckDB(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }

  /** Closes even a database DuckDB invalidated (a failed write), and always releases the lock. */
  async close(): Promise<void> {
    await this.queue;
    try {
      this.closeDuckDB();
    } finally {
      this.lock?.release();
      this.cleanup?.();
    }
  }
}

/**
 * A reader of a materialized result that takes its chunks where they are: the reader's own fetch
 * is a call to DuckDB's thread a chunk, and one more for the end.
 */
async function readInPlace(result: DuckDBMaterializedResult): Promise<DuckDBResultReader> {
  let next = 0;
  const inPlace = Object.create(result, {
    fetchChunk: { value: async () => (next < result.chunkCount ? result.getChunk(next++) : null) },
  });
  const reader = new DuckDBResultReader(inPlace);
  await reader.readAll();
  return reader;
}

/** Replaces whatever `<path>.wal` is (a foreign WAL, or nothing) by a symlink to /dev/null, atomically. */
function neutraliseWal(path: string): void {
  const draft = `${path}.wal.tmp-${randomUUID().slice(0, 8)}`;
  symlinkSync('/dev/null', draft);
  renameSync(draft, `${path}.wal`);
}
