// The bench's child processes: an efsync command timed from spawn to exit, with the kernel's
// high-water mark of its resident memory (VmHWM) as its peak RSS.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface Measured {
  code: number | null;
  seconds: number;
  peakRssMb: number;
  /** What the command wrote on stderr, when asked to keep it (else it goes to the bench's stderr). */
  stderr: string;
  /** What the command wrote on stdout, when asked to keep it (else it is dropped). */
  stdout: string;
}

/** `cli`: the script, or node's arguments before the command's (e.g. tsx and src/cli/main.ts in tests). */
export async function runMeasured(
  cli: string | readonly string[],
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  { keepStderr = false, keepStdout = false } = {},
): Promise<Measured> {
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, [...[cli].flat(), ...args], {
    env,
    stdio: ['ignore', keepStdout ? 'pipe' : 'ignore', keepStderr ? 'pipe' : 'inherit'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk));
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk));
  let peakKb = 0;
  const poll = setInterval(() => {
    peakKb = Math.max(peakKb, highWaterKb(child.pid));
  }, 100);
  // 'close', not 'exit': the kept output is whole only once the pipes are closed
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(poll);
  return { code, seconds: Number(process.hrtime.bigint() - t0) / 1e9, peakRssMb: peakKb / 1024, stderr, stdout };
}

function highWaterKb(pid: number | undefined): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}
