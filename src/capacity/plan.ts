// What applying the capacity files would change: per site, the points added, changed and removed
// against the timeline the service holds now (read back with Get Site Capacity), against the last
// push in the ledger, and the drift: what changed on the service outside the config since then.
// The aim is a service timeline equal to the file from the file's first point on.
//
// Get Site Capacity answers the capacity in force SAMPLED every `freq`, not the uploaded points,
// so every timeline is compared as seen at the service's sample instants: the file's and the last
// push's are sampled at those same instants, and each becomes its change points (the first
// sample, then every sample whose value differs from the one before). Equal timelines give equal
// change points whatever the grid; a change shorter than a sample step can go unseen.
import pLimit from 'p-limit';
import type { ServiceClient } from '../api/client.js';
import { ClientStoppedError, isServiceError } from '../api/errors.js';
import type { CapacityTimeline } from '../api/schemas.js';
import { DAY, formatInstant, formatMinute } from '../time.js';
import { RequestError } from '../errors.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { lastSuccessfulPushes, wirePoints, type StoredPush } from './ledger.js';
import {
  CapacityConfigError,
  checkCapacityDir,
  resolveSites,
  type SiteTimeline,
  type TimelinePoint,
} from './validate.js';

export interface PointChange {
  time: number;
  change: 'added' | 'changed' | 'removed';
  /** kW before the change (null: no point there). */
  beforeKw: number | null;
  /** kW after the change (null: the point goes away). */
  afterKw: number | null;
}

export interface SitePlan {
  timeline: SiteTimeline;
  /** The window compared and, when points must go, deleted: from the file's first point on. */
  window: { start: number; end: number };
  /** The service's timeline now, as change points over the window, oldest first. */
  service: TimelinePoint[];
  /** What turns the service's timeline into the file's: empty when they are equal. */
  vsService: PointChange[];
  /** The last successful push of the site, null when the ledger has none. */
  lastPush: StoredPush | null;
  /** What changed in the file since the last push. */
  vsLastPush: PointChange[] | null;
  /** What changed on the service since the last push, outside the config (null: never pushed). */
  drift: PointChange[] | null;
  /** Why the service's timeline could not be read (null when it was): such a site is not pushed, the others are. */
  readError: string | null;
  /** Instants the service sampled with a null value (before its first point): left out of `service`. */
  nulls: number;
}

export interface CapacityPlan {
  dir: string;
  sites: SitePlan[];
  /** Sites the ledger has pushes for but no file covers any more: the service keeps their last timeline. */
  notInFolder: StoredPush[];
}

/** Point by point, what turns `before` into `after`, in time order. */
export function diffPoints(before: TimelinePoint[], after: TimelinePoint[]): PointChange[] {
  const old = new Map(before.map((p) => [p.time, p.valueKw]));
  const next = new Map(after.map((p) => [p.time, p.valueKw]));
  const times = [...new Set([...old.keys(), ...next.keys()])].sort((a, b) => a - b);
  const changes: PointChange[] = [];
  for (const time of times) {
    const beforeKw = old.get(time) ?? null;
    const afterKw = next.get(time) ?? null;
    if (beforeKw === afterKw) continue;
    const change = beforeKw === null ? 'added' : afterKw === null ? 'removed' : 'changed';
    changes.push({ time, change, beforeKw, afterKw });
  }
  return changes;
}

/** The sampling step the plan reads the service's timeline at. */
export const SAMPLE_FREQ = '5min';
/** How far past the file's (or the last push's) last point the service is compared. */
const WINDOW_TAIL = 30 * DAY;

/** The window a site is compared over: the file's first point to WINDOW_TAIL past the last point pushed or to push. */
export function compareWindow(timeline: SiteTimeline, lastPush: StoredPush | null): { start: number; end: number } {
  const last = Math.max(
    timeline.points[timeline.points.length - 1].time,
    ...(lastPush?.points.map((p) => p.time) ?? []),
  );
  return { start: timeline.points[0].time, end: last + WINDOW_TAIL };
}

