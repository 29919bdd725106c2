// From a fresh clone: `efsync demo` into a warehouse of its own (the report beside it), then every
// query of the README and of the demo's tour through `efsync sql`, and `efsync accuracy` as a run
// in the ledger.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { EXAMPLE_QUERIES } from '../src/cli/demo.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { tempDir } from './sync-support.js';

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
