// The views and the comments as one repeatable definition (views.sql, comments.yaml): a warehouse
// the migrations of migration 028 built (views and comments created inside the numbered
// migrations, test/fixtures/migrations-028.json, kept as they were) and then opened by this code
// ends with exactly the schema of a fresh one, comments included; a changed definition is applied
// at the next open, an unchanged one writes nothing; a comment naming a missing column fails.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { tempWarehousePath } from './warehouse-support.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { parse, stringify } from 'yaml';
import { commentsDefinition } from '../src/warehouse/comments.js';
import { applyMigrations, type Migration, migrate, viewsDefinition } from '../src/warehouse/migrate.js';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';

/** The numbered migrations as they were at migration 028, before views.sql. */
const MIGRATIONS_028: Migration[] = Object.entries(
  JSON.parse(readFileSync(new URL('./fixtures/migrations-028.json', import.meta.url), 'utf8')) as Record<
    string,
    string
  >,
).map(([file, sql]) => ({ version: Number(file.slice(0, 3)), name: file.slice(4, -4), sql }));

const CATALOG = "database_name = current_database() AND schema_name = 'main'";

/** Every table, column, index, view and macro of the file, with its comment, as DuckDB keeps them. */
async function schemaOf(connection: DuckDBConnection): Promise<Record<string, unknown[]>> {
  const rows = async (sql: string) => (await connection.runAndReadAll(sql)).getRowObjectsJson();
  return {
    tables: await rows(`SELECT table_name, sql, comment FROM duckdb_tables() WHERE ${CATALOG} ORDER BY table_name`),
    columns: await rows(
      `SELECT table_name, column_index, column_name, data_type, column_default, is_nullable, comment
         FROM duckdb_columns() WHERE ${CATALOG} ORDER BY table_name, column_index`,
    ),
    indexes: await rows(`SELECT index_name, sql, comment FROM duckdb_indexes() WHERE ${CATALOG} ORDER BY index_name`),
    views: await rows(
      `SELECT view_name, sql, comment FROM duckdb_views() WHERE ${CATALOG} AND NOT internal ORDER BY view_name`,
    ),
    macros: await rows(
      `SELECT function_name, function_type, parameters, macro_definition, comment FROM duckdb_functions()
         WHERE ${CATALOG} AND NOT internal ORDER BY function_name`,
    ),
  };
}

async function schemaOfFile(path: string): Promise<Record<string, unknown[]>> {
  const db = await openDuckDB(path, { readOnly: true });
  try {
    return await schemaOf(db.connection);
  } finally {
    db.close();
  }
}

let dir: string;
let path: string;
/** The schema of a warehouse this code creates. */
let fresh: Record<string, unknown[]>;

beforeAll(async () => {
  const made = tempWarehousePath('efsync-migrate-fresh-');
  try {
    await (await Warehouse.open({ path: made.path })).close();
    fresh = await schemaOfFile(writerPathOf(made.path));
  } finally {
    rmSync(made.dir, { recursive: true, force: true });
  }
});

