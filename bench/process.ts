// The bench's child processes: an efsync command timed from spawn to exit, with the kernel's
// high-water mark of its resident memory (VmHWM) as its peak RSS; the emulator in its own process.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
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

/**
 * `cli`: what runs efsync, before the command's arguments: bin/efsync (the launcher users run),
 * or node and its arguments (tsx and src/cli/main.ts in tests).
 */
export async function runMeasured(
  cli: string | readonly string[],
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  { keepStderr = false, keepStdout = false } = {},
): Promise<Measured> {
  const t0 = process.hrtime.bigint();
  const child = spawnEfsync(cli, args, {
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

function spawnEfsync(cli: string | readonly string[], args: readonly string[], options: SpawnOptions): ChildProcess {
  const [command, ...before] = [cli].flat();
  return spawn(command, [...before, ...args], options);
}

function highWaterKb(pid: number | undefined): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** What `efsync emulator` is started with: seed 1 and a free port always; `state` keeps its sites between runs. */
export interface EmulatorOptions {
  apiKey: string;
  sites: number;
  historyDays: number;
  /** The emulator's clock. */
  now: number;
  state?: string;
}

export interface EmulatorProcess {
  url: string;
  process: ChildProcess;
}

/** `efsync emulator` in a child process (`cli` as for runMeasured), once it prints the URL it listens on. */
export async function startEmulatorProcess(
  cli: string | readonly string[],
  o: EmulatorOptions,
): Promise<EmulatorProcess> {
  const args = ['emulator', '--api-key', o.apiKey, '--sites', String(o.sites), '--seed', '1', '--port', '0'];
  args.push('--history-days', String(o.historyDays), '--now', new Date(o.now).toISOString());
  if (o.state !== undefined) args.push('--state', o.state);
  const child = spawnEfsync(cli, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /(http:\/\/[\d.]+:\d+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.on('exit', (code) => reject(new Error(`emulator exited with ${code} before listening`)));
  });
  return { url, process: child };
}
