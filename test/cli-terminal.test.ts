// The command line in a real terminal (tmux), as a person runs it: human log lines at warn and
// above, each step's summary as it ends, no JSON line; with --verbose the info lines; with
// --log-format json, or stderr sent to a file, the JSON lines as ever.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { NIGHTLY_STEPS } from '../jobs/nightly.js';
import { CLI } from './fixtures/runner-child.js';
import { builtChild } from './built.js';
import { needTool, titled } from './tools.js';

vi.setConfig({ testTimeout: 180_000 });

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const hasTmux = needTool('tmux');

/** A tmux server of the tests' own: nothing of a user's sessions or their environment. */
const SOCKET_DIR = mkdtempSync(join(tmpdir(), 'efsync-tmux-'));
const tmux = (...args: string[]) =>
  execFileSync('tmux', ['-S', join(SOCKET_DIR, 'socket'), ...args], { encoding: 'utf8' });
let sessions = 0;
afterAll(() => {
  if (sessions > 0) tmux('kill-server');
  rmSync(SOCKET_DIR, { recursive: true, force: true });
});

/** `'it''s'`: one shell word. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/** `efsync ARGS` as the tests run it. */
const efsync = (...args: string[]) => [process.execPath, ...CLI, ...args];

/** A terminal of 160 × 50 running `argv` (stdout and stderr on it unless `redirect` says otherwise). */
function terminal(argv: string[], redirect = '') {
  const session = `t${sessions++}`;
  // The shell stays a while after the command, so that its screen can still be read.
  const line = `${argv.map(quote).join(' ')} ${redirect}; echo "exit=$?"; sleep 600`;
  tmux('new-session', '-d', '-s', session, '-x', '160', '-y', '50', '-c', ROOT, line);
  /** Everything the terminal shows and scrolled past, wrapped lines joined. */
  const screen = () => tmux('capture-pane', '-p', '-J', '-S', '-', '-t', session);
  const until = async (pattern: RegExp): Promise<string> => {
    for (const started = Date.now(); Date.now() - started < 170_000; ) {
      const text = screen();
      if (pattern.test(text)) return text;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the terminal never showed ${pattern}:\n${screen()}`);
  };
  return { until, ended: () => until(/^exit=\d+$/m) };
}

function tempDir(): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'efsync-tty-'));
  const config = join(dir, 'efsync.yaml');
  // A hot window of 4 days (the least the defaults allow): the nightly run's earlier days go to cold files, which a snapshot copies.
  writeFileSync(config, 'emulator:\n  sites: 2\nwarehouse:\n  hot_window: 4d\n');
  return { dir, config };
}

/** The warehouse the nightly run below leaves, for the snapshot's test. */
let nightlyDb = '';

describe.skipIf(!hasTmux)(titled('a terminal', 'tmux', hasTmux), () => {
  it('shows a nightly run as human lines and step summaries as each step ends, with no JSON line', async () => {
    const { dir, config } = tempDir();
    nightlyDb = join(dir, 'w.duckdb');
    const run = terminal(efsync('run', 'nightly', '--config', config, '--db', join(dir, 'w.duckdb')));
    // A step's lines appear when it ends, long before the run ends.
    const early = await run.until(/^sync-sites: ok /m);
    expect(early).not.toMatch(/^nightly run /m);
    const screen = await run.ended();
    expect(screen).toMatch(/^exit=0$/m);
    expect(screen).not.toMatch(/^\s*\{/m);
    // warn and above only: the embedded emulator's warning, not the info lines
    expect(screen).toMatch(/^\d\d:\d\d:\d\d WARN {2}no service configured .* job=nightly$/m);
    expect(screen).not.toMatch(/ INFO /);
    for (const step of NIGHTLY_STEPS) expect(screen).toMatch(new RegExp(`^${step}: ok \\(`, 'm'));
    expect(screen).toMatch(/^sync +\[.+\] 2\/2 100%/m);
    expect(screen).toMatch(/^nightly run \S+: ok \(exit 0\)/m);
  });

  it('prints log lines above the progress bar, which stays at the bottom', async () => {
    const run = terminal([process.execPath, builtChild('test/fixtures/progress-terminal.ts')]);
    // The warning and the bar drawn again below it are two writes (stderr, then stdout): the
    // screen is read once both are on it.
    const shown = (await run.until(/second warning\n.*\[.+\] 2\/3/)).trimEnd().split('\n');
    expect(shown.slice(-3)).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d WARN {2}first warning {2}siteId=s1$/),
      expect.stringMatching(/^\d\d:\d\d:\d\d WARN {2}second warning$/),
      expect.stringMatching(/^sync +\[.+\] 2\/3 66%/),
    ]);
    expect(shown.filter((line) => line.includes('['))).toHaveLength(1);
    const ended = (await run.ended()).trimEnd().split('\n');
    expect(ended.slice(-2)).toEqual([expect.stringMatching(/^sync +\[.+\] 3\/3 100%/), 'exit=0']);
  });

  it('shows a bar per series table while efsync snapshot copies it', async () => {
    expect(existsSync(`${nightlyDb.slice(0, -'.duckdb'.length)}.cold`)).toBe(true);
    const out = join(dirname(nightlyDb), 'copy.duckdb');
    const screen = await terminal(efsync('snapshot', '--db', nightlyDb, '--out', out)).ended();
    expect(screen).toMatch(/^exit=0$/m);
    for (const table of ['forecasts', 'actuals']) {
      expect(screen).toMatch(new RegExp(`^${table} +\\[.+\\] (\\d+)/\\1 100%`, 'm'));
    }
    expect(screen).toMatch(/copy\.duckdb: [\d.]+ MB, \d+ series rows/);
  });

  it('shows the info lines with --verbose', async () => {
    const { dir, config } = tempDir();
    const screen = await terminal(
      efsync('run', 'retention', '--verbose', '--config', config, '--db', join(dir, 'w.duckdb')),
    ).ended();
    expect(screen).toMatch(/^\d\d:\d\d:\d\d INFO {2}run started {2}job=retention attempt=1$/m);
    expect(screen).not.toMatch(/^\s*\{/m);
  });

  it('keeps the JSON lines with --log-format json, and when stderr goes to a file', async () => {
    const { dir, config } = tempDir();
    const args = ['run', 'retention', '--config', config, '--db', join(dir, 'w.duckdb')];
    const [asked, redirected] = await Promise.all([
      terminal(efsync(...args, '--log-format', 'json')).ended(),
      terminal(efsync(...args), `2>${quote(join(dir, 'log.json'))}`).ended(),
    ]);
    expect(asked).toMatch(
      /^\{"level":30,"time":"[^"]+","app":"efsync","job":"retention","runId":"[^"]+",.*"msg":"run started"\}$/m,
    );
    expect(redirected).toMatch(/^retention run \S+: ok \(exit 0\)/m);
    expect(redirected).not.toMatch(/^\s*\{|INFO/m);
    const lines = readFileSync(join(dir, 'log.json'), 'utf8').trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(expect.arrayContaining(['run started', 'run ended']));
  });
});
