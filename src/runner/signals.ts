// Graceful shutdown: the first SIGINT or SIGTERM aborts the signal handed to the run (the current
// site transaction finishes or rolls back, the run is recorded as interrupted); a second one
// exits at once with the interrupted code, leaving DuckDB to roll back what was not committed.
import type { Logger } from '../log.js';
import { EXIT } from './exit-codes.js';

export interface Shutdown {
  signal: AbortSignal;
  /** Removes the handlers (at the end of a command, so the process can exit normally). */
  dispose(): void;
}

export function onShutdownSignals(log: Logger, signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): Shutdown {
  const controller = new AbortController();
  const handler = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      log.warn({ signal: name }, 'second signal: exiting now');
      process.exit(EXIT.interrupted);
    }
    log.warn({ signal: name }, 'stopping: the current site finishes or rolls back, then the run is recorded as interrupted');
    controller.abort(new Error(name));
  };
  for (const name of signals) process.on(name, handler);
  return {
    signal: controller.signal,
    dispose: () => {
      for (const name of signals) process.off(name, handler);
    },
  };
}
