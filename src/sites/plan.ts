// What applying the site files would change, field by field, against what the service holds now:
// sites to create, sites whose fields or models' serving settings differ, and managed sites whose
// file was removed (deleted only when asked, never when protected). A site in no file that efsync
// never managed is unmanaged and left alone.
//
// A file finds its site by the file it was last applied from (so a rename in the file renames the
// site), else by name. A setting the file leaves out is the service's to keep: an update sends the
// service's settings with the file's laid over them. A plan is a JSON document that apply carries
// out exactly: it records what the service held of each site it changes (`basis`), so that apply
// refuses it when the service changed since, and its fingerprint, so that an edited plan is refused.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { ServiceClient } from '../api/client.js';
import type { PriorityConflictResolution, SiteRequest } from '../api/schemas.js';
import { listCapacityFiles, readCapacityFile } from '../capacity/files.js';
import { ConfigError } from '../errors.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import { canonicalJson, diffValue, type FieldChange } from './diff.js';
import { requestOf, type SiteFile, type SiteSpec } from './files.js';
import { type ManagedSite, managedSites } from './ledger.js';
import { readService, type ServiceSite, type ServiceState, type ServingState, type SiteForm } from './service.js';

/** One model's serving settings to change, and the settings its Update Model sends. */
export interface ServingChange {
  model: string;
  /** Null until the site exists (a site the plan creates). */
  model_id: string | null;
  settings: { serving_active?: boolean; serving_priority?: number };
  /** Fields `models.<name>.serving_active` and `models.<name>.serving_priority`. */
  changes: FieldChange[];
}

export interface SiteEntry {
  /** `none`: the service holds what the file says (apply records the site as managed, and sends nothing). */
  action: 'create' | 'update' | 'delete' | 'none';
  name: string;
  site_id: string | null;
  /** The site file's name in the folder; for a delete, the file it was last applied from. */
  file: string | null;
  content_hash: string | null;
  protect: boolean;
  /** The site's own fields that differ. */
  changes: FieldChange[];
  /** What Create Site posts or Update Site puts; null when the site's own fields are unchanged. */
  body: SiteRequest | null;
  /** Serving settings to change, in an order that frees a priority before another model takes it. */
  serving: ServingChange[];
  resolution: PriorityConflictResolution;
  /** Capacity files naming a site the plan creates: pushed once it exists. */
  capacity_files: string[];
  /** sha256 of the site as the service held it when planned (null: a create), and of its models' serving. */
  basis: string | null;
  serving_basis: string | null;
}

export interface SitesPlan {
  format: 1;
  created_at: string;
  dir: string;
  /** The service planned against (its base URL, never the key). */
  service: string;
  allow_delete: boolean;
  sites: SiteEntry[];
  /** Managed sites whose file was removed and that are not deleted, and why. */
  kept: { name: string; site_id: string; file: string; reason: string }[];
  unmanaged: { name: string; site_id: string }[];
  /** What could not be planned, each in a line (`file:line:column: rule` where a file says it). */
  problems: { name: string; file: string | null; reason: string }[];
  /** sha256 of everything above: apply refuses a plan whose contents do not match it. */
  fingerprint: string;
}

export interface PlanOptions {
  dir: string;
  files: SiteFile[];
  client: ServiceClient;
  /** The warehouse holding the managed sites (the published snapshot); null: none managed yet. */
  warehouse: Warehouse | null;
  /** The capacity folder: capacity files of the sites a plan creates are pushed after them. */
  capacityDir: string;
  service: string;
  allowDelete: boolean;
  now: number;
  signal?: AbortSignal;
}

export async function planSites(options: PlanOptions): Promise<SitesPlan> {
  const managed = await managedSites(options.warehouse);
  const state = await readService(options.client, modelsWanted(options.files, managed), options.signal);
  return sitesPlan({ ...options, managed, state, capacity: capacityFilesBySite(options.capacityDir) });
}

