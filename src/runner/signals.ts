/**
 * One signal handler for the whole process: the first SIGINT/SIGTERM aborts `stopSignal()` with
 * an Error named after the signal (a run finishes or rolls back its site in flight and records
 * itself as interrupted; a daemon or the emulator stops and exits 0); a second one gives
 * `onSecondSignal` hooks a moment to record the run, then exits 5. A command that never asked for
 * `stopSignal()` has nothing to finish: the first signal exits 5 at once.
 */
import { EXIT } from '../outcome.js';
import { printAbove } from '../progress.js';
import { interruptAll } from '../warehouse/duckdb.js';

const stop = new AbortController();
let stopWanted = false;
/** What the first signal does, as the command that asked for `stopSignal()` words it. */
let stopping = '';
const secondSignalHooks = new Set<() => Promise<void>>();
/** Whether a second signal came: every DuckDB statement is being interrupted until the exit. */
let stoppedHard = false;
/** How long a second signal waits for the hooks (recording the run) before exiting anyway. */
const SECOND_SIGNAL_GRACE_MS = 5_000;

/** How often, and how many times, the DuckDB statements are interrupted before the exit. */
const INTERRUPT_EVERY_MS = 20;
const INTERRUPTS = 5;

/**
 * Exits 5 within a tenth of a second. A running DuckDB statement would hold process.exit() until
 * it ends, so every open connection is interrupted first, and again a few times: a statement whose
 * task was queued as the signal came starts after the first interrupt and clears it.
 */
function exitInterrupted(): void {
  // The interrupted statement fails, and what it fails may end the process before the last
  // interrupt: whichever way it ends, it ends as interrupted.
  process.on('exit', () => {
    process.exitCode = EXIT.interrupted;
  });
  interruptAll();
  let interrupts = 1;
  setInterval(() => {
    interruptAll();
    interrupts += 1;
    if (interrupts >= INTERRUPTS) process.exit(EXIT.interrupted);
  }, INTERRUPT_EVERY_MS);
}

function onSignal(name: NodeJS.Signals): void {
  if (!stopWanted) {
    exitInterrupted(); // nothing runs that could finish cleanly
    return;
  }
  if (!stop.signal.aborted) {
    printAbove(process.stderr, `efsync: ${name}: ${stopping}; a second signal stops at once\n`);
    stop.abort(new Error(name));
    return;
  }
  printAbove(process.stderr, `efsync: second ${name}: recording the run as interrupted, then exiting\n`);
  stoppedHard = true;
  const hooks = [...secondSignalHooks].map((hook) => hook().catch(() => undefined));
  const grace = new Promise((resolve) => setTimeout(resolve, SECOND_SIGNAL_GRACE_MS).unref());
  void Promise.race([Promise.all(hooks), grace]).then(exitInterrupted);
}

/**
 * Whether a second signal came: the hooks record the run, and every statement after them is
 * interrupted until the process exits, so a statement that fails then says nothing of the run.
 */
export function stoppingHard(): boolean {
  return stoppedHard;
}

/** Installed once, by src/cli/main.ts, before any command runs. */
export function installSignalHandler(): void {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/**
 * The process-wide stop: aborted by the first SIGINT/SIGTERM (its reason `Error('SIGTERM')`);
 * `what` is what the command then does, for the line the signal prints ("stopping after …").
 */
export function stopSignal(what: string): AbortSignal {
  stopWanted = true;
  stopping = what;
  return stop.signal;
}

/** Runs `hook` on a second signal, before the process exits 5; returns its removal. */
export function onSecondSignal(hook: () => Promise<void>): () => void {
  secondSignalHooks.add(hook);
  return () => secondSignalHooks.delete(hook);
}
