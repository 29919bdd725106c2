// What applying the capacity files would change: per site, the points added, changed and removed
// against the timeline the service holds now and against the last push in the ledger.
import type { ServiceClient } from '../api/client.js';
import type { CapacitySegment, SiteResponse } from '../api/schemas.js';
import { formatInstant, formatMinute } from '../time.js';
import { JobUsageError } from '../runner/job.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { lastSuccessfulPushes, wirePoints, type StoredPush } from './ledger.js';
import {
  CapacityConfigError, checkCapacityDir, resolveSites, withoutRepeats, type SiteTimeline, type TimelinePoint,
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
  /** The service's timeline now, as points, from the file's first point on. */
  service: TimelinePoint[];
  /** The service's points before the file's first point: an upload keeps them. */
  kept: TimelinePoint[];
  vsService: PointChange[];
  /** The last successful push of the site, null when the ledger has none. */
  lastPush: StoredPush | null;
  vsLastPush: PointChange[] | null;
}

export interface CapacityPlan {
  dir: string;
  sites: SitePlan[];
  /** Sites the ledger has pushes for but no file covers any more: the service keeps their last timeline. */
  notInFolder: StoredPush[];
}

/**
 * The service's `capacity_kw_array` as points. A segment starts at its `dateStart`, or where the
 * segment before it ends (the real service sends only `dateEnd`); a segment open to the past
 * has no start and is no point.
 */
export function servicePoints(segments: CapacitySegment[]): TimelinePoint[] {
  const points: TimelinePoint[] = [];
  let previousEnd: number | null = null;
  for (const segment of segments) {
    const start = segment.dateStart ?? previousEnd;
    if (start !== null) points.push({ time: start, valueKw: segment.value });
    previousEnd = segment.dateEnd ?? null;
  }
  return points.sort((a, b) => a.time - b.time);
}

/**
 * An upload replaces the service's timeline from its first point on and keeps what lies before
 * it, so that is the part to compare: the service's points from `from` on (without repeats),
 * and the points before it, which an apply leaves as they are.
 */
export function splitAt(points: TimelinePoint[], from: number): { compared: TimelinePoint[]; kept: TimelinePoint[] } {
  return {
    compared: withoutRepeats(points.filter((p) => p.time >= from)),
    kept: points.filter((p) => p.time < from),
  };
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

function planSite(timeline: SiteTimeline, site: SiteResponse, lastPush: StoredPush | null): SitePlan {
  const { compared: service, kept } = splitAt(servicePoints(site.capacity_kw_array), timeline.points[0].time);
  return {
    timeline,
    service,
    kept,
    vsService: diffPoints(service, timeline.points),
    lastPush,
    vsLastPush: lastPush ? diffPoints(lastPush.points, timeline.points) : null,
  };
}

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
  const byId = new Map(sites.map((s) => [s.site_id, s]));
  const covered = new Set(resolved.map((t) => t.siteId));
  return {
    dir,
    sites: resolved.map((t) => planSite(t, byId.get(t.siteId)!, pushes.get(t.siteId) ?? null)),
    notInFolder: [...pushes.values()].filter((push) => !covered.has(push.siteId)),
  };
}

/** The plan narrowed to `sites` (ids or names); validation still covered every file. */
export function onlySites(plan: CapacityPlan, sites: string[] | undefined): CapacityPlan {
  if (!sites || sites.length === 0) return plan;
  const matches = (site: SitePlan, wanted: string) => site.timeline.siteId === wanted || site.timeline.siteName === wanted;
  const unknown = sites.filter((wanted) => !plan.sites.some((site) => matches(site, wanted)));
  if (unknown.length > 0) {
    throw new JobUsageError(`--site ${unknown.map((u) => JSON.stringify(u)).join(', ')}: no capacity file covers that site`);
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

/** The plan as an operator reads it: per site the counts, then a table of the points that differ. */
export function formatPlan(plan: CapacityPlan): string {
  const lines: string[] = [];
  for (const site of plan.sites) {
    const t = site.timeline;
    lines.push(`${t.siteName} (${t.siteId})  ${t.source.file}  sha256 ${t.source.contentHash.slice(0, 12)}`);
    lines.push(`  against the service: ${counts(site.vsService)}${site.vsService.length > 0 ? '  -> apply pushes it' : ''}`);
    lines.push(`  ${lastPushLine(site)}`);
    if (site.kept.length > 0) {
      lines.push(`  kept: the service's ${site.kept.length} point${site.kept.length === 1 ? '' : 's'} before ${formatMinute(t.points[0].time)} (an upload replaces the timeline from its first point on)`);
    }
    lines.push(...changeTable(site));
    lines.push('');
  }
  for (const push of plan.notInFolder) {
    lines.push(`no file any more for site ${push.siteId} (last pushed ${formatMinute(push.pushedAt)} from ${push.file}): the service keeps that timeline`);
  }
  const toPush = plan.sites.filter((s) => s.vsService.length > 0).length;
  lines.push(`${plan.sites.length} site${plan.sites.length === 1 ? '' : 's'}: ${toPush} to push, ${plan.sites.length - toPush} unchanged`);
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
  const times = [...new Set([...site.vsService, ...(site.vsLastPush ?? [])].map((c) => c.time))].sort((a, b) => a - b);
  if (times.length === 0) return [];
  const serviceNow = [...site.kept, ...site.service];
  const change = (changes: PointChange[] | null, time: number) =>
    changes === null ? 'never pushed' : (changes.find((c) => c.time === time)?.change ?? '-');
  const rows = [
    ['valid_time', 'service', 'last push', 'config', 'vs service', 'vs last push'],
    ...times.map((time) => [
      formatMinute(time),
      kw(valueAt(serviceNow, time)),
      kw(site.lastPush ? valueAt(site.lastPush.points, time) : null),
      kw(valueAt(site.timeline.points, time)),
      change(site.vsService, time),
      change(site.vsLastPush, time),
    ]),
  ];
  const widths = rows[0].map((_, col) => Math.max(...rows.map((r) => r[col].length)));
  return rows.map((r) => `    ${r.map((cell, col) => (col === 0 || col >= 4 ? cell.padEnd(widths[col]) : cell.padStart(widths[col]))).join('  ')}`.trimEnd());
}

function changesJson(changes: PointChange[]) {
  const of = (kind: PointChange['change']) =>
    changes.filter((c) => c.change === kind).map((c) => ({ valid_time: formatMinute(c.time), before: c.beforeKw, after: c.afterKw }));
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
      points: wirePoints(site.timeline.points),
      service_points: wirePoints(site.service),
      kept_service_points: wirePoints(site.kept),
      vs_service: changesJson(site.vsService),
      last_push: site.lastPush
        ? { pushed_at: formatInstant(site.lastPush.pushedAt), git_commit: site.lastPush.gitCommit, content_hash: site.lastPush.contentHash, file: site.lastPush.file }
        : null,
      vs_last_push: site.vsLastPush ? changesJson(site.vsLastPush) : null,
    })),
    not_in_folder: plan.notInFolder.map((push) => ({
      site_id: push.siteId, file: push.file, pushed_at: formatInstant(push.pushedAt), points: wirePoints(push.points),
    })),
  };
}
