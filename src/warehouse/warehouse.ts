/**
 * The warehouse: DuckDB files written by one efsync process at a time.
 *
 *   const wh = await Warehouse.open({ path: 'data/warehouse.duckdb', lockWaitMs?: 10_000,
 *                                     holder?: { job: 'nightly', runId } });
 *   await wh.run(sql, params); await wh.all<T>(sql, params); await wh.transaction(async () => ...);
 *   await wh.publish();   // analysts see the new data from here on
 *   await wh.close();     // releases the writer lock (also released on process exit)
 *
 * Files, for `path` = data/warehouse.duckdb:
 *   data/warehouse.duckdb         the PUBLISHED snapshot analysts open read-only; replaced atomically
 *                                 (rename) by publish(), so open readers keep their old snapshot
 *   data/warehouse.writer.duckdb  the writer's own file; nobody else opens it. When it is missing
 *                                 but a published file exists, open() starts from a copy of that.
 *   data/warehouse.duckdb.lock    the writer lock: JSON {pid, host, job, runId, startedAt}. A second
 *                                 writer waits up to lockWaitMs, then throws WarehouseBusyError
 *                                 naming the holder; a lock of a dead process on this host is taken over.
 *
 * `Warehouse.open({ path, readOnly: true })` opens the published snapshot read-only, without lock.
 * Everything that uses the connection goes through one queue (`exclusive`), so concurrent callers
 * (p-limit over sites) never interleave inside each other's transactions.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DuckDBConnection, DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { migrate } from './migrate.js';

export type SqlParams = DuckDBValue[] | Record<string, DuckDBValue>;

export interface OpenOptions {
  /** The warehouse file. */
  path: string;
}

export class Warehouse {
  private constructor(
    readonly path: string,
    private readonly instance: DuckDBInstance,
    readonly connection: DuckDBConnection,
  ) {}

  static async open(options: OpenOptions): Promise<Warehouse> {
    mkdirSync(dirname(options.path), { recursive: true });
    const instance = await DuckDBInstance.create(options.path);
    const connection = await instance.connect();
    const warehouse = new Warehouse(options.path, instance, connection);
    await migrate(warehouse);
    return warehouse;
  }

  /** Rows as plain JS objects (TIMESTAMPTZ as Date, BIGINT as bigint, DOUBLE as number). */
  async all<T = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<T[]> {
    const reader = await this.connection.runAndReadAll(sql, params);
    return reader.getRowObjectsJS() as T[];
  }

  async run(sql: string, params?: SqlParams): Promise<void> {
    await this.connection.run(sql, params);
  }

  /** Runs `fn` in one transaction: all of it lands, or none of it. */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    await this.run('BEGIN TRANSACTION');
    try {
      const result = await fn();
      await this.run('COMMIT');
      return result;
    } catch (error) {
      await this.run('ROLLBACK');
      throw error;
    }
  }

  async close(): Promise<void> {
    this.connection.closeSync();
    this.instance.closeSync();
  }
}