/** The change points of a timeline seen at `times` (values beside them): the first sample, then each sample whose value differs. */
export function changePoints(times: readonly number[], values: readonly (number | null)[]): TimelinePoint[] {
  const points: TimelinePoint[] = [];
  let previous: number | null = null;
  times.forEach((time, i) => {
    const value = values[i];
    if (value !== null && value !== previous) points.push({ time, valueKw: value });
    previous = value;
  });
  return points;
}

/** A timeline's values at `times` (sorted), held forward from each point; null before the first. */
function sampled(points: TimelinePoint[], times: readonly number[]): (number | null)[] {
  let next = 0;
  let value: number | null = null;
  return times.map((time) => {
    while (next < points.length && points[next].time <= time) value = points[next++].valueKw;
    return value;
  });
}

/** The service's timeline as sampled (`samples`), as change points, and what turns it into the file's. */
export function versusFile(
  timeline: SiteTimeline,
  samples: CapacityTimeline,
): { service: TimelinePoint[]; vsService: PointChange[] } {
  const times = samples.valid_time;
  const service = changePoints(times, samples.value);
  return { service, vsService: diffPoints(service, changePoints(times, sampled(timeline.points, times))) };
}

function planSite(
  timeline: SiteTimeline,
  window: SitePlan['window'],
  samples: CapacityTimeline,
  lastPush: StoredPush | null,
): SitePlan {
  const times = samples.valid_time;
  const { service, vsService } = versusFile(timeline, samples);
  const pushed = lastPush ? changePoints(times, sampled(lastPush.points, times)) : null;
  return {
    timeline,
    window,
    service,
    vsService,
    lastPush,
    vsLastPush: lastPush ? diffPoints(lastPush.points, timeline.points) : null,
    drift: pushed ? diffPoints(pushed, service) : null,
    readError: null,
    nulls: samples.nulls,
  };
}

/** The plan of a site whose timeline the service did not give: nothing known, nothing to push. */
function unreadSite(
  timeline: SiteTimeline,
  window: SitePlan['window'],
  lastPush: StoredPush | null,
  error: unknown,
): SitePlan {
  return {
    timeline,
    window,
    service: [],
    vsService: [],
    lastPush,
    vsLastPush: null,
    drift: null,
    readError: error instanceof Error ? error.message : String(error),
    nulls: 0,
  };
}

/** True when the service holds points the file does not: an upload merges, so apply deletes them after it. */
export function needsDelete(plan: SitePlan): boolean {
  return plan.vsService.some((change) => change.change === 'removed');
}

/** Service timelines read at once while planning. */
const SERVICE_READS = 8;

/**
 * Reads and validates every file of `dir` (the offline rules, then the site rules against the
 * account's sites) and plans each site against the service and the ledger of `warehouse` (null:
 * no ledger yet). Any invalid file throws CapacityConfigError: a plan is made for all files or none.
 */
export async function planCapacity(
  dir: string,
  client: ServiceClient,
  warehouse: Warehouse | null,
  maxOverNameplatePct: number,
): Promise<CapacityPlan> {
  const checked = checkCapacityDir(dir);
  if (checked.errors.length > 0) throw new CapacityConfigError(checked.errors);
  const sites = await client.listSites(); // a malformed site is left out: a file naming it finds no site
  const { resolved, errors } = resolveSites(checked.timelines, sites, maxOverNameplatePct);
  if (errors.length > 0) throw new CapacityConfigError(errors);
  const pushes = warehouse ? await lastSuccessfulPushes(warehouse) : new Map<string, StoredPush>();
  const limit = pLimit(SERVICE_READS);
  const sitePlans = await Promise.all(
    resolved.map((t) =>
      limit(async () => {
        const lastPush = pushes.get(t.siteId) ?? null;
        const window = compareWindow(t, lastPush);
        try {
          return planSite(
            t,
            window,
            await client.getSiteCapacity(t.siteId, { ...window, freq: SAMPLE_FREQ }),
            lastPush,
          );
        } catch (error) {
          // One site's service failing (after the client's retries) leaves the other sites' plans
          // whole; the client's stop (a refused key, a service gone) ends the plan.
          if (!isServiceError(error) || error instanceof ClientStoppedError) throw error;
          return unreadSite(t, window, lastPush, error);
        }
      }),
    ),
  );
  const covered = new Set(resolved.map((t) => t.siteId));
  return {
    dir,
    sites: sitePlans,
    notInFolder: [...pushes.values()].filter((push) => !covered.has(push.siteId)),
  };
}

