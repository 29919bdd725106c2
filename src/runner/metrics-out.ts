/**
 * Where a one-shot run's metrics go: a file for node_exporter's textfile collector, written whole
 * or not at all (a temporary file beside it, then a rename, so the collector never reads half a
 * file), or a Pushgateway, to one group (`job="efsync"`) that each push replaces.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'undici';
import { CONTENT_TYPE } from './exposition.js';

/** The Pushgateway group every run pushes to; the per-job gauges carry their job in `efsync_job`. */
export const PUSH_GROUP = '/metrics/job/efsync';

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

/** PUT replaces the group's metrics with these; an answer other than 2xx is an error naming the status. */
export async function pushMetrics(gateway: string, text: string): Promise<void> {
  // Appended, not resolved: a gateway under a path prefix keeps it.
  const url = `${gateway.replace(/\/+$/, '')}${PUSH_GROUP}`;
  const response = await request(url, {
    method: 'PUT',
    headers: { 'content-type': CONTENT_TYPE },
    body: text,
    headersTimeout: PUSH_TIMEOUT_MS,
    bodyTimeout: PUSH_TIMEOUT_MS,
  });
  const answer = await response.body.text();
  if (response.statusCode < 200 || response.statusCode > 299)
    throw new Error(`the Pushgateway answered ${response.statusCode}: ${answer.slice(0, 200).trim()}`);
}
