// Applying a plan, exactly as it was made: first refused whole when the service changed since
// (a stale plan), then in order: sites created and updated, the models' serving settings, the
// capacity files of the sites created, and last the deletes. Each change is recorded in the
// ledger whether it landed or not; one that fails fails alone (and what depends on it is not
// tried), so the next apply, which plans again from what landed, converges. A key the service
// refuses (401, 403) or a service gone stops the whole apply: every later change would fail the
// same way.
import pLimit from 'p-limit';
import type { ServiceClient } from '../api/client.js';
import { ClientStoppedError, isServiceError, type ServiceError } from '../api/errors.js';
import { applyPlan as applyCapacityPlan } from '../capacity/apply.js';
import { gitCommit } from '../capacity/ledger.js';
import { onlySites, planCapacity } from '../capacity/plan.js';
import type { LoadedConfig } from '../config.js';
import { ConfigError, EfsyncError } from '../errors.js';
import type { Failure, JobOutcome } from '../outcome.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { type ChangeRecord, forgetManaged, recordChanges, recordManaged } from './ledger.js';
import { basisOf, type ServingChange, type SiteEntry, type SitesPlan, servingAgainst } from './plan.js';
import { readService, type ServiceState, type ServingState, servingOf } from './service.js';

/** The service changed since the plan was made: nothing is applied. */
export class StalePlanError extends ConfigError {}

/** A model's serving priority that another model holds, refused under `strict`: that model's change fails alone. */
class ServingConflictError extends Error {}

export interface ApplyOptions {
  client: ServiceClient;
  warehouse: Warehouse;
  config: LoadedConfig;
  /** The service applied to, as plans name it: a plan made against another is refused. */
  service: string;
  runId: string | null;
  now: () => number;
  signal?: AbortSignal;
  /** Sites changed at once (sync.concurrency); one site's own changes go one after another. */
  concurrency: number;
}

/** One step of an apply and how it ended. */
export interface Step {
  site: string;
  /** `create`, `update`, `serving of model ai`, `capacity from FILE`, `delete`. */
  what: string;
  status: 'ok' | 'failed' | 'not applied';
  /** Why it failed or was not applied; null when ok. */
  reason: string | null;
  /** Field rows recorded in the ledger. */
  rows: number;
}

export interface Applied {
  steps: Step[];
  /** Sites whose managed record (name, file, protect flag, file contents) was written. */
  managed: number;
}

export async function applySitesPlan(plan: SitesPlan, options: ApplyOptions): Promise<Applied> {
  if (plan.service !== options.service) {
    throw new StalePlanError(`the plan was made against ${plan.service}, not ${options.service}: plan again`);
  }
  await refuseIfStale(plan, options);
  const run = new ApplyRun(plan, options);
  const limit = pLimit(options.concurrency);
  /** One phase: its sites at once (up to `concurrency`), its steps in the plan's order. */
  const phase = async (wanted: (entry: SiteEntry) => boolean, step: (entry: SiteEntry, out: Step[]) => Promise<void>) =>
    (
      await Promise.all(
        plan.sites.filter(wanted).map((entry) =>
          limit(async () => {
            const out: Step[] = [];
            await step(entry, out);
            return out;
          }),
        ),
      )
    ).flat();
  const steps = [
    ...(await phase(
      (e) => e.action === 'create' || e.action === 'update',
      (e, out) => run.site(e, out),
    )),
    ...(await phase(
      (e) => e.serving.length > 0,
      (e, out) => run.serving(e, out),
    )),
    ...(await phase(
      (e) => e.capacity_files.length > 0,
      (e, out) => run.capacity(e, out),
    )),
    ...(await phase(
      (e) => e.action === 'delete',
      (e, out) => run.delete(e, out),
    )),
  ];
  return { steps, managed: await run.recordManaged() };
}

/** Reads the service again: every site the plan changes must be as it was when planned. */
async function refuseIfStale(plan: SitesPlan, options: ApplyOptions): Promise<void> {
  const withServing = new Set(plan.sites.filter((e) => e.serving_basis !== null).map((e) => e.site_id));
  const state = await readService(options.client, (site) => withServing.has(site.site_id), options.signal);
  const changed = plan.sites.flatMap((entry) => staleness(entry, state));
  if (changed.length > 0) {
    throw new StalePlanError(
      `the plan is stale: the service changed since it was made (${changed.slice(0, 3).join('; ')}${changed.length > 3 ? `; ${changed.length - 3} more` : ''}): nothing was applied; run efsync sites plan again`,
    );
  }
}

function staleness(entry: SiteEntry, state: ServiceState): string[] {
  if (entry.action === 'none') return [];
  if (entry.action === 'create') {
    const existing = state.sites.find((site) => site.form.name === entry.name);
    return existing ? [`site "${entry.name}" exists now (${existing.id})`] : [];
  }
  const site = state.sites.find((s) => s.id === entry.site_id);
  if (!site) return [`site "${entry.name}" (${entry.site_id}) is gone`];
  const found: string[] = [];
  if (basisOf(site.form) !== entry.basis) found.push(`site "${entry.name}" (${site.id}) changed`);
  if (entry.serving_basis !== null && (site.models === null || basisOf(site.models) !== entry.serving_basis)) {
    found.push(`the models of site "${entry.name}" (${site.id}) changed`);
  }
  return found;
}

