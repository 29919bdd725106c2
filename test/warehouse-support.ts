// Second processes for the warehouse tests (see warehouse-child.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Config, qualitySettingsFromConfig } from '../src/config.js';
import { Warehouse } from '../src/warehouse/warehouse.js';
import { builtChild } from './built.js';

/** The data-quality settings of the config's defaults. */
const DEFAULTS = Config.parse({});
export const DEFAULT_QUALITY = qualitySettingsFromConfig(
  DEFAULTS.accuracy.quality,
  DEFAULTS.service.interval_label.actuals,
);

/** A fresh folder (named from `prefix`) and the path of a warehouse file in it. */
export function tempWarehousePath(prefix: string): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, path: join(dir, 'warehouse.duckdb') };
}

/** A warehouse opened in a fresh folder; `removeWarehouse` closes it and removes the folder. */
export async function openTempWarehouse(prefix: string): Promise<{ dir: string; warehouse: Warehouse }> {
  const { dir, path } = tempWarehousePath(prefix);
  return { dir, warehouse: await Warehouse.open({ path }) };
}

export async function removeWarehouse(warehouse: Warehouse, dir: string): Promise<void> {
  await warehouse.close();
  rmSync(dir, { recursive: true, force: true });
}

const CHILD = builtChild('test/warehouse-child.ts');

export interface Answer {
  ready?: boolean;
  pid?: number;
  rows?: Record<string, unknown>[];
  ok?: boolean;
  waiting?: { pid: number; runId: string };
  error?: string;
  name?: string;
}

export interface Child {
  process: ChildProcess;
  /** The next line the child writes, parsed. */
  next(): Promise<Answer>;
  /** Sends a command and waits for its answer. */
  ask(command: object): Promise<Answer>;
  /** Ends stdin (the child closes what it holds) and waits for it to exit. */
  close(): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * `pidNamespace`: in a new PID namespace (unshare), as in a container started afresh: there the
 * child is pid 2 (under a shell as pid 1, which would ignore the child's own SIGKILL as init).
 * `env`: added to this process's environment (EFSYNC_FAULT_POINT, to kill it at a named point).
 */
export function startChild(
  args: string[],
  options: { pidNamespace?: boolean; env?: Record<string, string> } = {},
): Child {
  const env = { ...process.env, ...options.env };
  const command = [process.execPath, CHILD, ...args];
  const child = options.pidNamespace
    ? spawn('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', '"$@"; exit $?', 'sh', ...command], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env,
      })
    : spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'], env });
  const pending: Answer[] = [];
  const waiting: ((answer: Answer) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const answer = JSON.parse(line) as Answer;
    const resolve = waiting.shift();
    if (resolve) resolve(answer);
    else pending.push(answer);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const next = () =>
    pending.length > 0 ? Promise.resolve(pending.shift()!) : new Promise<Answer>((resolve) => waiting.push(resolve));
  return {
    process: child,
    next,
    ask: (command) => {
      child.stdin!.write(`${JSON.stringify(command)}\n`);
      return next();
    },
    close: () => {
      child.stdin!.end();
      return exited;
    },
    exited,
  };
}

/** A reader process holding `file` open, as an analyst's session would. */
export async function startReader(file: string, mode: 'read_only' | 'read_write'): Promise<Child> {
  const child = startChild(['reader', file, mode]);
  const first = await child.next();
  if (!first.ready) throw new Error(`reader did not open ${file}: ${first.error}`);
  return child;
}

export async function count(child: Child, sql: string): Promise<number> {
  const answer = await child.ask({ sql: `SELECT count(*) AS n FROM (${sql})` });
  if (answer.error) throw new Error(answer.error);
  return Number(answer.rows![0].n);
}

/** Wind sites `a` and `b`, and model `m1` of site `a`, as a sync at `synced` (an SQL instant) wrote them. */
export async function insertTwoSitesAndModel(wh: Warehouse, synced: string): Promise<void> {
  await wh.run(`INSERT INTO sites SELECT s, 'Site ' || s, 'wind', 59.3, 18.1, 1000, NULL, NULL, NULL, ${synced}
    FROM (VALUES ('a'), ('b')) v(s)`);
  await wh.run(
    `INSERT INTO models VALUES ('m1', 'a', 'gbm', 'gbm', 1, NULL, 'ai', NULL, 1, true, NULL, NULL, NULL, ${synced})`,
  );
}
