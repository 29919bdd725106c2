// Exit codes of `efsync run`, so that cron, systemd and Kubernetes can tell outcomes apart.
import type { RunStatus } from './ledger.js';

export const EXIT = {
  /** Every site and step succeeded. */
  ok: 0,
  /** The run finished but some sites or steps failed (named in the summary and `run_failures`). */
  partial: 1,
  /** Configuration or usage error: unknown job, bad option, invalid config (key and line named). */
  usage: 2,
  /** Another process holds the warehouse writer lock (the message names it). */
  busy: 3,
  /** The run failed as a whole (service unreachable, a fatal error, a timeout). */
  failed: 4,
  /** Stopped by SIGINT or SIGTERM; the current site transaction finished or rolled back. */
  interrupted: 5,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit code a one-shot run ends with, from the status recorded in the ledger. */
export function exitCodeFor(status: RunStatus | 'busy'): ExitCode {
  switch (status) {
    case 'ok':
      return EXIT.ok;
    case 'partial':
      return EXIT.partial;
    case 'busy':
    case 'skipped': // only scheduled runs are skipped: their slot was already run
      return EXIT.busy;
    case 'interrupted':
      return EXIT.interrupted;
    case 'failed':
    case 'crashed':
    case 'running':
      return EXIT.failed;
  }
}