beforeEach(() => {
  ({ dir, path } = tempWarehousePath('efsync-migrate-'));
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Builds the writer file at `path` with the migrations of 028 up to `version`, as the code of then did. */
async function builtByOldMigrations(version: number): Promise<void> {
  const old = await openDuckDB(writerPathOf(path));
  try {
    await applyMigrations(
      old.connection,
      MIGRATIONS_028.filter((m) => m.version <= version),
    );
  } finally {
    old.close();
  }
}

describe('views as one repeatable definition', () => {
  it('views.sql holds the views and macros exactly as the migrations of 028 left them', async () => {
    await builtByOldMigrations(28);
    // Read back from the file: DuckDB spells a macro's types differently before it is stored.
    const old = await schemaOfFile(writerPathOf(path));
    const viewNames = new Set(fresh.views.map((v) => (v as { view_name: string }).view_name));
    const ofViews = (schema: Record<string, unknown[]>) => ({
      views: schema.views,
      macros: schema.macros,
      columns: schema.columns.filter((c) => viewNames.has((c as { table_name: string }).table_name)),
    });
    expect(fresh.views.length).toBeGreaterThan(5);
    expect(fresh.macros.length).toBe(2);
    expect(ofViews(old)).toEqual(ofViews(fresh));
  });

  it.each([28, 19, 11, 2])(
    'a warehouse built by the old migrations up to %i (their views in it) and opened now has the schema of a fresh one',
    async (version) => {
      await builtByOldMigrations(version);
      await (await Warehouse.open({ path })).close();
      expect(await schemaOfFile(writerPathOf(path))).toEqual(fresh);
    },
  );

  it("a ledger of 028 keeps every quantile set, now with its pair's valid time (029), and cold files are current", async () => {
    await builtByOldMigrations(28);
    const old = await openDuckDB(writerPathOf(path));
    try {
      await old.connection.run(`INSERT INTO accuracy_pairs (pid, subject, site_id, valid_time, group_time)
        VALUES (1, 'quantiles', 'a', TIMESTAMPTZ '2026-01-02 10:00:00Z', TIMESTAMPTZ '2026-01-02 10:00:00Z')`);
      await old.connection.run('INSERT INTO accuracy_pair_quantiles VALUES (1, 0.1, 3.5), (1, 0.9, 7.5), (2, 0.5, 1)');
      await old.connection.run(
        `INSERT INTO cold_files VALUES ('forecasts', DATE '2026-01-01', 1, 'f.parquet', 1, 1, now(), NULL)`,
      );
    } finally {
      old.close();
    }
    const wh = await Warehouse.open({ path });
    try {
      expect(
        await wh.all(
          `SELECT pid, level, q, valid_time::VARCHAR AS valid_time FROM accuracy_pair_quantiles ORDER BY level`,
        ),
      ).toEqual([
        { pid: 1n, level: 0.1, q: 3.5, valid_time: '2026-01-02 10:00:00+00' },
        { pid: 1n, level: 0.9, q: 7.5, valid_time: '2026-01-02 10:00:00+00' },
      ]);
      expect(await wh.all(`SELECT pending FROM cold_files`)).toEqual([{ pending: false }]);
    } finally {
      await wh.close();
    }
  });

  it('a changed views definition is applied at the next open, and recorded', async () => {
    const first = await Warehouse.open({ path });
    // What an older views.sql left: another body and another digest.
    await first.run('CREATE OR REPLACE VIEW forecast_latest AS SELECT 1 AS site_id');
    await first.run("UPDATE schema_views SET digest = 'an older definition'");
    await first.close();

    const second = await Warehouse.open({ path });
    expect(await second.all('SELECT digest FROM schema_views')).toEqual([{ digest: viewsDefinition().digest }]);
    const columns = await second.all<{ column_name: string }>(
      "SELECT column_name FROM duckdb_columns() WHERE table_name = 'forecast_latest' ORDER BY column_index",
    );
    expect(columns.map((c) => c.column_name)).toEqual([
      'site_id',
      'valid_time',
      'update_time',
      'lead_time',
      'model_name',
      'model_version',
      'forecast',
      'capacity',
    ]);
    await second.close();
  });
});

describe('comments as one repeatable definition', () => {
  /** Today's comments.yaml, changed by `edit`, written into the test's directory. */
  function commentsFile(
    edit: (value: { tables: Record<string, { comment: string; columns: Record<string, string> }> }) => void,
  ) {
    const value = parse(readFileSync(new URL('../src/warehouse/comments.yaml', import.meta.url), 'utf8'));
    edit(value);
    const file = join(dir, 'comments.yaml');
    writeFileSync(file, stringify(value));
    return commentsDefinition(file);
  }

  async function withWriterFile<T>(use: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    await (await Warehouse.open({ path })).close();
    const db = await openDuckDB(writerPathOf(path));
    try {
      return await use(db.connection);
    } finally {
      db.close();
    }
  }

  const commentOf = async (connection: DuckDBConnection, sql: string) =>
    (await connection.runAndReadAll(sql)).getRows()[0][0];

  it('a changed comments file is applied at the next migrate, and its digest recorded', async () => {
    const views = viewsDefinition(
      undefined,
      commentsFile((v) => {
        v.tables.sites.comment = 'Sites, described again';
      }),
    );
    expect(views.digest).not.toBe(viewsDefinition().digest);
    await withWriterFile(async (connection) => {
      await migrate(connection, views);
      expect(await commentOf(connection, "SELECT comment FROM duckdb_tables() WHERE table_name = 'sites'")).toBe(
        'Sites, described again',
      );
      expect(await commentOf(connection, 'SELECT digest FROM schema_views')).toBe(views.digest);
    });
  });

  it('every comment is applied again after a migration ran, though the digest is unchanged', async () => {
    await withWriterFile(async (connection) => {
      // A migration that rebuilt a table left it without its comments; 023 (comments only now) runs again.
      await connection.run('COMMENT ON TABLE sites IS NULL');
      await connection.run('DELETE FROM schema_migrations WHERE version = 23');
      await migrate(connection);
      expect(await commentOf(connection, "SELECT comment FROM duckdb_tables() WHERE table_name = 'sites'")).toBe(
        viewsDefinition().comments.value.tables.sites.comment,
      );
    });
  });

  it('a comment naming a column that does not exist fails, naming the file and key, and changes nothing', async () => {
    const views = viewsDefinition(
      undefined,
      commentsFile((v) => {
        v.tables.sites.comment = 'Sites, described again';
        v.tables.sites.columns.dropped_long_ago = 'A column a later migration dropped';
      }),
    );
    await withWriterFile(async (connection) => {
      await expect(migrate(connection, views)).rejects.toThrow(
        /comments\.yaml:\d+:\d+: tables\.sites\.columns\.dropped_long_ago: no such column in the warehouse/,
      );
      expect(await commentOf(connection, "SELECT comment FROM duckdb_tables() WHERE table_name = 'sites'")).not.toBe(
        'Sites, described again',
      );
      expect(await commentOf(connection, 'SELECT digest FROM schema_views')).toBe(viewsDefinition().digest);
    });
  });
});
