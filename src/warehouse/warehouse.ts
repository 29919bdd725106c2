// The warehouse: one DuckDB file written by one efsync process at a time.
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