/** Which sites' models are read: those a file with `models:` may be about. */
function modelsWanted(files: SiteFile[], managed: ManagedSite[]) {
  const withModels = files.filter((f) => f.spec.models !== undefined);
  const names = new Set(withModels.map((f) => f.spec.name));
  const fileNames = new Set(withModels.map((f) => basename(f.file)));
  const ids = new Set(managed.filter((m) => fileNames.has(m.file)).map((m) => m.site_id));
  return (site: { site_id: string; name: string }) => names.has(site.name) || ids.has(site.site_id);
}

/** Site name or id -> the capacity files naming it (files that do not read are the capacity check's to report). */
function capacityFilesBySite(dir: string): Map<string, string[]> {
  const bySite = new Map<string, string[]>();
  for (const path of listCapacityFiles(dir).files) {
    const read = readCapacityFile(path);
    if (read.ok) bySite.set(read.file.site, [...(bySite.get(read.file.site) ?? []), path]);
  }
  return bySite;
}

interface PlanInput extends PlanOptions {
  managed: ManagedSite[];
  state: ServiceState;
  capacity: Map<string, string[]>;
}

function sitesPlan(input: PlanInput): SitesPlan {
  const { state, managed } = input;
  const byId = new Map(state.sites.map((site) => [site.id, site]));
  const managedByFile = new Map(managed.filter((m) => byId.has(m.site_id)).map((m) => [m.file, m]));
  const claimed = new Set([...input.files].flatMap((f) => managedByFile.get(basename(f.file))?.site_id ?? []));
  const sites: SiteEntry[] = [];
  const problems: SitesPlan['problems'] = [];
  const matched = new Set<string>();
  for (const file of input.files) {
    const fileName = basename(file.file);
    const byFile = managedByFile.get(fileName);
    const match = byFile ? { site: byId.get(byFile.site_id) as ServiceSite } : matchByName(file, state, claimed);
    if ('problem' in match) {
      problems.push({ name: file.spec.name, file: fileName, reason: match.problem });
      continue;
    }
    if (match.site) matched.add(match.site.id);
    if (!match.site && state.unreadable.length > 0) {
      problems.push({ name: file.spec.name, file: fileName, reason: unreadableReason(state) });
      continue;
    }
    const serving = servingFor(file, match.site);
    problems.push(...serving.problems.map((reason) => ({ name: file.spec.name, file: fileName, reason })));
    sites.push(entryFor(file, match.site, serving.changes, input.capacity));
  }
  const kept: SitesPlan['kept'] = [];
  for (const row of managed) {
    const site = byId.get(row.site_id);
    if (!site || matched.has(site.id) || input.files.some((f) => basename(f.file) === row.file)) continue;
    matched.add(site.id);
    if (row.protect) kept.push(keptSite(row, site, `protect: true in its last file, ${row.file}: never deleted`));
    else if (!input.allowDelete) {
      kept.push(keptSite(row, site, `its file ${row.file} was removed: apply --allow-delete deletes it`));
    } else if (input.files.length === 0) {
      // A wrong --dir, or a folder emptied by mistake, must not delete the fleet.
      kept.push(
        keptSite(
          row,
          site,
          `the sites folder ${input.dir} holds no site file: nothing is deleted from an empty folder`,
        ),
      );
    } else sites.push(deleteEntry(row, site));
  }
  const unmanaged = state.sites
    .filter((site) => !matched.has(site.id))
    .map((site) => ({ name: site.form.name, site_id: site.id }));
  const plan: Omit<SitesPlan, 'fingerprint'> = {
    format: 1,
    created_at: new Date(input.now).toISOString(),
    dir: input.dir,
    service: input.service,
    allow_delete: input.allowDelete,
    sites,
    kept,
    unmanaged,
    problems,
  };
  return { ...plan, fingerprint: fingerprintOf(plan) };
}

function matchByName(
  file: SiteFile,
  state: ServiceState,
  claimed: Set<string>,
): { site: ServiceSite | null } | { problem: string } {
  const named = state.sites.filter((site) => site.form.name === file.spec.name);
  const free = named.filter((site) => !claimed.has(site.id));
  const at = located(file, ['name']);
  if (free.length > 1) {
    return {
      problem: `${at}: ${free.length} sites on the service are named "${file.spec.name}" (${free.map((s) => s.id).join(', ')}): rename all but one on the service`,
    };
  }
  if (free.length === 0 && named.length > 0) {
    return { problem: `${at}: the site named "${file.spec.name}" (${named[0].id}) is managed from another file` };
  }
  return { site: free[0] ?? null };
}

