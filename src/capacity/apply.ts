// Pushing a plan: only the sites whose timeline differs from the service's, each push recorded in
// the ledger whether it landed or not. A failed site never stops the others. An upload merges its
// points into the service's timeline, so a site whose service timeline holds points the file does
// not is pushed as a delete of the service's points, then the upload: afterwards the service's
// timeline equals the file.
import pLimit from 'p-limit';
import type { ServiceClient } from '../api/client.js';
import { isServiceError } from '../api/errors.js';
import type { Failure, JobOutcome } from '../runner/job.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { gitCommit, recordPush, wirePoints } from './ledger.js';
import { needsDelete, type CapacityPlan, type SitePlan } from './plan.js';

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
        if (options.signal?.aborted) return { site, kind: 'skipped' as const };
        return { site, kind: 'pushed' as const, push: await pushSite(site, client, warehouse, commit, options) };
      }),
    ),
  );
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
  const deletes = needsDelete(site) && site.service.length > 0;
  const record = {
    runId: options.runId,
    siteId: timeline.siteId,
    file: timeline.source.file,
    contentHash: timeline.source.contentHash,
    gitCommit: commit,
    points: timeline.points,
    deletedPoints: deletes ? site.service : null,
    pushedAt: options.now(),
  };
  try {
    // Not aborted mid-request: a stop lets the current push finish, so the ledger says what the service holds.
    if (deletes) {
      await client.deleteSiteCapacity(timeline.siteId, site.window);
    }
    const response = await client.uploadSiteCapacity(timeline.siteId, { data: wirePoints(timeline.points) });
    const pushId = await recordPush(warehouse, { ...record, response, status: 'ok', error: null });
    return { plan: site, pushId, status: 'ok', error: null };
  } catch (error) {
    const reason = (error as Error).message ?? String(error);
    const response = isServiceError(error) ? { status: error.status, errors: error.errors } : null;
    const pushId = await recordPush(warehouse, { ...record, response, status: 'failed', error: reason });
    return { plan: site, pushId, status: 'failed', error: reason };
  }
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
        `${needsDelete(p.plan) ? `; the service's ${p.plan.service.length} points deleted first` : ''})`,
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
