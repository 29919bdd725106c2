// From a fresh clone: `efsync demo` into a warehouse of its own (the report beside it), then every
// query of the README and of the demo's tour through `efsync sql`, and `efsync accuracy` as a run
// in the ledger; last, the published folder moved and copied elsewhere answers them the same.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { EXAMPLE_QUERIES } from '../src/cli/demo.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { tempDir } from './sync-support.js';
import { needTool, titled } from './tools.js';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

const ENV = { EFSYNC_LOG_LEVEL: 'warn', EFSYNC_BASE_URL: '', EFSYNC_DB: '', EFSYNC_CONFIG: '' };
const efsync = (...args: string[]) => startChild([...CLI, ...args], ENV).exit;

let db: string;

/** The SQL statements of the README's warehouse section. */
function readmeQueries(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const blocks = [...readme.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]);
  return blocks
    .join('\n')
    .split(';')
    .map((statement) =>
      statement
        .split('\n')
        .filter((line) => !line.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter(Boolean);
}

beforeAll(async () => {
  db = join(tempDir('efsync-cli-sql-'), 'w.duckdb');
  const demo = await efsync('demo', '--db', db);
  expect(demo.code, demo.stderr).toBe(EXIT.ok);
  expect(demo.stdout).toContain(`npx efsync sql --db '${db}' 'SELECT`);
});

describe('efsync sql', () => {
  it('runs every query of the README and of the demo on the published warehouse', async () => {
    const queries = [...readmeQueries(), ...EXAMPLE_QUERIES.map(([, sql]) => sql)];
    expect(queries.length).toBeGreaterThanOrEqual(6);
    for (const sql of queries) {
      const { code, stdout, stderr } = await efsync('sql', '--db', db, sql);
      expect(code, `${sql}\n${stderr}`).toBe(EXIT.ok);
      expect(stdout).toMatch(/\(\d+ rows?\)\n$/);
    }
  });

  it('prints an aligned table, CSV or JSON, instants in ISO 8601 UTC', async () => {
    const sql = 'SELECT name, newest_actual FROM site_freshness ORDER BY name';
    const [table, csv, json] = await Promise.all([
      efsync('sql', '--db', db, sql),
      efsync('sql', '--db', db, '--csv', sql),
      efsync('sql', '--db', db, '--json', sql),
    ]);
    const rows = JSON.parse(json.stdout) as { name: string; newest_actual: string }[];
    expect(rows).toHaveLength(4);
    for (const row of rows) expect(row.newest_actual).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(csv.stdout.split('\n')[0]).toBe('name,newest_actual');
    expect(csv.stdout).toContain(`${rows[0].name},${rows[0].newest_actual}`);
    const lines = table.stdout.split('\n');
    expect(lines[0]).toMatch(/^name\s+newest_actual$/);
    expect(lines[1]).toMatch(/^-+ {2}-+$/);
    expect(lines[2].indexOf(rows[0].newest_actual)).toBe(lines[0].indexOf('newest_actual'));
  });

  it('never writes: a write is refused as a usage error naming the query', async () => {
    const { code, stderr } = await efsync('sql', '--db', db, 'DELETE FROM sites');
    expect(code).toBe(EXIT.usage);
    expect(stderr).toMatch(/efsync sql: the query failed: .*read-only/i);
    const count = await efsync('sql', '--db', db, '--json', 'SELECT count(*) AS n FROM sites');
    expect(JSON.parse(count.stdout)).toEqual([{ n: 4 }]);
  });
});

describe('efsync accuracy', () => {
  it('is a run in the ledger, and its report goes beside the warehouse', async () => {
    expect(existsSync(join(dirname(db), 'report.html'))).toBe(true); // the demo's nightly run
    const scored = await efsync('accuracy', '--db', db, '--report');
    expect(scored.code, scored.stderr).toBe(EXIT.ok);
    expect(scored.stdout).toMatch(/accuracy run \S+: ok \(exit 0\)/);
    expect(scored.stderr).toContain(`report: ${join(dirname(db), 'report.html')}`);
    const runs = await efsync(
      'sql',
      '--db',
      db,
      '--json',
      "SELECT job, status, trigger FROM runs WHERE job = 'accuracy'",
    );
    expect(JSON.parse(runs.stdout)).toEqual([{ job: 'accuracy', status: 'ok', trigger: 'manual' }]);
  });

  it('--from after --to is a usage error, and records no run', async () => {
    const { code, stderr } = await efsync('accuracy', '--db', db, '--from', '2026-11-02', '--to', '2026-11-01');
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('efsync accuracy: --from 2026-11-02 must be before --to 2026-11-01');
  });
});

/**
 * Each statement's rows through Python's duckdb, read-only, from `cwd`: an analyst's reader that
 * knows nothing of efsync. Values as text (so that any type compares; a fraction to 9 digits, as
 * a parallel sum adds in any order), rows sorted.
 */
function pythonRows(path: string, statements: string[], cwd: string, attach = false): unknown[][][] {
  const script = `
import duckdb, json, sys
path, statements, attach = json.load(sys.stdin)
if attach:
    con = duckdb.connect()
    con.execute("SET file_search_path = '" + path.rsplit('/', 1)[0] + "'")
    con.execute("ATTACH '" + path + "' AS wh (READ_ONLY)")
    con.execute("USE wh")
else:
    con = duckdb.connect(path, read_only=True)
def text(value):
    try:
        return '%.9g' % float(value) if value is not None and '.' in value else value
    except ValueError:
        return value
rows = [con.execute("SELECT COLUMNS(*)::VARCHAR FROM (" + s + ")").fetchall() for s in statements]
print(json.dumps([sorted([text(v) for v in row] for row in result) for result in rows]))
`;
  const run = spawnSync('python3', ['-c', script], {
    cwd,
    input: JSON.stringify([path, statements, attach]),
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as unknown[][][];
}

const pyduckdb = needTool('pyduckdb');

describe.skipIf(!pyduckdb)(titled('the published folder, moved and copied', 'pyduckdb', pyduckdb), () => {
  it('answers the README queries with the same rows from its new places, from another working directory', async () => {
    const folder = dirname(db);
    expect(existsSync(join(folder, 'w.cold'))).toBe(true);
    // now() in a query would move between the two reads: pinned to the newest actual.
    const [{ newest }] = JSON.parse(
      (await efsync('sql', '--db', db, '--json', 'SELECT max(valid_time) AS newest FROM actuals')).stdout,
    ) as { newest: string }[];
    const statements = [
      ...readmeQueries().map((sql) => sql.replaceAll('now()', `TIMESTAMPTZ '${newest}'`)),
      ...['forecasts', 'model_outputs', 'actuals'].map((table) => `SELECT count(*), sum(hash(t)) FROM ${table} t`),
    ];
    const before = pythonRows(db, statements, folder);
    expect(before.at(-3)?.[0]?.[0]).not.toBe('0');
    const beforeSql = await efsync('sql', '--db', db, '--json', statements.at(-3) ?? '');

    const moved = `${folder}-moved`;
    const copied = join(tempDir('efsync-cli-sql-copy-'), 'elsewhere');
    const elsewhere = tempDir('efsync-cli-sql-cwd-');
    renameSync(folder, moved);
    try {
      cpSync(moved, copied, { recursive: true });
      for (const place of [moved, copied]) {
        const path = join(place, 'w.duckdb');
        expect(pythonRows(path, statements, elsewhere), place).toEqual(before);
        const sql = await startChild([...CLI, 'sql', '--db', path, '--json', statements.at(-3) ?? ''], ENV, elsewhere)
          .exit;
        expect(sql.code, sql.stderr).toBe(EXIT.ok);
        expect(sql.stdout).toBe(beforeSql.stdout);
      }
      // An in-memory session that attaches the file finds the cold folder through its file_search_path.
      expect(pythonRows(join(copied, 'w.duckdb'), statements.slice(-3), elsewhere, true)).toEqual(before.slice(-3));
    } finally {
      renameSync(moved, folder);
    }
  });
});
