// The cold store (src/warehouse/cold.ts, docs/warehouse.md "Hot and cold"): closed days leave the
// DuckDB file for immutable Parquet files at publish, read back equal through the published
// file's views from any working directory, late rows merge into a new generation, retention can
// thin one day, superseded files outlive their grace only, and a kill mid-move loses nothing.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ColdStore, coldFolderOf, hotCutoff } from '../src/warehouse/cold.js';
import { instantLiteral } from '../src/warehouse/sql.js';
import { Warehouse, writerPathOf } from '../src/warehouse/warehouse.js';
import { openWriterFile } from '../src/warehouse/writer-file.js';
import { emulator, NOW as SYNC_NOW, query, runSync, tableHashes, tempDir, testConfig } from './sync-support.js';
import { count, startChild, startReader } from './warehouse-support.js';

const DAY = 86_400_000;
/** The run's clock: 12:00 UTC, 12 days after the first synthetic day. */
const START = Date.UTC(2026, 0, 1);
const NOW = START + 12 * DAY + 12 * 3_600_000;
const HOT_WINDOW = 3 * DAY;
const CUTOFF = hotCutoff(NOW, HOT_WINDOW);

async function open(path: string, now = NOW): Promise<Warehouse> {
  return Warehouse.open({ path, hotWindowMs: HOT_WINDOW, coldGraceMs: DAY, now: () => now });
}

/**
 * 2 sites (or `sites`) x 14 days (or `days`) of hourly valid times: forecasts of 3 vintages each, model outputs of 2,
 * actuals, and a revision a day. Generated in SQL (range), as a history of any depth would be.
 */
async function fill(wh: Warehouse, days = 14, sites = 2): Promise<void> {
  const hours = days * 24;
  const start = `make_timestamptz(${START}::BIGINT * 1000)`;
  await wh.run(`INSERT INTO forecasts
    SELECT 'site-' || s, 'm', 1, ${start} + to_hours(h - v * 6), ${start} + to_hours(h), h * 0.5 + s + v, 100
    FROM range(${sites}) a(s), range(${hours}) b(h), range(1, 4) c(v)`);
  await wh.run(`INSERT INTO model_outputs
    SELECT 'model-' || s, ${start} + to_hours(h - v * 12), ${start} + to_hours(h), 'site-' || s, 'm', 1, h * 0.25, 100
    FROM range(${sites}) a(s), range(${hours}) b(h), range(1, 3) c(v)`);
  await wh.run(`INSERT INTO actuals
    SELECT 'site-' || s, ${start} + to_hours(h), h * 0.4, ${start} + to_hours(h + 1), NULL
    FROM range(${sites}) a(s), range(${hours}) b(h)`);
  await wh.run(`INSERT INTO actual_revisions
    SELECT 'site-0', ${start} + to_hours(d * 24 + 5), ${start} + to_hours(d * 24 + 9), 1.0, 2.0 FROM range(${days}) t(d)`);
}

const TABLES = ['forecasts', 'model_outputs', 'actuals', 'actual_revisions'];

/** Per table: count and md5 of its rows in a stable order, read through `source(table)`. */
async function hashes(read: (sql: string) => Promise<Record<string, unknown>[]>, source = (t: string) => t) {
  const sql = TABLES.map(
    (t) =>
      `SELECT '${t}' AS name, count(*) AS n, md5(string_agg(x::VARCHAR, '|' ORDER BY x::VARCHAR)) AS hash FROM ${source(t)} x`,
  ).join(' UNION ALL ');
  const rows = await read(sql);
  return Object.fromEntries(rows.map((r) => [r.name, `${r.n} ${r.hash}`]));
}

/** The hashes as efsync reads the tables: hot and cold together, through history(). */
async function historyHashes(wh: Warehouse) {
  const sources = Object.fromEntries(await Promise.all(TABLES.map(async (t) => [t, await wh.cold.history(t)])));
  return hashes(
    (sql) => wh.all(sql),
    (t) => sources[t],
  );
}