/** The plan narrowed to `sites` (ids or names); validation still covered every file. */
export function onlySites(plan: CapacityPlan, sites: string[] | undefined): CapacityPlan {
  if (!sites || sites.length === 0) return plan;
  const matches = (site: SitePlan, wanted: string) =>
    site.timeline.siteId === wanted || site.timeline.siteName === wanted;
  const unknown = sites.filter((wanted) => !plan.sites.some((site) => matches(site, wanted)));
  if (unknown.length > 0) {
    throw new RequestError(
      `--site ${unknown.map((u) => JSON.stringify(u)).join(', ')}: no capacity file covers that site`,
    );
  }
  return { ...plan, sites: plan.sites.filter((site) => sites.some((wanted) => matches(site, wanted))) };
}

// ---------------------------------------------------------------- output

function counts(changes: PointChange[]): string {
  if (changes.length === 0) return 'no change';
  const of = (kind: PointChange['change']) => changes.filter((c) => c.change === kind).length;
  return `${of('added')} added, ${of('changed')} changed, ${of('removed')} removed`;
}

function kw(value: number | null): string {
  return value === null ? '-' : String(value);
}

function lastPushLine(plan: SitePlan): string {
  if (!plan.lastPush || !plan.vsLastPush) return 'against the last push: never pushed by efsync';
  const push = plan.lastPush;
  const commit = push.gitCommit ? `, commit ${push.gitCommit.slice(0, 10)}` : '';
  return `against the last push (${formatMinute(push.pushedAt)}${commit}, ${push.file}): ${counts(plan.vsLastPush)}`;
}

function driftLine(plan: SitePlan): string | null {
  if (plan.drift === null) return null;
  if (plan.drift.length === 0) return 'drift: none (the service holds what efsync pushed last)';
  return `drift: the service changed outside the config since the last push: ${counts(plan.drift)}`;
}

function serviceLine(plan: SitePlan): string {
  if (plan.vsService.length === 0) return 'against the service: no change';
  const how = needsDelete(plan)
    ? "  -> apply uploads the file's timeline, then deletes the removed points (an upload alone would keep them)"
    : '  -> apply uploads it';
  return `against the service: ${counts(plan.vsService)}${how}`;
}

/** The plan as an operator reads it: per site the counts, then a table of the points that differ. */
export function formatPlan(plan: CapacityPlan): string {
  const lines: string[] = [];
  for (const site of plan.sites) {
    const t = site.timeline;
    lines.push(`${t.siteName} (${t.siteId})  ${t.source.file}  sha256 ${t.source.contentHash.slice(0, 12)}`);
    if (site.readError) {
      lines.push(`  against the service: UNKNOWN, its timeline could not be read: ${site.readError}`, '');
      continue;
    }
    lines.push(`  ${serviceLine(site)}`);
    lines.push(`  ${lastPushLine(site)}`);
    const drift = driftLine(site);
    if (drift) lines.push(`  ${drift}`);
    lines.push(...changeTable(site));
    lines.push('');
  }
  for (const push of plan.notInFolder) {
    lines.push(
      `no file any more for site ${push.siteId} (last pushed ${formatMinute(push.pushedAt)} from ${push.file}): the service keeps that timeline`,
    );
  }
  const toPush = plan.sites.filter((s) => s.vsService.length > 0).length;
  const unread = plan.sites.filter((s) => s.readError).length;
  lines.push(
    `${plan.sites.length} site${plan.sites.length === 1 ? '' : 's'}: ${toPush} to push, ${plan.sites.length - toPush - unread} unchanged` +
      (unread > 0 ? `, ${unread} unknown (the service's timeline could not be read)` : ''),
  );
  lines.push('(values: kW in force at valid_time on each timeline; changes: of the point at valid_time)');
  return lines.join('\n');
}