class ApplyRun {
  /** Site ids of the sites created, by name. */
  private readonly created = new Map<string, string>();
  /** Sites whose create or update failed: their serving and capacity are not tried. */
  private readonly failedSites = new Set<string>();
  private readonly commit: string | null;

  constructor(
    private readonly plan: SitesPlan,
    private readonly options: ApplyOptions,
  ) {
    this.commit = gitCommit(plan.dir);
  }

  async site(entry: SiteEntry, out: Step[]): Promise<void> {
    if (entry.body === null) return;
    const body = entry.body;
    const what = entry.action === 'create' ? 'create' : 'update';
    const ok = await this.attempt(out, entry, what, entry.changes, what, async () => {
      if (entry.action === 'update') await this.options.client.updateSite(entry.site_id as string, body);
      else this.created.set(entry.name, (await this.options.client.createSite(body)).site_id);
    });
    if (!ok) this.failedSites.add(entry.name);
  }

  async serving(entry: SiteEntry, out: Step[]): Promise<void> {
    const siteId = entry.site_id ?? this.created.get(entry.name);
    if (this.failedSites.has(entry.name) || siteId === undefined) {
      this.notApplied(out, entry, 'serving', `its ${entry.action} failed`);
      return;
    }
    const changes = entry.site_id === null ? await this.servingOfNewSite(out, entry, siteId) : entry.serving;
    for (const change of changes ?? []) {
      const { client } = this.options;
      await this.attempt(out, entry, `serving of model ${change.model}`, change.changes, 'serving', async () => {
        try {
          await client.updateModel(change.model_id as string, {
            settings: change.settings,
            priority_conflict_resolution: entry.resolution,
          });
        } catch (error) {
          throw isConflict(error) ? await this.conflict(entry, siteId, change, error) : error;
        }
      });
    }
  }

  /** A created site's serving settings, against the models the service made for it. */
  private async servingOfNewSite(out: Step[], entry: SiteEntry, siteId: string): Promise<ServingChange[] | null> {
    let models: ServingState[];
    try {
      models = servingOf(await this.options.client.listSiteModels(siteId, { extra: ['serving_active'] }));
    } catch (error) {
      this.fail(out, error, entry, 'serving', `its models could not be read: ${(error as Error).message}`);
      return null;
    }
    const { changes, unmatched } = servingAgainst(
      models,
      entry.serving.map((s) => [s.model, s.settings]),
    );
    for (const { model, count } of unmatched) {
      out.push({
        site: entry.name,
        what: `serving of model ${model}`,
        status: 'failed',
        reason: `${count === 0 ? 'the service made no model' : `the service made ${count} models`} named "${model}" (its models: ${models.map((m) => m.name).join(', ') || 'none'})`,
        rows: 0,
      });
    }
    return changes;
  }

  /** A strict priority collision, in one line naming both models and the priority. */
  private async conflict(entry: SiteEntry, siteId: string, change: ServingChange, error: ServiceError): Promise<Error> {
    const priority = change.settings.serving_priority;
    const models = await this.options.client.listSiteModels(siteId).catch(() => []);
    const holder = models.find((m) => m.priority === priority && m.id !== change.model_id);
    const holderText = holder ? `model ${holder.name}` : `another model (the service said: ${error.detail})`;
    return new ServingConflictError(
      `serving_priority ${priority} is held by ${holderText} of site "${entry.name}" ` +
        `(409 under priority_conflict_resolution: ${entry.resolution}): model ${change.model} was not changed; ` +
        `give ${holder?.name ?? 'that model'} another priority in ${entry.file}, or set priority_conflict_resolution: swap or auto_increment`,
    );
  }

  async capacity(entry: SiteEntry, out: Step[]): Promise<void> {
    if (entry.action !== 'create') return;
    const what = `capacity from ${entry.capacity_files.join(', ')}`;
    if (!this.created.has(entry.name)) {
      this.notApplied(out, entry, what, 'the site was not created');
      return;
    }
    const { config, client, warehouse } = this.options;
    try {
      const plan = onlySites(
        await planCapacity(config.capacity.dir, client, warehouse, config.capacity.max_over_nameplate_pct),
        [entry.name],
      );
      const pushed = await applyCapacityPlan(plan, client, warehouse, {
        runId: this.options.runId,
        now: this.options.now,
        signal: this.options.signal,
      });
      const failed = [...pushed.failed.map((p) => p.error), ...pushed.unread.map((s) => s.readError)];
      out.push({
        site: entry.name,
        what,
        status: failed.length === 0 ? 'ok' : 'failed',
        reason: failed.length === 0 ? null : failed.join('; '),
        rows: 0,
      });
    } catch (error) {
      this.fail(out, error, entry, what, (error as Error).message.split('\n').join(' '));
    }
  }

