// Every command as a user meets its failures: a bad flag, a missing file, a path that cannot be
// written, a service that does not answer, and one that answers what the interface does not
// allow. Each ends with the documented exit code (docs/runner.md, "Exit codes of every command")
// and a readable line (on stderr, or for a run in its summary on stdout), never a stack trace
// (that is in the JSON log, or on the terminal with --debug).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { tempDir } from './sync-support.js';

vi.setConfig({ testTimeout: 600_000, hookTimeout: 60_000 });

let dir: string;
let db: string;
let malformed: Server;
/** The address of a service that refuses connections, and of one that answers nonsense. */
const UNREACHABLE_URL = 'http://127.0.0.1:9';
let malformedUrl: string;

function serviceConfig(name: string, url: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    JSON.stringify({
      service: { base_url: url, retries: { attempts: 0 }, timeouts: { connect: '2s', headers: '5s', body: '5s' } },
      warehouse: { path: join(dir, `${name}.duckdb`), lock_wait: '0s' },
    }),
  );
  return file;
}

beforeAll(async () => {
  dir = tempDir('efsync-cli-boundary-');
  db = join(dir, 'published.duckdb');
  const warehouse = await Warehouse.open({ path: db });
  await warehouse.publish();
  await warehouse.close();
  malformed = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"unexpected": "body"}'),
  );
  await new Promise<void>((resolve) => malformed.listen(0, '127.0.0.1', resolve));
  malformedUrl = `http://127.0.0.1:${(malformed.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => malformed?.close(resolve));
});

interface Case {
  name: string;
  args: () => string[];
  exit: number;
}

const MISSING = '/nonexistent/efsync.yaml';
const UNWRITABLE_DB = '/dev/null/efsync/warehouse.duckdb';
const ENV = { EFSYNC_LOG_LEVEL: 'warn', EFSYNC_API_KEY: 'cli-boundary-key', EFSYNC_BASE_URL: '' };

const cases: Case[] = [
  // a bad flag: commander's own error, exit 2 for every command
  ...[
    ['demo'],
    ['sync'],
    ['run', 'nightly'],
    ['schedule'],
    ['status'],
    ['capacity', 'check'],
    ['capacity', 'plan'],
    ['capacity', 'apply'],
    ['accuracy'],
    ['retention'],
    ['sql', 'SELECT 1'],
    ['export', '--out', 'x.arrow'],
    ['emulator'],
    ['config', 'schema'],
    ['config', 'check'],
    ['lake', 'init', '--lake', '/nonexistent/lake'],
    ['lake', 'views', '--out', 'v.duckdb'],
    ['lake', 'compact'],
    ['lake', 'vacuum'],
  ].map((command) => ({ name: `${command.join(' ')} --bogus`, args: () => [...command, '--bogus'], exit: EXIT.usage })),
  // a missing file
  ...[
    ['demo'],
    ['sync'],
    ['run', 'sync-sites'],
    ['schedule'],
    ['status'],
    ['capacity', 'plan'],
    ['capacity', 'apply'],
    ['accuracy'],
    ['retention'],
    ['config', 'check'],
  ].map((command) => ({
    name: `${command.join(' ')} --config (missing)`,
    args: () => [...command, '--config', MISSING],
    exit: EXIT.config,
  })),
  {
    name: 'capacity check --dir (missing)',
    args: () => ['capacity', 'check', '--dir', '/nonexistent/capacity'],
    exit: EXIT.config,
  },
  {
    name: 'accuracy --pairs (missing)',
    args: () => ['accuracy', '--pairs', '/nonexistent/pairs.csv'],
    exit: EXIT.config,
  },
  ...[
    ['lake', 'views', '--out', '/tmp/never-written.duckdb'],
    ['lake', 'compact'],
    ['lake', 'vacuum'],
  ].map((command) => ({
    name: `${command.slice(0, 2).join(' ')} --lake (missing)`,
    args: () => [...command, '--lake', '/nonexistent/lake'],
    exit: EXIT.config,
  })),
  { name: 'sql --db (missing)', args: () => ['sql', '--db', '/nonexistent/w.duckdb', 'SELECT 1'], exit: EXIT.config },
  {
    name: 'export --db (missing)',
    args: () => ['export', '--db', '/nonexistent/w.duckdb', '--table', 'runs', '--out', join(dir, 'x.arrow')],
    exit: EXIT.config,
  },
  // a path that cannot be written
  ...[['demo'], ['sync'], ['run', 'sync-sites'], ['schedule'], ['accuracy'], ['retention'], ['capacity', 'apply']].map(
    (command) => ({
      name: `${command.join(' ')} --db (unwritable)`,
      args: () => [...command, '--db', UNWRITABLE_DB],
      exit: EXIT.config,
    }),
  ),
  {
    name: 'accuracy --report (unwritable)',
    args: () => ['accuracy', '--db', join(dir, 'scored.duckdb'), '--report', '/dev/null/r.html'],
    exit: EXIT.config,
  },
  {
    name: 'export --out (unwritable)',
    args: () => ['export', '--db', db, '--table', 'runs', '--out', '/dev/null/x/runs.arrow'],
    exit: EXIT.config,
  },
  // the service does not answer, or answers what the interface does not allow
  ...[['demo'], ['sync'], ['run', 'sync-sites'], ['capacity', 'plan'], ['capacity', 'apply']].flatMap((command) => [
    {
      name: `${command.join(' ')} (service unreachable)`,
      // each case its own warehouse: cases run at once, and a shared one would make them busy (exit 3)
      args: () => [...command, '--config', serviceConfig(`unreachable-${command.join('-')}`, UNREACHABLE_URL)],
      exit: EXIT.service,
    },
    {
      name: `${command.join(' ')} (malformed answer)`,
      args: () => [...command, '--config', serviceConfig(`malformed-${command.join('-')}`, malformedUrl)],
      exit: EXIT.service,
    },
  ]),
];

/** What a user reads: stdout and stderr without the JSON log lines. */
function readable(text: string): string {
  return text
    .split('\n')
    .filter((line) => !line.startsWith('{'))
    .join('\n');
}

describe('every command, every way in which it can fail', () => {
  it('ends with the documented exit code and a readable line, never a stack trace', async () => {
    const limit = pLimit(3);
    const results = await Promise.all(
      cases.map((c) =>
        limit(async () => {
          const child = startChild([...CLI, ...c.args()], ENV);
          const killer = setTimeout(() => child.process.kill('SIGKILL'), 120_000);
          const { code, stdout, stderr } = await child.exit;
          clearTimeout(killer);
          return { ...c, code, stdout, stderr };
        }),
      ),
    );
    const wrong = results
      .filter((r) => {
        const text = readable(`${r.stdout}\n${r.stderr}`);
        return (
          r.code !== r.exit ||
          /^\s+at .+:\d+:\d+\)?$/m.test(text) ||
          text.includes('node:internal') ||
          text.trim() === ''
        );
      })
      .map((r) => `${r.name}: exit ${r.code} (want ${r.exit})\n${readable(`${r.stdout}\n${r.stderr}`).trim()}`);
    expect(wrong).toEqual([]);
  });

  it('names the flag of a path that cannot be written, and shows the stack with --debug only', async () => {
    const plain = await startChild([...CLI, 'sync', '--db', UNWRITABLE_DB], ENV).exit;
    expect(plain.code).toBe(EXIT.config);
    expect(plain.stderr).toContain(
      `efsync sync: /dev/null/efsync: cannot mkdir: a part of the path is not a folder (ENOTDIR); check --db ${UNWRITABLE_DB}`,
    );
    const out = '/dev/null/x/runs.arrow';
    const exported = await startChild([...CLI, 'export', '--db', db, '--table', 'runs', '--out', out], ENV).exit;
    expect(exported.code).toBe(EXIT.config);
    expect(exported.stderr).toContain(`; check --out ${out}`);
    const debug = await startChild([...CLI, 'sync', '--db', UNWRITABLE_DB, '--debug'], ENV).exit;
    expect(debug.code).toBe(EXIT.config);
    expect(debug.stderr).toMatch(/^\s+at .+/m);
  });

  it('names the lake flags: a bad --retain, a lake not given, a lake that is not there', async () => {
    const noLake = serviceConfig('no-lake', UNREACHABLE_URL);
    const [badRetain, notGiven, initNotGiven, notThere] = await Promise.all(
      [
        ['lake', 'vacuum', '--lake', '/nonexistent/lake', '--retain', 'soon'],
        ['lake', 'vacuum', '--config', noLake],
        ['lake', 'init'],
        ['lake', 'vacuum', '--lake', '/nonexistent/lake'],
      ].map((args) => startChild([...CLI, ...args], ENV).exit),
    );
    expect(badRetain.code).toBe(EXIT.usage);
    expect(badRetain.stderr).toContain('--retain: not a duration');
    expect(notGiven.code).toBe(EXIT.usage);
    expect(notGiven.stderr).toContain('no lake: pass --lake PATH or set lake in the config');
    expect(initNotGiven.code).toBe(EXIT.usage);
    expect(initNotGiven.stderr).toContain("required option '--lake <path>' not specified");
    expect(notThere.code).toBe(EXIT.config);
    expect(notThere.stderr).toContain('no lake at /nonexistent/lake');
    expect(notThere.stderr).toContain('check --lake');
  });
});