function unreadableReason(state: ServiceState): string {
  const first = state.unreadable[0];
  return (
    `not created: ${state.unreadable.length} site(s) of List Sites could not be read ` +
    `(${first.id ?? `item ${first.index}`}: ${first.fieldPath}: ${first.reason}), and this may be one of them`
  );
}

function located(file: SiteFile, path: PropertyKey[]): string {
  const at = file.positionOf(path);
  return `${file.file}:${at.line}:${at.column}`;
}

function entryFor(
  file: SiteFile,
  site: ServiceSite | null,
  serving: ServingChange[],
  capacity: Map<string, string[]>,
): SiteEntry {
  const request = requestOf(file.spec);
  const changes = siteChanges(site?.form ?? null, file.spec);
  const body = site === null ? request : changes.length > 0 ? updateBody(request, site.form) : null;
  const action = site === null ? 'create' : changes.length > 0 || serving.length > 0 ? 'update' : 'none';
  return {
    action,
    name: file.spec.name,
    site_id: site?.id ?? null,
    file: basename(file.file),
    content_hash: file.contentHash,
    protect: file.spec.protect ?? false,
    changes,
    body,
    serving,
    resolution: file.spec.priority_conflict_resolution ?? 'strict',
    capacity_files: site === null ? (capacity.get(file.spec.name) ?? []) : [],
    basis: site === null ? null : basisOf(site.form),
    serving_basis: serving.length > 0 && site?.models ? basisOf(site.models) : null,
  };
}

/** The site's own fields that differ, as a file writes them; against nothing for a site to create. */
export function siteChanges(form: SiteForm | null, spec: SiteSpec): FieldChange[] {
  const settings = spec.settings ?? {};
  return [
    ...diffValue('name', form?.name, spec.name),
    ...diffValue('type', form?.type, spec.type),
    ...diffValue('latitude', form?.latitude, spec.latitude),
    ...diffValue('longitude', form?.longitude, spec.longitude),
    ...Object.keys(settings).flatMap((key) => diffValue(`settings.${key}`, form?.settings[key], settings[key])),
    ...diffValue('assets', form === null ? [] : form.assets, 'assets' in spec ? spec.assets : undefined),
  ];
}

/** Update Site replaces the site: the settings the file leaves out are sent as the service holds them. */
function updateBody(request: SiteRequest, form: SiteForm): SiteRequest {
  const settings = { ...form.settings, ...(request.settings ?? {}) };
  return Object.keys(settings).length > 0 ? { ...request, settings } : request;
}

function keptSite(row: ManagedSite, site: ServiceSite, reason: string): SitesPlan['kept'][number] {
  return { name: site.form.name, site_id: site.id, file: row.file, reason };
}

function deleteEntry(row: ManagedSite, site: ServiceSite): SiteEntry {
  return {
    action: 'delete',
    name: site.form.name,
    site_id: site.id,
    file: row.file,
    content_hash: null,
    protect: false,
    changes: [{ field: 'site', before: site.form }],
    body: null,
    serving: [],
    resolution: 'strict',
    capacity_files: [],
    basis: basisOf(site.form),
    serving_basis: null,
  };
}

/**
 * The serving settings of `file` that differ from its site's models, ordered so that a model
 * leaves a priority before another takes it (a swap of two is left to the file's resolution).
 * For a site not yet created, every setting is a change, its model found once the site exists.
 */
