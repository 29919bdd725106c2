// Every command as a user meets its failures: a bad flag, a missing file, a path that cannot be
// written, a service that does not answer, and one that answers what the interface does not
// allow. Each ends with the documented exit code (docs/runner.md, "Exit codes of every command")
// and a readable line (on stderr, or for a run in its summary on stdout), never a stack trace
// (that is in the JSON log, or on the terminal with --debug). The deep tier
// (cli-boundary.deep.test.ts) runs every case; the fast tier (cli-boundary.test.ts) a seeded
// sample of them (test/seed.ts), and the tests of what the lines say.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { tempDir } from './sync-support.js';

let dir: string;
let malformed: Server;
/** The address of a service that refuses connections, and of one that answers nonsense. */
export const UNREACHABLE_URL = 'http://127.0.0.1:9';
let malformedUrl: string;
/** A published, empty warehouse, made before the tests. */
export const published = { db: '' };

/** A config file naming the service at `url`, with no retries and a warehouse of its own. */
export function serviceConfig(name: string, url: string): string {
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

async function setUp(): Promise<void> {
  dir = tempDir('efsync-cli-boundary-');
  published.db = join(dir, 'published.duckdb');
  const warehouse = await Warehouse.open({ path: published.db });
  await warehouse.publish();
  await warehouse.close();
  malformed = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"unexpected": "body"}'),
  );
  await new Promise<void>((resolve) => malformed.listen(0, '127.0.0.1', resolve));
  malformedUrl = `http://127.0.0.1:${(malformed.address() as AddressInfo).port}`;
}

interface Case {
  name: string;
  args: () => string[];
  exit: number;
}

const MISSING = '/nonexistent/efsync.yaml';
export const UNWRITABLE_DB = '/dev/null/efsync/warehouse.duckdb';
export const ENV = { EFSYNC_LOG_LEVEL: 'warn', EFSYNC_API_KEY: 'cli-boundary-key', EFSYNC_BASE_URL: '' };

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
    args: () => ['export', '--db', published.db, '--table', 'runs', '--out', '/dev/null/x/runs.arrow'],
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

/**
 * The failing commands' test, run on the cases `choose` picks of all of them (`label` names the
 * list, for a seeded draw), with the published warehouse and the two services it needs.
 */
export function describeCommandFailures(choose: <T>(all: T[], label: string) => T[]): void {
  beforeAll(setUp);
  afterAll(async () => {
    await new Promise((resolve) => malformed?.close(resolve));
  });

  describe('every command, every way in which it can fail', () => {
    it('ends with the documented exit code and a readable line, never a stack trace', async () => {
      const limit = pLimit(3);
      const results = await Promise.all(
        choose(cases, 'failing commands').map((c) =>
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
    }, 600_000);
  });
}