  async delete(entry: SiteEntry, out: Step[]): Promise<void> {
    const siteId = entry.site_id as string;
    const ok = await this.attempt(out, entry, 'delete', entry.changes, 'delete', () =>
      this.options.client.deleteSite(siteId),
    );
    if (ok) await forgetManaged(this.options.warehouse, siteId);
  }

  /** Every site a file describes and the service now holds is managed from that file; how many records changed. */
  async recordManaged(): Promise<number> {
    const sites = this.plan.sites.flatMap((entry) => {
      const siteId = entry.site_id ?? this.created.get(entry.name);
      if (entry.action === 'delete' || siteId === undefined || entry.file === null) return [];
      return [
        {
          site_id: siteId,
          name: entry.name,
          file: entry.file,
          protect: entry.protect,
          contentHash: entry.content_hash ?? '',
        },
      ];
    });
    return recordManaged(this.options.warehouse, sites, this.options.runId, this.options.now());
  }

  /** Sends one change and records its fields; false when it failed (the failure is a step). */
  private async attempt(
    out: Step[],
    entry: SiteEntry,
    what: string,
    changes: SiteEntry['changes'],
    action: ChangeRecord['action'],
    send: () => Promise<unknown>,
  ): Promise<boolean> {
    if (this.options.signal?.aborted) {
      this.notApplied(out, entry, what, 'the run was stopped');
      return false;
    }
    const record = this.record(entry, action);
    try {
      await send();
    } catch (error) {
      const reason = (error as Error).message;
      this.fail(out, error, entry, what, reason, changes.length);
      await recordChanges(this.options.warehouse, { ...record, siteId: this.siteIdOf(entry) }, changes, reason);
      return false;
    }
    await recordChanges(this.options.warehouse, { ...record, siteId: this.siteIdOf(entry) }, changes, null);
    out.push({ site: entry.name, what, status: 'ok', reason: null, rows: changes.length });
    return true;
  }

  /** A failed step; the client's stop, the run's stop or a bug ends the whole apply instead. */
  private fail(out: Step[], error: unknown, entry: SiteEntry, what: string, reason: string, rows = 0): void {
    const own =
      error instanceof ServingConflictError ||
      error instanceof EfsyncError ||
      (isServiceError(error) && error.kind !== 'aborted' && !(error instanceof ClientStoppedError));
    if (!own) throw error;
    out.push({ site: entry.name, what, status: 'failed', reason, rows });
  }

  private notApplied(out: Step[], entry: SiteEntry, what: string, reason: string): void {
    out.push({ site: entry.name, what, status: 'not applied', reason, rows: 0 });
  }

  private siteIdOf(entry: SiteEntry): string | null {
    return entry.site_id ?? this.created.get(entry.name) ?? null;
  }

  private record(entry: SiteEntry, action: ChangeRecord['action']): ChangeRecord {
    return {
      runId: this.options.runId,
      fingerprint: this.plan.fingerprint,
      siteId: this.siteIdOf(entry),
      siteName: entry.name,
      file: entry.file,
      action,
      gitCommit: this.commit,
      at: this.options.now(),
    };
  }
}

function isConflict(error: unknown): error is ServiceError {
  return isServiceError(error) && error.status === 409;
}

/** The run's outcome: partial when some steps failed and others landed. */
export function applyOutcome({ steps, managed }: Applied): JobOutcome {
  const failures: Failure[] = steps
    .filter((step) => step.status !== 'ok')
    .map((step) => ({ resource: 'sites', item: `${step.site}: ${step.what}`, reason: step.reason ?? step.status }));
  const landed = steps.filter((step) => step.status === 'ok');
  return {
    status: failures.length === 0 ? 'ok' : landed.length > 0 ? 'partial' : 'failed',
    rows: { site_changes: steps.reduce((sum, step) => sum + step.rows, 0), managed_sites: managed },
    failures,
    summary: applySummary(steps),
  };
}

/** Steps named in the summary's last line; the lines above it name every one. */
const NAMED = 10;

function applySummary(steps: Step[]): string[] {
  const lines = steps.map((step) => {
    const label = { ok: 'applied    ', failed: 'FAILED     ', 'not applied': 'not applied' }[step.status];
    return `${label} site "${step.site}": ${step.what}${step.reason ? `: ${step.reason}` : ''}`;
  });
  const landed = steps.filter((step) => step.status === 'ok');
  const missed = steps.filter((step) => step.status !== 'ok');
  const names = (some: Step[]) => {
    const named = some.slice(0, NAMED).map((step) => `${step.what} of "${step.site}"`);
    return [...named, ...(some.length > NAMED ? [`${some.length - NAMED} more`] : [])].join(', ') || 'none';
  };
  lines.push(
    missed.length === 0
      ? `sites: ${landed.length === 0 ? 'nothing to apply' : `applied ${landed.length} change(s): ${names(landed)}`}`
      : `sites: applied ${landed.length} of ${steps.length} (${names(landed)}); not applied: ${names(missed)}; the next apply plans again from what landed`,
  );
  return lines;
}
