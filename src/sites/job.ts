// The sites jobs as runs do them: apply-sites (`efsync sites apply`: a saved plan, or the files
// planned and applied in one go) and sites-drift (plan only: what differs is recorded per site,
// for `efsync status`, the metrics and the alerts).
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { ServiceClient } from '../api/client.js';
import type { LoadedConfig } from '../config.js';
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import { applyOutcome, applySitesPlan } from './apply.js';
import { readSiteDir, SiteFilesError } from './files.js';
import { type DriftRow, recordDrift } from './ledger.js';
import { planSites, readPlanFile, type SiteEntry, type SitesPlan } from './plan.js';
import type { Warehouse } from '../warehouse/warehouse.js';

/** The service as plans name it: its base URL (never the key), or the embedded emulator. */
export function serviceName(config: LoadedConfig): string {
  return config.service.base_url ?? 'the embedded emulator';
}

/** The sites folder checked, then planned against the service; a wrong file stops it before any request. */
export async function planFromFiles(
  config: LoadedConfig,
  client: ServiceClient,
  warehouse: Warehouse | null,
  options: { allowDelete: boolean; now: number; signal?: AbortSignal },
): Promise<SitesPlan> {
  const { files, errors } = readSiteDir(config.sites.dir);
  if (errors.length > 0) throw new SiteFilesError(errors);
  return planSites({
    dir: config.sites.dir,
    files,
    client,
    warehouse,
    capacityDir: config.capacity.dir,
    service: serviceName(config),
    allowDelete: options.allowDelete,
    now: options.now,
    signal: options.signal,
  });
}

export async function applySites(ctx: JobContext): Promise<JobOutcome> {
  const client = await ctx.service();
  const plan = ctx.options.plan
    ? readPlanFile(ctx.options.plan)
    : await planFromFiles(ctx.config, client, ctx.warehouse, {
        allowDelete: ctx.options.allowDelete ?? false,
        now: ctx.now(),
        signal: ctx.signal,
      });
  const applied = await applySitesPlan(plan, {
    client,
    warehouse: ctx.warehouse,
    config: ctx.config,
    service: serviceName(ctx.config),
    runId: ctx.runId,
    now: ctx.now,
    signal: ctx.signal,
    concurrency: ctx.config.sync.concurrency,
  });
  const outcome = applyOutcome(applied);
  const notPlanned = plan.problems.map((p) => ({
    resource: 'sites',
    item: p.name,
    reason: `not planned: ${p.reason}`,
  }));
  return {
    ...outcome,
    status: notPlanned.length > 0 && outcome.status === 'ok' ? 'partial' : outcome.status,
    failures: [...outcome.failures, ...notPlanned],
  };
}

/** Plans, changes nothing, and records per site whether the service still holds what its file says. */
export async function checkDrift(ctx: JobContext): Promise<JobOutcome> {
  if (!existsSync(ctx.config.sites.dir)) {
    return {
      status: 'ok',
      rows: {},
      failures: [],
      summary: [`sites-drift: no sites folder ${ctx.config.sites.dir} (sites.dir): nothing to compare`],
    };
  }
  const plan = await planFromFiles(ctx.config, await ctx.service(), ctx.warehouse, {
    allowDelete: false,
    now: ctx.now(),
    signal: ctx.signal,
  });
  const rows = driftRows(plan);
  await recordDrift(ctx.warehouse, rows, ctx.runId, ctx.now());
  const drifted = rows.filter((row) => row.state !== 'in_sync');
  return {
    status: 'ok',
    rows: { site_drift: rows.length },
    failures: [],
    summary: [
      ...drifted.map((row) => `${row.state.padEnd(8)} site "${row.siteName}": ${row.summary}`),
      `sites-drift: ${rows.length - drifted.length} of ${rows.length} site(s) as their files say, ${drifted.length} not`,
    ],
  };
}

export function driftRows(plan: SitesPlan): DriftRow[] {
  const rows: DriftRow[] = plan.sites.map((entry) => entryDrift(entry));
  for (const kept of plan.kept) {
    rows.push({
      siteName: kept.name,
      siteId: kept.site_id,
      file: null,
      state: 'orphaned',
      fields: 1,
      summary: kept.reason,
    });
  }
  for (const problem of plan.problems) {
    rows.push({
      siteName: problem.name,
      siteId: null,
      file: problem.file,
      state: 'error',
      fields: 0,
      summary: problem.reason,
    });
  }
  // One row per site: a problem with a site's models stands beside its entry, and says more than in_sync.
  const bySite = new Map<string, DriftRow>();
  for (const row of rows) {
    const before = bySite.get(row.siteName);
    if (!before || before.state === 'in_sync') bySite.set(row.siteName, row);
  }
  return [...bySite.values()];
}

function entryDrift(entry: SiteEntry): DriftRow {
  const fields = [...entry.changes, ...entry.serving.flatMap((s) => s.changes)].map((c) => c.field);
  const state = entry.action === 'create' ? 'absent' : entry.action === 'none' ? 'in_sync' : 'drifted';
  const summary =
    state === 'absent'
      ? `no site on the service for ${entry.file}`
      : fields.length === 0
        ? 'as its file says'
        : `${fields.length} field(s) differ: ${fields.slice(0, 5).join(', ')}${fields.length > 5 ? ', …' : ''}`;
  return {
    siteName: entry.name,
    siteId: entry.site_id,
    file: entry.file === null ? null : basename(entry.file),
    state,
    fields: state === 'in_sync' ? 0 : fields.length,
    summary,
  };
}
