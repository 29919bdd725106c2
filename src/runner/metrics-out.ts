/**
 * Where a one-shot run's metrics go: a file for node_exporter's textfile collector, written whole
 * or not at all (a temporary file beside it, then a rename, so the collector never reads half a
 * file), or a Pushgateway, to one group (`job="efsync"`) that each push replaces.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { Pushgateway, type Registry } from 'prom-client';

/** The Pushgateway group every run pushes to (`/metrics/job/efsync`); the per-job gauges carry their job in `efsync_job`. */
const PUSH_JOB = 'efsync';

const PUSH_TIMEOUT_MS = 10_000;

export function writeMetricsFile(path: string, text: string): void {
  // Beside the target, so the rename stays on one file system; not *.prom, so the collector skips it.
  const temporary = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * PUT replaces the group's metrics with the registry's; an answer other than 2xx is an error
 * naming the status. prom-client's Pushgateway (Node's http) reads the registry itself.
 */
export async function pushMetrics(gateway: string, registry: Registry): Promise<void> {
  // prom-client appends `/metrics/job/…` to the URL's path: a gateway under a prefix keeps it, and
  // without the trailing slash there is no `//`.
  const options = { timeout: PUSH_TIMEOUT_MS, headers: { 'content-type': registry.contentType } };
  const { resp } = await new Pushgateway(gateway.replace(/\/+$/, ''), options, registry)
    .push({ jobName: PUSH_JOB })
    .catch((error: Error) => {
      // prom-client rejects a 4xx or 5xx itself, quoting the whole answer (perhaps a page of HTML).
      throw new Error(error.message.trim().slice(0, 200), { cause: error });
    });
  // A redirect is not a push either.
  const status = (resp as { statusCode?: number } | undefined)?.statusCode ?? 0;
  if (status < 200 || status > 299) throw new Error(`the Pushgateway answered ${status}`);
}