/** Runs `sql` on `file` read-only in another process whose working directory is `cwd`. */
async function readFrom(cwd: string, file: string, sql: string): Promise<Record<string, unknown>[]> {
  const duckdb = pathToFileURL(createRequire(import.meta.url).resolve('@duckdb/node-api')).href;
  const script = `
    const { DuckDBInstance } = await import(${JSON.stringify(duckdb)});
    const instance = await DuckDBInstance.create(${JSON.stringify(file)}, { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    const rows = (await connection.runAndReadAll(${JSON.stringify(sql)})).getRowObjectsJS();
    process.stdout.write(JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? Number(v) : v)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd });
  return JSON.parse(stdout);
}

function parquetFiles(path: string, table: string): string[] {
  const folder = join(coldFolderOf(path), table);
  return existsSync(folder) ? readdirSync(folder).sort() : [];
}

/** A warehouse filled (then `also` done with it, closed): its path and its tables' hashes once filled. */
async function filled(
  prefix: string,
  also: (wh: Warehouse) => Promise<void> = async () => undefined,
): Promise<{ path: string; before: Record<string, unknown> }> {
  const path = join(tempDir(prefix), 'w.duckdb');
  const wh = await open(path);
  try {
    await fill(wh);
    const before = await hashes((sql) => wh.all(sql));
    await also(wh);
    return { path, before };
  } finally {
    await wh.close();
  }
}

/**
 * A filled warehouse whose publish, in a child process, is killed (SIGKILL) at the fault point
 * `at`: nothing published. Returns its path and its tables' hashes before.
 */
async function publishKilledAt(at: string): Promise<{ path: string; before: Record<string, unknown> }> {
  const { path, before } = await filled('efsync-cold-kill-');
  const child = startChild(['writer', path, '0', 'test', 'kill', String(HOT_WINDOW), String(NOW)], {
    env: { EFSYNC_FAULT_POINT: at },
  });
  expect((await child.next()).ready).toBe(true);
  child.process.stdin!.write(`${JSON.stringify({ publish: true })}\n`);
  await child.exited;
  expect(child.process.signalCode).toBe('SIGKILL');
  expect(existsSync(path)).toBe(false); // nothing published
  return { path, before };
}

describe('the cold store', () => {
  it('moves every closed day to one Parquet file per table and day at publish, read back equal', async () => {
    const path = join(tempDir('efsync-cold-'), 'w.duckdb');
    const wh = await open(path);
    try {
      await fill(wh);
      const before = await hashes((sql) => wh.all(sql));
      await wh.publish();

      const [{ oldest }] = await wh.all<{ oldest: number }>(
        'SELECT min(epoch_ms(valid_time)) AS oldest FROM forecasts',
      );
      expect(Number(oldest)).toBe(CUTOFF);
      const files = await wh.all<{ table_name: string; days: bigint }>(
        'SELECT table_name, count(DISTINCT day) AS days FROM cold_files GROUP BY ALL ORDER BY ALL',
      );
      const closedDays = (CUTOFF - START) / DAY;
      expect(files.map((f) => [f.table_name, Number(f.days)])).toEqual(TABLES.toSorted().map((t) => [t, closedDays]));
      expect(parquetFiles(path, 'forecasts')).toHaveLength(closedDays);
      // inside efsync, hot and cold together through history()
      expect(await historyHashes(wh)).toEqual(before);
      // an analyst, read-only, from another working directory: the same tables, every row
      const elsewhere = tempDir('efsync-cold-cwd-');
      expect(await hashes((sql) => readFrom(elsewhere, path, sql))).toEqual(before);
      const columns = await readFrom(
        elsewhere,
        path,
        `SELECT table_name, column_name, data_type, comment FROM duckdb_columns() WHERE table_name = 'forecasts' ORDER BY column_index`,
      );
      expect(columns.map((c) => c.column_name)).toEqual([
        'site_id',
        'model_name',
        'model_version',
        'update_time',
        'valid_time',
        'forecast',
        'capacity',
      ]);
      expect(columns.every((c) => typeof c.comment === 'string' && c.comment.length > 0)).toBe(true);
      // the analyst views read the series views
      const [latest] = await query<{ n: bigint }>(path, 'SELECT count(*) AS n FROM forecast_latest');
      expect(Number(latest.n)).toBe(2 * 14 * 24);
    } finally {
      await wh.close();
    }
  });

  it('keeps the same hot rows in the published file at a deep history as at a shallow one', async () => {
    const hot: number[] = [];
    for (const days of [7, 30]) {
      const path = join(tempDir('efsync-cold-depth-'), 'w.duckdb');
      const wh = await open(path, START + days * DAY);
      try {
        await fill(wh, days);
        await wh.publish();
      } finally {
        await wh.close();
      }
      const [{ n }] = await query<{ n: bigint }>(
        path,
        `SELECT (SELECT count(*) FROM forecasts_hot) + (SELECT count(*) FROM model_outputs_hot)
           + (SELECT count(*) FROM actuals_hot) + (SELECT count(*) FROM actual_revisions_hot) AS n`,
      );
      hot.push(Number(n));
    }
    expect(hot[1]).toBe(hot[0]);
  });

  it('merges late rows into a new generation of their day: a vintage once, the newest actual', async () => {
    const path = join(tempDir('efsync-cold-late-'), 'w.duckdb');
    const wh = await open(path);
    try {
      await fill(wh);
      await wh.publish();
      const day = START + 2 * DAY;
      const at = `make_timestamptz(${day + 3 * 3_600_000}::BIGINT * 1000)`;
      // the same vintage again (a backfill re-read), a new vintage, and a revised actual
      await wh.run(`INSERT INTO forecasts SELECT * FROM ${await wh.cold.history('forecasts')}
        WHERE valid_time = ${at} AND site_id = 'site-0'`);
      await wh.run(`INSERT INTO forecasts VALUES ('site-0', 'm', 1, ${at} - INTERVAL 30 MINUTE, ${at}, 9.5, 100)`);
      await wh.run(`INSERT INTO actuals VALUES ('site-0', ${at}, 42.0, ${at}, ${at})`);
      // before the publish merges it, what a score reads of hot and cold has the revision alone
      const before = await wh.cold.withHistory(START, () =>
        wh.all<{ value: number; n: bigint }>(
          `SELECT any_value(value) AS value, count(*) AS n FROM actuals WHERE site_id = 'site-0' AND valid_time = ${at}`,
        ),
      );
      expect(before.map((a) => [a.value, Number(a.n)])).toEqual([[42, 1]]);
      await wh.publish();

      const generations = await wh.all<{ table_name: string; generation: number }>(
        `SELECT table_name, generation FROM cold_files WHERE day = DATE '2026-01-03' AND superseded_at IS NULL ORDER BY ALL`,
      );
      expect(generations.map((g) => [g.table_name, g.generation])).toEqual([
        ['actual_revisions', 1],
        ['actuals', 2],
        ['forecasts', 2],
        ['model_outputs', 1],
      ]);
      const vintages = await query<{ n: bigint; distinct_keys: bigint }>(
        path,
        `SELECT count(*) AS n, count(DISTINCT (update_time, valid_time)) AS distinct_keys FROM forecasts
         WHERE site_id = 'site-0' AND valid_time = ${at}`,
      );
      expect(vintages.map((v) => [Number(v.n), Number(v.distinct_keys)])).toEqual([[4, 4]]);
      const actual = await query<{ value: number; n: bigint }>(
        path,
        `SELECT any_value(value) AS value, count(*) AS n FROM actuals WHERE site_id = 'site-0' AND valid_time = ${at}`,
      );
      expect(actual.map((a) => [a.value, Number(a.n)])).toEqual([[42, 1]]);
    } finally {
      await wh.close();
    }
  });

  it('thins one closed day for retention, and deletes the superseded file only after the grace', async () => {
    const path = join(tempDir('efsync-cold-thin-'), 'w.duckdb');
    const wh = await open(path);
    try {
      await fill(wh);
      await wh.publish();
      const before = parquetFiles(path, 'forecasts').filter((f) => f.startsWith('2026-01-02.'));
      // keep the last vintage per valid time (a correlated subquery over the day's rows)
      const thinned = await wh.cold.rewritePartition(
        'forecasts',
        '2026-01-02',
        `update_time = (SELECT max(f.update_time) FROM forecasts f
           WHERE f.site_id = forecasts.site_id AND f.valid_time = forecasts.valid_time)`,
        NOW,
      );
      expect(thinned).toEqual({ kept: 2 * 24, removed: 2 * 24 * 2 });
      expect(await wh.cold.rewritePartition('forecasts', '2026-01-02', 'true', NOW)).toEqual({ kept: 48, removed: 0 });
      await wh.publish();
      const [{ n }] = await query<{ n: bigint }>(
        path,
        `SELECT count(*) AS n FROM forecasts WHERE valid_time >= TIMESTAMPTZ '2026-01-02 00:00:00+00:00'
           AND valid_time < TIMESTAMPTZ '2026-01-03 00:00:00+00:00'`,
      );
      expect(Number(n)).toBe(48);
      // superseded, within the grace: the old file is still there for readers of older snapshots
      expect(parquetFiles(path, 'forecasts')).toEqual(expect.arrayContaining(before));
      expect(await wh.cold.collectGarbage(NOW + 2 * DAY, DAY)).toBe(1);
      expect(parquetFiles(path, 'forecasts')).not.toEqual(expect.arrayContaining(before));
      expect(
        Number(
          (await wh.all<{ n: bigint }>('SELECT count(*) AS n FROM cold_files WHERE superseded_at IS NOT NULL'))[0].n,
        ),
      ).toBe(0);
    } finally {
      await wh.close();
    }
  });

  it('says which field is wrong when asked to thin a table that does not go cold or a malformed day', async () => {
    const path = join(tempDir('efsync-cold-bad-'), 'w.duckdb');
    const wh = await open(path);
    try {
      await expect(wh.cold.rewritePartition('sites', '2026-01-02', 'true', NOW)).rejects.toThrow(
        /table sites is not one of forecasts/,
      );
      await expect(wh.cold.rewritePartition('forecasts', '2026-1-2', 'true', NOW)).rejects.toThrow(
        /day 2026-1-2: expected YYYY-MM-DD/,
      );
    } finally {
      await wh.close();
    }
  });

  it('a publish killed after a cold file is written, before its commit, leaves a warehouse the next publish completes', async () => {
    const { path, before } = await publishKilledAt('cold-write:3');
    expect(parquetFiles(path, 'forecasts')).toHaveLength(3); // the third one named by no row

    const again = await open(path);
    try {
      // the first chunk of days commits as one: none of its files is named yet
      expect(Number((await again.all<{ n: bigint }>('SELECT count(*) AS n FROM cold_files'))[0].n)).toBe(0);
      await again.publish();
      expect(parquetFiles(path, 'forecasts')).toHaveLength((CUTOFF - START) / DAY);
    } finally {
      await again.close();
    }
    expect(await hashes((sql) => query(path, sql))).toEqual(before);
  });

  it('a publish killed while it rebuilds a hot table without its moved days has the move completed at the next open, the same rows published', async () => {
    const { path, before } = await publishKilledAt('cold-rebuild');
    const again = await open(path);
    try {
      // the move is whole: its days in their files, only the days after the cutoff hot
      const [{ hot, oldest }] = await again.all<{ hot: bigint; oldest: number }>(
        'SELECT count(*) AS hot, min(epoch_ms(valid_time)) AS oldest FROM forecasts',
      );
      expect(Number(hot)).toBeGreaterThan(0);
      expect(Number(oldest)).toBe(CUTOFF);
      await again.publish();
    } finally {
      await again.close();
    }
    expect(await hashes((sql) => query(path, sql))).toEqual(before);
  });

  it('a publish killed with its move recorded pending, the hot rows not yet deleted, is completed when the writer next opens', async () => {
    const { path, before } = await publishKilledAt('cold-pending');
    const days = (CUTOFF - START) / DAY;
    const again = await open(path);
    try {
      // the move is whole: its files current, none pending, and their days gone from the hot table
      const [files] = await again.all<{ current: bigint; pending: bigint }>(
        `SELECT count(*) FILTER (WHERE superseded_at IS NULL AND NOT pending) AS current, count(*) FILTER (WHERE pending) AS pending
         FROM cold_files WHERE table_name = 'forecasts'`,
      );
      expect([Number(files.current), Number(files.pending)]).toEqual([days, 0]);
      const [{ hot }] = await again.all<{ hot: bigint }>(
        `SELECT count(*) AS hot FROM forecasts WHERE valid_time < ${instantLiteral(CUTOFF)}`,
      );
      expect(Number(hot)).toBe(0);
      await again.publish();
      expect(parquetFiles(path, 'forecasts')).toHaveLength(days);
    } finally {
      await again.close();
    }
    expect(await hashes((sql) => query(path, sql))).toEqual(before);
  });

  it('moves days whose rows lie in every vector of a large hot table inside a small memory limit', async () => {
    // A ledger as a score writes it: each site's pairs together, their days interleaved. A
    // DELETE of a day touches every vector of the table, and DuckDB holds 16 KB for each until a
    // checkpoint: 28 MB for each day of these 3.6 M rows, the warehouse's 64 MB gone by the third.
    const path = join(tempDir('efsync-cold-spread-'), 'w.duckdb');
    const rows = 3_600_000;
    const start = `make_timestamptz(${START}::BIGINT * 1000)`;
    const filling = await open(path);
    try {
      await filling.run(`INSERT INTO accuracy_pairs (pid, subject, site_id, valid_time, group_time, forecast, actual)
        SELECT i, 'forecast', 'S' || lpad((i // 36000)::VARCHAR, 3, '0'), ${start} + to_hours((i % 12) * 24 + i % 24),
          ${start} + to_hours((i % 12) * 24 + i % 24), i % 1000, i % 997
        FROM range(${rows}) r(i)`);
    } finally {
      await filling.close();
    }
    const wh = await Warehouse.open({ path, memoryLimit: '64MB', hotWindowMs: HOT_WINDOW, now: () => NOW });
    try {
      const moved = await wh.cold.moveClosedDays(CUTOFF, NOW);
      expect(moved.map((m) => m.day)).toHaveLength((CUTOFF - START) / DAY);
      const [{ hot }] = await wh.all<{ hot: bigint }>('SELECT count(*) AS hot FROM accuracy_pairs');
      const [{ all }] = await wh.all<{ all: bigint }>(
        `SELECT count(*) AS all FROM ${await wh.cold.history('accuracy_pairs')}`,
      );
      expect(Number(hot)).toBe((rows * (12 - (CUTOFF - START) / DAY)) / 12);
      expect(Number(all)).toBe(rows);
    } finally {
      await wh.close();
    }
  }, 300_000);

  it('writes and thins a day of more rows than one sort takes a slice of sites at a time, in key order, inside 64 MB', async () => {
    // 1.2 M pairs of one closed day, 300 sites inserted interleaved: three slices of sites, each
    // sorted alone, make one file in the order of its key (site, valid time, pid)
    const path = join(tempDir('efsync-cold-sliced-'), 'w.duckdb');
    const rows = 1_200_000;
    const day = START + 2 * DAY;
    const filling = await open(path);
    try {
      await filling.run(`INSERT INTO accuracy_pairs (pid, subject, site_id, valid_time, group_time, forecast, actual)
        SELECT i, 'forecast', 'S' || lpad((i % 300)::VARCHAR, 3, '0'), make_timestamptz(${day}::BIGINT * 1000) + to_minutes(i % 1440),
          make_timestamptz(${day}::BIGINT * 1000), i % 1000, i % 997
        FROM range(${rows}) r(i) ORDER BY random()`);
    } finally {
      await filling.close();
    }
    const inOrder = async (wh: Warehouse) => {
      const [file] = await wh.all<{ file: string }>(
        `SELECT file FROM cold_files WHERE table_name = 'accuracy_pairs' AND superseded_at IS NULL`,
      );
      const [row] = await wh.all<{ n: bigint; unordered: bigint }>(
        `SELECT count(*) AS n, count(*) FILTER (WHERE ps IS NOT NULL AND (site_id, valid_time, pid) < (ps, pv, pp)) AS unordered FROM (
           SELECT site_id, valid_time, pid, lag(site_id) OVER w AS ps, lag(valid_time) OVER w AS pv, lag(pid) OVER w AS pp
           FROM read_parquet('${join(coldFolderOf(path), file.file)}', file_row_number = true)
           WINDOW w AS (ORDER BY file_row_number))`,
      );
      return [Number(row.n), Number(row.unordered)];
    };
    const wh = await Warehouse.open({ path, memoryLimit: '64MB', hotWindowMs: HOT_WINDOW, now: () => NOW });
    try {
      await wh.cold.moveClosedDays(CUTOFF, NOW);
      expect(await inOrder(wh)).toEqual([rows, 0]);
      const slices: string[] = [];
      const thinned = await wh.cold.rewritePartition(
        'accuracy_pairs',
        new Date(day).toISOString().slice(0, 10),
        'pid % 3 <> 0',
        NOW,
        async (of) => {
          slices.push(of);
        },
      );
      expect(slices).toHaveLength(3);
      expect(thinned).toEqual({ kept: rows - rows / 3, removed: rows / 3 });
      expect(await inOrder(wh)).toEqual([rows - rows / 3, 0]);
      const [{ n }] = await wh.all<{ n: bigint }>(
        `SELECT count(DISTINCT pid) AS n FROM ${await wh.cold.history('accuracy_pairs')} WHERE pid % 3 <> 0`,
      );
      expect(Number(n)).toBe(rows - rows / 3);
    } finally {
      await wh.close();
    }
  }, 300_000);

  it('a move that runs out of memory goes again in halves, completing what it left pending, and loses nothing', async () => {
    const path = join(tempDir('efsync-cold-split-'), 'w.duckdb');
    const wh = await open(path);
    try {
      await fill(wh);
      const before = await hashes((sql) => wh.all(sql));
      // DuckDB's refusal, once each: a chunk's sort of a day from its copy of several days, then the
      // rebuild of the hot table without the days whose files are pending (which deletes them instead)
      const refuse = [/^INSERT INTO cold_sorted .* FROM cold_move/s, /^INSERT INTO .* FROM "forecasts_before_move"/s];
      const refusing = (sql: string) => {
        const at = refuse.findIndex((pattern) => pattern.test(sql.trim()));
        if (at < 0) return;
        refuse.splice(at, 1);
        throw new Error('Out of Memory Error: failed to allocate data of size 1.0 MiB (injected)');
      };
      const db = Object.assign(Object.create(wh) as Warehouse, {
        changed: (sql: string, params?: (string | number | null)[]) => {
          refusing(sql);
          return wh.changed(sql, params);
        },
        run: (sql: string, params?: (string | number | null)[]) => {
          refusing(sql);
          return wh.run(sql, params);
        },
      });
      await new ColdStore(db, coldFolderOf(path)).moveClosedDays(CUTOFF, NOW);
      expect(refuse).toEqual([]);
      const [{ hot, pending }] = await wh.all<{ hot: bigint; pending: bigint }>(
        `SELECT (SELECT count(*) FROM forecasts WHERE valid_time < ${instantLiteral(CUTOFF)}) AS hot,
           (SELECT count(*) FROM cold_files WHERE pending) AS pending`,
      );
      expect([Number(hot), Number(pending)]).toEqual([0, 0]);
      await wh.publish();
      expect(parquetFiles(path, 'forecasts').length).toBeGreaterThanOrEqual((CUTOFF - START) / DAY);
      expect(await hashes((sql) => query(path, sql))).toEqual(before);
    } finally {
      await wh.close();
    }
  });

  it('a reader holding an older snapshot keeps reading it whole while retention thins a day', async () => {
    const path = join(tempDir('efsync-cold-reader-'), 'w.duckdb');
    const wh = await open(path);
    try {
      await fill(wh);
      await wh.publish();
      const reader = await startReader(path, 'read_only');
      try {
        const all = 'SELECT * FROM forecasts';
        const rows = await count(reader, all);
        await wh.cold.rewritePartition('forecasts', '2026-01-02', 'false', NOW);
        await wh.publish();
        expect(await count(reader, all)).toBe(rows);
        const [{ n }] = await query<{ n: bigint }>(path, 'SELECT count(*) AS n FROM forecasts');
        expect(Number(n)).toBe(rows - 2 * 24 * 3);
      } finally {
        await reader.close();
      }
    } finally {
      await wh.close();
    }
  });

  it('a writer file rebuilt from the published snapshot gets its tables back, its cold days still there', async () => {
    const { path, before } = await filled('efsync-cold-rebuild-', (wh) => wh.publish());
    rmSync(writerPathOf(path));
    const rebuilt = await open(path);
    try {
      const kinds = await rebuilt.all<{ name: string }>(
        `SELECT table_name AS name FROM duckdb_tables() WHERE table_name IN ('forecasts', 'forecasts_hot')
         UNION ALL SELECT view_name FROM duckdb_views() WHERE view_name IN ('forecasts', 'forecasts_hot')`,
      );
      expect(kinds.map((k) => k.name)).toEqual(['forecasts']);
      const sources = Object.fromEntries(
        await Promise.all(TABLES.map(async (t) => [t, await rebuilt.cold.history(t)])),
      );
      expect(
        await hashes(
          (sql) => rebuilt.all(sql),
          (t) => sources[t],
        ),
      ).toEqual(before);
      await rebuilt.publish();
    } finally {
      await rebuilt.close();
    }
    expect(await hashes((sql) => query(path, sql))).toEqual(before);
  });

  /** A warehouse of 60 days whose moves left its writer file mostly free (unpublished: a publish compacts it). */
  async function mostlyFreeWriter(prefix: string): Promise<{ path: string; writer: string }> {
    const path = join(tempDir(prefix), 'w.duckdb');
    const wh = await open(path, START + 60 * DAY);
    try {
      await fill(wh, 60, 100);
      await wh.checkpoint();
      await wh.moveClosedDays();
      await wh.checkpoint();
    } finally {
      await wh.close();
    }
    return { path, writer: writerPathOf(path) };
  }

  it('a publish compacts a writer file its moves left mostly free, then copies it: every row kept', async () => {
    const path = join(tempDir('efsync-cold-publish-compact-'), 'w.duckdb');
    const wh = await open(path, START + 60 * DAY);
    let before: Awaited<ReturnType<typeof hashes>> | undefined;
    try {
      await fill(wh, 60, 100);
      await wh.checkpoint();
      before = await hashes((sql) => wh.all(sql));
      const filled = statSync(wh.writerPath).size;
      await wh.publish();
      expect(statSync(wh.writerPath).size).toBeLessThan(filled / 2);
      expect(statSync(path).size).toBeLessThan(filled / 2);
      // the writer goes on after the publish on the compacted file
      await wh.run('CHECKPOINT');
      expect(await historyHashes(wh)).toEqual(before);
    } finally {
      await wh.close();
    }
    expect(await hashes((sql) => query(path, sql))).toEqual(before);
  }, 300_000);

  it('compacts a writer file the moves left mostly free, keeping every row, comment, view and macro', async () => {
    const { path, writer } = await mostlyFreeWriter('efsync-cold-compact-');
    const comments = `SELECT table_name, column_name, comment FROM duckdb_columns() ORDER BY ALL`;
    const views = 'SELECT view_name, sql, comment FROM duckdb_views() WHERE NOT internal ORDER BY ALL';
    const macros = `SELECT function_name, macro_definition FROM duckdb_functions()
      WHERE function_type IN ('macro', 'table_macro') AND NOT internal ORDER BY ALL`;
    const describe = async () => {
      const opened = await openWriterFile(path, writer, { compactAboveBytes: Number.MAX_SAFE_INTEGER });
      try {
        const read = async (sql: string) => (await opened.connection.runAndReadAll(sql)).getRowObjectsJS();
        return {
          comments: await read(comments),
          views: await read(views),
          macros: await read(macros),
          rows: await hashes(read),
        };
      } finally {
        opened.close();
      }
    };
    const before = await describe();
    const size = statSync(writer).size;
    const compacted = await openWriterFile(path, writer, { compactAboveBytes: 0 });
    compacted.close();
    expect(statSync(writer).size).toBeLessThan(size / 2);
    expect(await describe()).toEqual(before);
  });

  it('a compaction that runs out of memory leaves the writer file as it was, and it opens', async () => {
    const { path, writer } = await mostlyFreeWriter('efsync-cold-compact-oom-');
    const size = statSync(writer).size;
    // at 1 MB the open reads the file, the draft's copy of it runs out of memory
    const opened = await openWriterFile(path, writer, { compactAboveBytes: 0, memoryLimit: '1MB' });
    try {
      expect(opened.compactionSkipped).toMatch(
        /^(Out of Memory Error|TransactionContext Error: Failed to commit: failed to)/,
      );
      const [[n]] = (await opened.connection.runAndReadAll('SELECT count(*) FROM forecasts')).getRows();
      expect(Number(n)).toBeGreaterThan(0);
    } finally {
      opened.close();
    }
    expect(statSync(writer).size).toBe(size);
    expect(readdirSync(dirname(writer)).filter((name) => name.includes('.draft-'))).toEqual([]);
  });

  it('a sync run with a hot window of a day publishes the same data as one keeping every day hot', async () => {
    const emu = await emulator();
    try {
      const published: Record<string, string>[] = [];
      for (const hotWindow of [1000 * DAY, DAY]) {
        const dir = tempDir('efsync-cold-sync-');
        const config = testConfig({ dir, url: emu.url, sync: { initial_history: '3d' } });
        const withWindow = { ...config, warehouse: { ...config.warehouse, hot_window: hotWindow } };
        expect((await runSync(withWindow)).exitCode).toBe(0);
        const [{ n }] = await query<{ n: bigint }>(config.warehouse.path, 'SELECT count(*) AS n FROM cold_files');
        expect(Number(n) > 0).toBe(hotWindow === DAY);
        published.push(await tableHashes(config.warehouse.path));
        // the next run continues from the published state, cold days and all
        expect((await runSync(withWindow, {}, SYNC_NOW + 3_600_000)).exitCode).toBe(0);
      }
      expect(published[1]).toEqual(published[0]);
    } finally {
      await emu.close();
    }
  });
});