/** The value in force at `time` on a timeline held forward from each point; null before the first. */
export function valueAt(points: TimelinePoint[], time: number): number | null {
  let value: number | null = null;
  for (const p of points) if (p.time <= time) value = p.valueKw;
  return value;
}

function changeTable(site: SitePlan): string[] {
  const times = [
    ...new Set([...site.vsService, ...(site.vsLastPush ?? []), ...(site.drift ?? [])].map((c) => c.time)),
  ].sort((a, b) => a - b);
  if (times.length === 0) return [];
  const change = (changes: PointChange[] | null, time: number) =>
    changes === null ? 'never pushed' : (changes.find((c) => c.time === time)?.change ?? '-');
  const rows = [
    ['valid_time', 'service', 'last push', 'config', 'vs service', 'vs last push', 'drift'],
    ...times.map((time) => [
      formatMinute(time),
      kw(valueAt(site.service, time)),
      kw(site.lastPush ? valueAt(site.lastPush.points, time) : null),
      kw(valueAt(site.timeline.points, time)),
      change(site.vsService, time),
      change(site.vsLastPush, time),
      change(site.drift, time),
    ]),
  ];
  const widths = rows[0].map((_, col) => Math.max(...rows.map((r) => r[col].length)));
  return rows.map((r) =>
    `    ${r.map((cell, col) => (col === 0 || col >= 4 ? cell.padEnd(widths[col]) : cell.padStart(widths[col]))).join('  ')}`.trimEnd(),
  );
}

function changesJson(changes: PointChange[]) {
  const of = (kind: PointChange['change']) =>
    changes
      .filter((c) => c.change === kind)
      .map((c) => ({ valid_time: formatMinute(c.time), before: c.beforeKw, after: c.afterKw }));
  return { added: of('added'), changed: of('changed'), removed: of('removed') };
}

/** The plan for a config repository's CI: one object, values in kW, times as `YYYY-MM-DDTHH:MMZ`. */
export function planJson(plan: CapacityPlan) {
  return {
    dir: plan.dir,
    to_push: plan.sites.filter((s) => s.vsService.length > 0).length,
    sites: plan.sites.map((site) => ({
      site_id: site.timeline.siteId,
      site_name: site.timeline.siteName,
      file: site.timeline.source.file,
      content_hash: site.timeline.source.contentHash,
      push: site.vsService.length > 0,
      read_error: site.readError,
      delete_first: needsDelete(site),
      points: wirePoints(site.timeline.points),
      service_points: wirePoints(site.service),
      vs_service: changesJson(site.vsService),
      last_push: site.lastPush
        ? {
            pushed_at: formatInstant(site.lastPush.pushedAt),
            git_commit: site.lastPush.gitCommit,
            content_hash: site.lastPush.contentHash,
            file: site.lastPush.file,
          }
        : null,
      vs_last_push: site.vsLastPush ? changesJson(site.vsLastPush) : null,
      drift: site.drift ? changesJson(site.drift) : null,
    })),
    not_in_folder: plan.notInFolder.map((push) => ({
      site_id: push.siteId,
      file: push.file,
      pushed_at: formatInstant(push.pushedAt),
      points: wirePoints(push.points),
    })),
  };
}
