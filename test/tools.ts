// The tools some tests need beyond Node, each an independent check of what efsync writes or does
// (.ci/run installs every one). Where one is missing, a test that needs it is skipped on a
// developer's machine, its title saying why, but fails under CI (CI set), naming the tool: a green
// CI has run every check. EFSYNC_TEST_WITHOUT=tmux,pyarrow takes tools away, to see that rule hold.
import { spawnSync } from 'node:child_process';

const PROBES = {
  tmux: { command: ['tmux', '-V'], install: 'apt-get install tmux' },
  promtool: { command: ['promtool', '--version'], install: 'apt-get install prometheus' },
  chromium: { command: ['chromium', '--version'], install: 'apt-get install chromium' },
  pyarrow: { command: ['python3', '-c', 'import pyarrow.parquet'], install: 'python3 -m pip install pyarrow' },
  pyduckdb: { command: ['python3', '-c', 'import duckdb'], install: 'python3 -m pip install duckdb' },
  unshare: {
    command: ['unshare', '--pid', '--fork', '--mount-proc', 'true'],
    install: 'run as root, or allow user namespaces',
  },
  mount: {
    command: ['sh', '-c', 'dir=$(mktemp -d) && mount -t tmpfs -o size=4096 tmpfs "$dir" && umount "$dir"'],
    install: 'run as root (it mounts a small tmpfs)',
  },
} as const;

export type Tool = keyof typeof PROBES;

const WITHOUT = new Set((process.env.EFSYNC_TEST_WITHOUT ?? '').split(',').filter(Boolean));
const UNDER_CI = !['', '0', 'false'].includes(process.env.CI ?? '');

function available(tool: Tool): boolean {
  if (WITHOUT.has(tool)) return false;
  const [command, ...args] = PROBES[tool].command;
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/**
 * Whether `tool` is here, for `describe.skipIf(!tool)`; under CI a missing tool throws instead,
 * failing the test file with the tool's name and how to install it.
 */
export function needTool(tool: Tool): boolean {
  if (available(tool)) return true;
  if (UNDER_CI) throw new Error(`${tool} is missing (${PROBES[tool].install}): under CI no test is skipped`);
  return false;
}

/** A test's title, saying why it was skipped where `tool` is missing. */
export const titled = (title: string, tool: Tool, here: boolean) =>
  here ? title : `${title} (skipped: ${tool} missing; ${PROBES[tool].install})`;
