// The command as a user runs it after `npm ci`: the build (the prepare script) compiles src/ and
// jobs/ into dist/ with the SQL migrations beside them, and bin/efsync.js runs that JavaScript with
// no TypeScript compiler loaded. Every other test runs the sources (fixtures/runner-child.ts CLI).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './sync-support.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'efsync.js');
/** No service configured: the command syncs the embedded emulator's demo sites. */
const ENV = { ...process.env, EFSYNC_BASE_URL: '', EFSYNC_LOG_LEVEL: 'warn' };

beforeAll(async () => {
  await run(process.execPath, [join(ROOT, 'scripts', 'build.js')], { cwd: ROOT });
}, 120_000);

describe('the built command', () => {
  it('creates a warehouse from the copied migrations, runs a job from dist/jobs and queries it', async () => {
    expect(existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))).toBe(true);
    const db = join(tempDir(), 'warehouse.duckdb');
    const sync = await run(process.execPath, [BIN, 'run', 'sync-sites', '--db', db], { cwd: ROOT, env: ENV });
    expect(sync.stdout).toContain('sync-sites run');
    const { stdout } = await run(
      process.execPath,
      [BIN, 'sql', 'SELECT count(*) AS n FROM sites', '--json', '--db', db],
      {
        cwd: ROOT,
        env: ENV,
      },
    );
    expect(JSON.parse(stdout)).toEqual([{ n: 4 }]);
  });

  it('refuses a heap bound that is not a whole number of MB, naming the variable', async () => {
    const failed = await run(process.execPath, [BIN, '--help'], {
      cwd: ROOT,
      env: { ...ENV, EFSYNC_HEAP_MB: '1.5GB' },
    }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('EFSYNC_HEAP_MB: a whole number of MB (0: no bound), not "1.5GB"');
  });
});
