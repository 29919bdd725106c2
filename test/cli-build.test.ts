// The command as a user runs it after `npm ci`: the build (the prepare script) compiles src/ and
// jobs/ into dist/ with the SQL migrations beside them, and bin/efsync.js runs that JavaScript with
// no TypeScript compiler loaded. The build checked is the test run's own (test/built.ts, which
// builds where dist/ is stale), which the other tests' child processes run too.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from './sync-support.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'efsync.js');
const LAUNCHER = join(ROOT, 'bin', 'efsync');
/** No service configured: the command syncs the embedded emulator's demo sites. */
const ENV = { ...process.env, EFSYNC_BASE_URL: '', EFSYNC_LOG_LEVEL: 'warn' };

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

  it("prints the package's version, from any folder", async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const { stdout } = await run(process.execPath, [BIN, flag], { cwd: tempDir(), env: ENV });
      expect(stdout).toBe(`${version}\n`);
    }
  });

  it('refuses a memory budget that is not a size, naming the variable', async () => {
    const failed = await run(process.execPath, [BIN, 'status', '--db', join(tempDir(), 'w.duckdb')], {
      cwd: ROOT,
      env: { ...ENV, EFSYNC_MEMORY: '1.5' },
    }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('EFSYNC_MEMORY: not a size such as 256MB or 1GB: "1.5"');
  });

  it('bin/efsync execs node on bin/efsync.js in its own pid, glibc held to one arena unless set', async () => {
    for (const [given, expected] of [
      [undefined, '1'],
      ['4', '4'],
    ] as const) {
      const child = spawn(LAUNCHER, ['emulator', '--api-key', 'k', '--sites', '1', '--port', '0'], {
        cwd: tempDir(),
        env: { ...ENV, MALLOC_ARENA_MAX: given },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      await new Promise<void>((resolve) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk;
          if (/http:\/\//.test(out)) resolve();
        });
      });
      // the launcher's pid now runs node, with the variable in its environment from the start
      expect(realpathSync(`/proc/${child.pid}/exe`)).toBe(realpathSync(process.execPath));
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
      expect(environ).toContain(`MALLOC_ARENA_MAX=${expected}`);
      // and the signal reaches efsync itself, which stops as it does under node
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
  });
});
