// Pushing a plan: only the sites whose timeline differs from the service's, each push recorded in
// the ledger whether it landed or not. A failed site never stops the others. An upload merges its
// points into the service's timeline, so a site whose service timeline holds points the file does
// not is pushed as the upload, then a delete of those points only (removeStale): afterwards the
// service's timeline equals the file, and a push that fails half-way leaves the service holding at
// least the file's points, never a hole; the ledger row says what it holds, and the next apply,
// which still finds it different from the file, repairs it. The client's stop (a refused key, a
// service gone: src/api/client.ts) ends the apply as it ends a sync: the pushes sent before it
// are recorded, the sites not reached yet are left for the next apply, and the stop is thrown.
import pLimit from 'p-limit';
import type { ServiceClient } from '../api/client.js';
import { isServiceError } from '../api/errors.js';
import type { Failure, JobOutcome } from '../outcome.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { formatMinute } from '../time.js';
import { gitCommit, recordPush, wirePoints } from './ledger.js';
import {
  diffPoints,
  needsDelete,
  SAMPLE_FREQ,
  versusFile,
  type CapacityPlan,
  type PointChange,
  type SitePlan,
} from './plan.js';
import type { TimelinePoint } from './validate.js';

export interface SitePush {
  plan: SitePlan;
  pushId: string;
  status: 'ok' | 'failed';
  /** The reason of a failed push, null when it landed. */
  error: string | null;
}

export interface ApplyResult {
  pushed: SitePush[];
  failed: SitePush[];
  /** Sites whose timeline the service already holds: nothing sent. */
  unchanged: SitePlan[];
  /** Sites whose timeline on the service could not be read: nothing sent. */
  unread: SitePlan[];
  /** Sites left unpushed because the run was stopped (SIGINT, SIGTERM, timeout). */
  skipped: SitePlan[];
}

export interface ApplyOptions {
  /** The run the pushes belong to, null outside the run ledger. */
  runId: string | null;
  now: () => number;
  /** Once aborted, the remaining sites are not pushed (and are named). */
  signal?: AbortSignal;
  /** Sites pushed at once (default 1). */
  concurrency?: number;
}

export async function applyPlan(
  plan: CapacityPlan,
  client: ServiceClient,
  warehouse: Warehouse,
  options: ApplyOptions,
): Promise<ApplyResult> {
  const commit = gitCommit(plan.dir);
  const limit = pLimit(options.concurrency ?? 1);
  const outcomes = await Promise.all(
    plan.sites.map((site) =>
      limit(async () => {
        if (site.readError) return { site, kind: 'unread' as const };
        if (site.vsService.length === 0) return { site, kind: 'unchanged' as const };
        if (options.signal?.aborted || client.stopped()) return { site, kind: 'skipped' as const };
        return { site, kind: 'pushed' as const, push: await pushSite(site, client, warehouse, commit, options) };
      }),
    ),
  );
  const stop = client.stopped();
  if (stop) throw stop;
  const result: ApplyResult = { pushed: [], failed: [], unchanged: [], unread: [], skipped: [] };
  for (const outcome of outcomes) {
    if (outcome.kind === 'pushed') (outcome.push.status === 'ok' ? result.pushed : result.failed).push(outcome.push);
    else result[outcome.kind].push(outcome.site);
  }
  return result;
}

async function pushSite(
  site: SitePlan,
  client: ServiceClient,
  warehouse: Warehouse,
  commit: string | null,
  options: ApplyOptions,
): Promise<SitePush> {
  const { timeline } = site;
  const removed = site.vsService.filter((change) => change.change === 'removed');
  const record = {
    runId: options.runId,
    siteId: timeline.siteId,
    file: timeline.source.file,
    contentHash: timeline.source.contentHash,
    gitCommit: commit,
    points: timeline.points,
    deletedPoints: removed.length > 0 ? removed.map((c) => ({ time: c.time, valueKw: c.beforeKw as number })) : null,
    pushedAt: options.now(),
  };
  let response: unknown = null;
  try {
    // Not aborted mid-request: a stop lets the current push finish, so the ledger says what the service holds.
    response = await upload(client, site);
    if (removed.length > 0) await removeStale(client, site, removed);
    const pushId = await recordPush(warehouse, { ...record, response, status: 'ok', error: null, heldPoints: null });
    return { plan: site, pushId, status: 'ok', error: null };
  } catch (error) {
    const failure = isServiceError(error) ? { status: error.status, errors: error.errors } : null;
    const held = await readBack(client, site).catch(() => null);
    const reason = `${(error as Error).message ?? String(error)}; ${holding(site, held)}`;
    const pushId = await recordPush(warehouse, {
      ...record,
      response: failure ?? response,
      status: 'failed',
      error: reason,
      heldPoints: held?.service ?? null,
    });
    return { plan: site, pushId, status: 'failed', error: reason };
  }
}

function upload(client: ServiceClient, site: SitePlan): Promise<unknown> {
  return client.uploadSiteCapacity(site.timeline.siteId, { data: wirePoints(site.timeline.points) });
}

