// Commands as a user meets their failures (test/cli-boundary-support.ts): a seeded sample of the
// failing commands (cli-boundary.deep.test.ts runs them all), and what their lines name.
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/outcome.js';
import {
  describeCommandFailures,
  ENV,
  published,
  serviceConfig,
  UNREACHABLE_URL,
  UNWRITABLE_DB,
} from './cli-boundary-support.js';
import { CLI, startChild } from './fixtures/runner-child.js';
import { sample } from './seed.js';

describeCommandFailures((all, label) => sample(all, 8, label));

describe('what the lines name', () => {
  it('names the flag of a path that cannot be written, and shows the stack with --debug only', async () => {
    const plain = await startChild([...CLI, 'sync', '--db', UNWRITABLE_DB], ENV).exit;
    expect(plain.code).toBe(EXIT.config);
    expect(plain.stderr).toContain(
      `efsync sync: /dev/null/efsync: cannot mkdir: a part of the path is not a folder (ENOTDIR); check --db ${UNWRITABLE_DB}`,
    );
    const out = '/dev/null/x/runs.arrow';
    const exported = await startChild([...CLI, 'export', '--db', published.db, '--table', 'runs', '--out', out], ENV)
      .exit;
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
