// pino, JSON to stderr by default so stdout stays free for the human summary and --json output.
import { randomUUID } from 'node:crypto';
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(options: { level?: string; destination?: number } = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.EFSYNC_LOG_LEVEL ?? 'info',
      base: { app: 'efsync' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The key travels in one header only; redact it wherever a request object is logged.
      redact: {
        paths: ['apiKey', '*.apiKey', 'headers.authorization', '*.headers.authorization'],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: options.destination ?? 2, sync: true }),
  );
}

/** A fresh run id: sortable by time, unique across processes. */
export function newRunId(now = Date.now()): string {
  return `${new Date(now).toISOString().replace(/[-:.]/g, '').slice(0, 15)}Z-${randomUUID().slice(0, 8)}`;
}

/** One child logger per job run, carrying its run id on every line. */
export function runLogger(parent: Logger, job: string, runId: string): Logger {
  return parent.child({ job, runId });
}