/**
 * Takes out the service's points the file does not have, AFTER the file's points are uploaded, so
 * the service never holds less than the file: each stale change point lies strictly between two
 * of the file's points (or after the last), and only those gaps are deleted, one request each,
 * ending a second short of the file's points. A delete that took more than its range is seen by
 * reading the window back, and repaired by uploading the file again.
 */
async function removeStale(client: ServiceClient, site: SitePlan, removed: PointChange[]): Promise<void> {
  const { siteId } = site.timeline;
  for (const gap of staleGaps(site.timeline.points, removed, site.window.end)) {
    await client.deleteSiteCapacity(siteId, gap);
  }
  if ((await readBack(client, site)).vsService.length === 0) return;
  await upload(client, site);
  const after = await readBack(client, site);
  if (after.vsService.length > 0) throw new Error('the service still differs from the file after uploading it again');
}

/** One second, the least the service's instants tell apart: a gap ends that far from the file's points. */
const SECOND = 1000;

/** The ranges between the file's points (after the last: to `end`) that hold a stale change point. */
export function staleGaps(
  points: readonly TimelinePoint[],
  removed: readonly PointChange[],
  end: number,
): { start: number; end: number }[] {
  const gaps = new Map<number, { start: number; end: number }>();
  for (const change of removed) {
    const i = points.findLastIndex((p) => p.time < change.time);
    if (i < 0 || gaps.has(i)) continue;
    const next = points[i + 1]?.time;
    gaps.set(i, { start: points[i].time + SECOND, end: next === undefined ? end : next - SECOND });
  }
  return [...gaps.values()];
}

/** The service's timeline over the plan's window now, against the file. */
async function readBack(client: ServiceClient, site: SitePlan): Promise<ReturnType<typeof versusFile>> {
  const samples = await client.getSiteCapacity(site.timeline.siteId, { ...site.window, freq: SAMPLE_FREQ });
  return versusFile(site.timeline, samples);
}

/** What the service holds after a failed push, in words (for the one line and the ledger). */
function holding(site: SitePlan, held: ReturnType<typeof versusFile> | null): string {
  if (held === null) return 'what the service now holds could not be read; the next apply pushes it again';
  if (held.vsService.length === 0) return "the service holds the file's timeline all the same";
  const before = diffPoints(site.service, held.service).length === 0;
  return before
    ? 'the service holds its timeline from before this push; the next apply pushes it again'
    : `the service now holds ${held.service.length} change points, ${held.vsService.length} differing from the file ` +
        `(first at ${formatMinute(held.vsService[0].time)}); the next apply repairs it`;
}

/** The run's outcome for the run ledger: partial when some sites failed and others did not. */
export function applyOutcome(result: ApplyResult): JobOutcome {
  const failures: Failure[] = [
    ...result.failed.map((push) => ({
      siteId: push.plan.timeline.siteId,
      resource: 'capacity',
      reason: push.error ?? 'failed',
    })),
    ...result.unread.map((site) => ({
      siteId: site.timeline.siteId,
      resource: 'capacity',
      reason: `not pushed: the service's timeline could not be read: ${site.readError}`,
    })),
    ...result.skipped.map((site) => ({
      siteId: site.timeline.siteId,
      resource: 'capacity',
      reason: 'not pushed: the run was stopped',
    })),
  ];
  const succeeded = result.pushed.length + result.unchanged.length;
  const nulls = [...result.pushed, ...result.failed]
    .map((push) => push.plan)
    .concat(result.unchanged, result.skipped)
    .reduce((sum, site) => sum + site.nulls, 0);
  return {
    status: failures.length === 0 ? 'ok' : succeeded > 0 ? 'partial' : 'failed',
    rows: { capacity_pushes: result.pushed.length + result.failed.length },
    failures,
    ...(nulls > 0 ? { defaulted: { 'capacity.value': nulls } } : {}),
    summary: applySummary(result),
  };
}

function siteLabel(site: SitePlan): string {
  return `${site.timeline.siteName} (${site.timeline.siteId}) from ${site.timeline.source.file}`;
}

function applySummary(result: ApplyResult): string[] {
  return [
    ...result.pushed.map(
      (p) =>
        `pushed     ${siteLabel(p.plan)}: ${p.plan.timeline.points.length} points (${p.plan.vsService.length} changed` +
        `${needsDelete(p.plan) ? `; then the ${p.plan.vsService.filter((c) => c.change === 'removed').length} points the file removed deleted` : ''})`,
    ),
    ...result.unchanged.map((site) => `unchanged  ${siteLabel(site)}`),
    ...result.failed.map((p) => `FAILED     ${siteLabel(p.plan)}: ${p.error}`),
    ...result.unread.map(
      (site) =>
        `FAILED     ${siteLabel(site)}: not pushed, the service's timeline could not be read: ${site.readError}`,
    ),
    ...result.skipped.map((site) => `not pushed ${siteLabel(site)}: the run was stopped`),
    `capacity: ${result.pushed.length} pushed, ${result.unchanged.length} unchanged, ${result.failed.length + result.unread.length} failed` +
      (result.skipped.length > 0 ? `, ${result.skipped.length} not pushed` : ''),
  ];
}
