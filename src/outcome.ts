// What a run or a command comes to: the failures a job reports, its outcome, and the exit code
// that outcome ends the process with. Every layer may import it (it imports nothing).

/** Every outcome of a command, and the exit code it ends with: the README's table. */
export const EXIT = {
  /** Everything asked for was done. */
  ok: 0,
  /** Finished, but some sites or steps failed (named in the summary, `run_failures`, `efsync status`). */
  partial: 1,
  /** A flag or argument is wrong (unknown option, `--from` after `--to`, an unknown job). */
  usage: 2,
  /** A file, key or path is wrong (invalid config or capacity file, a missing file, a path that cannot be written). */
  config: 2,
  /** Another efsync process holds the warehouse writer lock (the message names it). */
  busy: 3,
  /** The service is unreachable, refused us or answered what the interface does not allow. */
  service: 4,
  /** Failed as a whole for another stated reason (a timeout, a full disk). */
  failed: 4,
  /** A bug: the one line says so, the stack is in the JSON log (and on the terminal with --debug). */
  internal: 4,
  /** Stopped by SIGINT or SIGTERM; the site in flight finished or rolled back; the run is recorded. */
  interrupted: 5,
} as const;

export type Outcome = keyof typeof EXIT;
export type ExitCode = (typeof EXIT)[Outcome];

export interface Failure {
  siteId?: string;
  resource?: string;
  /** The one item that failed alone (a listed site, a model, a vintage), when not the whole resource. */
  item?: string;
  /** Where in the item the answer broke the interface. */
  fieldPath?: string;
  reason: string;
}

export interface JobOutcome {
  status: 'ok' | 'partial' | 'failed';
  /** Rows written per table. */
  rows: Record<string, number>;
  /** Rows removed per table (retention). */
  removed?: Record<string, number>;
  failures: Failure[];
  /** Documented variants filled in, per `resource.field` (see SiteResponse and the series schemas). */
  defaulted?: Record<string, number>;
  /** Lines for the human summary on stdout. */
  summary?: string[];
}
