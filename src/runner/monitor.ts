/**
 * The daemon's monitoring port (`efsync schedule --metrics-port N`): `/metrics` (metrics.ts),
 * `/healthz` (the process answers and the scheduler ticks: a liveness probe) and `/readyz`
 * (readiness.ts: a readiness probe). Each health answer is 200 or 503 with a
 * small JSON body saying why; nothing in it names the API key or a webhook.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LoadedConfig } from '../config.js';
import type { Logger } from '../log.js';
import { formatAge } from './age.js';
import type { RunnerMetrics } from './metrics.js';

/** The scheduler ticks once a minute: two missed ticks and a margin mean it is stuck. */
export const TICK_GRACE_MS = 150_000;

export interface MonitorOptions {
  config: LoadedConfig;
  metrics: RunnerMetrics;
  /** The readiness checks (readiness.ts, given by the command: it reads the status, which knows the schedules). */
  ready: () => Promise<Check[]>;
  /** When the scheduler last ticked (Scheduler.lastTickAt). */
  lastTick: () => number | null;
  clock: () => number;
  log: Logger;
  host: string;
  port: number;
}

export interface Monitor {
  /** `http://host:port`, with the port bound (port 0 picks one). */
  url: string;
  close(): Promise<void>;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export async function startMonitor(options: MonitorOptions): Promise<Monitor> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status: number, type: string, body: string) =>
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
    const answer = async () => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'text/plain', 'GET only\n');
      if (path === '/metrics')
        return reply(
          200,
          options.metrics.registry.contentType,
          await options.metrics.text(options.config, options.clock()),
        );
      if (path === '/healthz') return health(liveness(options), reply);
      if (path === '/readyz') return health(await options.ready(), reply);
      return reply(404, 'text/plain', 'efsync: /metrics, /healthz or /readyz\n');
    };
    answer().catch((error: unknown) => {
      options.log.error({ err: error, path }, 'the monitoring port could not answer');
      reply(500, 'text/plain', `efsync: ${(error as Error).message.split('\n')[0]}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return { url: `http://${host}:${port}`, close: () => closeServer(server) };
}

function health(checks: Check[], reply: (status: number, type: string, body: string) => void): void {
  const ok = checks.every((c) => c.ok);
  reply(ok ? 200 : 503, 'application/json', `${JSON.stringify({ status: ok ? 'ok' : 'failing', checks })}\n`);
}

/** Alive: this answer itself, and a scheduler that ticked within the grace. */
export function liveness(options: Pick<MonitorOptions, 'lastTick' | 'clock'>): Check[] {
  const last = options.lastTick();
  const since = last === null ? null : options.clock() - last;
  return [
    {
      name: 'scheduler',
      ok: since !== null && since <= TICK_GRACE_MS,
      detail: since === null ? 'not started' : `last tick ${formatAge(Math.max(0, since))} ago`,
    },
  ];
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