export function servingFor(
  file: SiteFile,
  site: { id: string; models: ServingState[] | null; modelsError: string | null } | null,
): { changes: ServingChange[]; problems: string[] } {
  const wanted = Object.entries(file.spec.models ?? {});
  if (wanted.length === 0) return { changes: [], problems: [] };
  if (site === null) {
    return {
      changes: wanted.map(([model, settings]) => ({
        model,
        model_id: null,
        settings,
        changes: Object.entries(settings).map(([key, after]) => ({ field: `models.${model}.${key}`, after })),
      })),
      problems: [],
    };
  }
  if (site.models === null) return { changes: [], problems: [`models: ${site.modelsError ?? 'not read'}`] };
  const { changes, unmatched } = servingAgainst(site.models, wanted);
  const problems = unmatched.map(
    ({ model, count }) =>
      `${located(file, ['models', model])}: models.${model}: ` +
      (count === 0
        ? `the site has no model named "${model}" (its models: ${site.models?.map((m) => m.name).join(', ') || 'none'})`
        : `${count} models of the site are named "${model}"`),
  );
  return { changes, problems };
}

/**
 * What turns the models' serving settings into the wanted ones, in order; a wanted model that no
 * model, or more than one, is named after is left out and listed with how many were.
 */
export function servingAgainst(
  models: ServingState[],
  wanted: [string, ServingChange['settings']][],
): { changes: ServingChange[]; unmatched: { model: string; count: number }[] } {
  const changes: ServingChange[] = [];
  const unmatched: { model: string; count: number }[] = [];
  for (const [model, settings] of wanted) {
    const named = models.filter((m) => m.name === model);
    if (named.length !== 1) {
      unmatched.push({ model, count: named.length });
      continue;
    }
    const change = servingChange(model, named[0], settings);
    if (change) changes.push(change);
  }
  return { changes: orderServing(models, changes), unmatched };
}

function servingChange(
  model: string,
  current: ServingState,
  settings: ServingChange['settings'],
): ServingChange | null {
  const send: ServingChange['settings'] = {};
  const changes: FieldChange[] = [];
  for (const key of ['serving_active', 'serving_priority'] as const) {
    const after = settings[key];
    if (after === undefined || current[key] === after) continue;
    Object.assign(send, { [key]: after });
    changes.push({
      field: `models.${model}.${key}`,
      ...(current[key] === null ? {} : { before: current[key] }),
      after,
    });
  }
  return changes.length === 0 ? null : { model, model_id: current.id, settings: send, changes };
}

/** Changes that move to a free priority first, as the models' priorities stand after each. */
function orderServing(models: ServingState[], changes: ServingChange[]): ServingChange[] {
  const held = new Map(models.map((m) => [m.id, m.serving_priority]));
  const free = (change: ServingChange) =>
    change.settings.serving_priority === undefined ||
    ![...held].some(([id, priority]) => id !== change.model_id && priority === change.settings.serving_priority);
  const pending = [...changes];
  const ordered: ServingChange[] = [];
  while (pending.length > 0) {
    const index = Math.max(0, pending.findIndex(free));
    const [next] = pending.splice(index, 1);
    if (next.settings.serving_priority !== undefined) held.set(next.model_id ?? '', next.settings.serving_priority);
    ordered.push(next);
  }
  return ordered;
}

export function basisOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function fingerprintOf(plan: Omit<SitesPlan, 'fingerprint'>): string {
  return basisOf(plan);
}

/** Whether a plan changes anything on the service (`none` entries only record what is managed). */
export function hasChanges(plan: SitesPlan): boolean {
  return plan.sites.some((entry) => entry.action !== 'none');
}

/** A saved plan, checked to be one efsync made and nobody edited since. */
export function readPlanFile(path: string): SitesPlan {
  let plan: SitesPlan;
  try {
    plan = JSON.parse(readFileSync(path, 'utf8')) as SitesPlan;
  } catch (error) {
    throw new ConfigError(`${path}: not a plan efsync sites plan --out wrote (${(error as Error).message})`);
  }
  if (plan?.format !== 1 || typeof plan.fingerprint !== 'string' || !Array.isArray(plan.sites)) {
    throw new ConfigError(`${path}: not a plan efsync sites plan --out wrote (no format 1, fingerprint or sites)`);
  }
  const { fingerprint, ...rest } = plan;
  if (fingerprintOf(rest) !== fingerprint) {
    throw new ConfigError(
      `${path}: the plan was edited after it was made (its fingerprint does not match): plan again`,
    );
  }
  return plan;
}
