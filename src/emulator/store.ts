// The emulator's accounts, sites and models: what a key owns, the models a site gets, the
// capacity timeline, serving priorities, and the JSON state file (written atomically).
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { z } from 'zod';
import type { PVAsset, SiteRequest as SiteRequestSchema, WindAsset } from '../api/schemas.js';
import { formatInstant, HOUR } from '../time.js';

export type SiteType = 'solar' | 'wind' | 'load';
export type ModelKind = 'physical' | 'ai' | 'quantile';
export type ParsedSiteRequest = z.output<typeof SiteRequestSchema>;

/** One segment of a capacity timeline: `value` kW from `start` (inclusive) to `end` (exclusive, null = open). */
export interface CapacitySegmentRecord {
  value: number;
  start: number;
  end: number | null;
}

/**
 * What clients did to one actuals series of a site: uploaded values by valid time (epoch ms as
 * text, JSON-friendly), and deleted ranges of the generated power series. An upload wins over
 * both the generated value and an earlier delete.
 */
export interface ActualsRecord {
  uploaded: Record<string, number>;
  deleted: [number, number][];
}

export interface SiteRecord {
  id: string;
  account: string;
  name: string;
  latitude: number;
  longitude: number;
  type: SiteType;
  settings: Record<string, unknown>;
  /** PV assets (solar sites); empty for wind and load. */
  assets: PVAsset[];
  /** The turbine groups of a wind site, as sent in its `assets`. */
  turbines?: WindAsset[];
  /** The nameplate (kW) of a wind or load site: its body carries none, so it is derived (see siteFields). */
  capacity?: number;
  createdAt: number;
  /** The first valid time with data: the emulator backfills `historyDays` before creation. */
  dataStart: number;
  capacityTimeline: CapacitySegmentRecord[];
  /** False until a capacity upload or delete: the timeline then follows the site's nameplate on update. */
  capacityUploaded: boolean;
  /** Uploads and deletes of actuals by series type (absent in state files from before them). */
  actuals?: Record<string, ActualsRecord>;
  /** Bumped on every update, so that cached series of the old site are not served. */
  revision: number;
}

export interface ModelRecord {
  id: string;
  siteId: string;
  name: string;
  /** `ai` or `physical`: the `model_type` that List Site Models filters on. */
  label: 'ai' | 'physical';
  kind: ModelKind;
  quantile?: number;
  version: number;
  display_name: string;
  priority: number;
  serving_active: boolean;
  schedule: string;
  horizonMs: number;
  states: { state: string; timestamp: number }[];
  /** When its vintages are issued relative to its cron fires (the emulator's switches; absent: at the fire). */
  issueTiming?: ModelIssueTiming;
}

/** A model's issue times: each cron fire plus `delayMs`, and with `fractional` a few seconds more to the microsecond. */
export interface ModelIssueTiming {
  delayMs: number;
  fractional: boolean;
}

/**
 * The emulator's switches of issue times: `fractional` issues every vintage 1-6 s after its fire
 * with microseconds (`06:15:03.448761Z`, as the service's pages show); `delays` publishes the
 * vintages of a kind of model that much after their fire (a model that publishes late).
 */
export interface IssueTiming {
  fractional?: boolean;
  delays?: Partial<Record<ModelKind, number>>;
}

interface StateFile {
  format: 1;
  seed: number;
  accounts: string[];
  created: Record<string, number>;
  sites: SiteRecord[];
  models: ModelRecord[];
}

/** The models each site gets: cron schedules in UTC, horizons, and their default serving priority order. */
export const MODEL_PLANS = {
  ai: { schedule: '30 */3 * * *', horizonMs: 48 * HOUR, display: 'AI model (gradient boosting on weather forecasts)' },
  physical: { schedule: '0 */6 * * *', horizonMs: 72 * HOUR, display: 'Physical model' },
  quantile: { schedule: '15 */6 * * *', horizonMs: 48 * HOUR, display: 'Quantile model' },
} as const;

/** Training takes these offsets after creation: queued, then training, then complete. */
const TRAINING_STEPS: [string, number][] = [
  ['queued', 0],
  ['training', 2 * 60_000],
  ['complete', 25 * 60_000],
];

export class NotFoundError extends Error {}
export class ConflictError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export class Store {
  readonly sites = new Map<string, SiteRecord>();
  readonly models = new Map<string, ModelRecord>();
  private readonly accounts = new Set<string>();
  private readonly created = new Map<string, number>();
  /** Models by site, so that a site's models are found without scanning all of them. */
  private readonly modelsBySite = new Map<string, ModelRecord[]>();
  private holdSaves = false;
  private issueTiming: IssueTiming = {};

  /**
   * `schedules` overrides the cron schedule of a kind of model for sites created from now on
   * (an hourly AI model, for one).
   */
  constructor(
    readonly seed: number,
    private readonly statePath?: string,
    private readonly schedules: Partial<Record<ModelKind, string>> = {},
  ) {}

  /** The account id for an API key: a hash, so that the state file never holds a key. */
  static accountOf(apiKey: string): string {
    return createHash('sha256').update(apiKey).digest('hex').slice(0, 24);
  }

  /** Registers an account; false when it was already there (its demo sites exist). */
  addAccount(account: string): boolean {
    if (this.accounts.has(account)) return false;
    this.accounts.add(account);
    return true;
  }

  sitesOf(account: string): SiteRecord[] {
    return [...this.sites.values()].filter((site) => site.account === account);
  }

  site(account: string, siteId: string): SiteRecord {
    const site = this.sites.get(siteId);
    if (!site || site.account !== account) throw new NotFoundError(`no site ${siteId}`);
    return site;
  }

  model(account: string, modelId: string): ModelRecord {
    const model = this.models.get(modelId);
    if (!model || this.sites.get(model.siteId)?.account !== account) throw new NotFoundError(`no model ${modelId}`);
    return model;
  }

  /** A site's models by serving priority, lowest number (served first) first. */
  modelsOf(siteId: string): ModelRecord[] {
    return [...(this.modelsBySite.get(siteId) ?? [])].sort((a, b) => a.priority - b.priority);
  }

  /** Sets the issue-time switches for every model, held and created from now on. */
  setIssueTiming(timing: IssueTiming): void {
    this.issueTiming = timing;
    for (const model of this.models.values()) this.applyIssueTiming(model);
  }

  private applyIssueTiming(model: ModelRecord): void {
    const delayMs = this.issueTiming.delays?.[model.kind] ?? 0;
    const fractional = this.issueTiming.fractional ?? false;
    if (delayMs === 0 && !fractional) delete model.issueTiming;
    else model.issueTiming = { delayMs, fractional };
  }

  private addModel(model: ModelRecord): void {
    this.applyIssueTiming(model);
    this.models.set(model.id, model);
    const siblings = this.modelsBySite.get(model.siteId);
    if (siblings) siblings.push(model);
    else this.modelsBySite.set(model.siteId, [model]);
  }

  /** Creates a site and its models. Ids are hashes of the seed, the account and a counter: stable per seed. */
  createSite(account: string, request: ParsedSiteRequest, createdAt: number, dataStart: number): SiteRecord {
    const counter = this.created.get(account) ?? 0;
    this.created.set(account, counter + 1);
    const id = uuidFrom(`${this.seed}:${account}:site:${counter}`);
    const site: SiteRecord = {
      id,
      account,
      createdAt,
      dataStart,
      revision: 0,
      capacityTimeline: [],
      capacityUploaded: false,
      ...siteFields(request),
    };
    site.capacityTimeline = [{ value: nameplate(site), start: dataStart, end: null }];
    this.sites.set(id, site);
    this.addModels(site);
    this.save();
    return site;
  }

  /** Deletes a site with its models and all of its data. */
  deleteSite(site: SiteRecord): void {
    for (const model of this.modelsBySite.get(site.id) ?? []) this.models.delete(model.id);
    this.modelsBySite.delete(site.id);
    this.sites.delete(site.id);
    this.save();
  }

  /** Replaces a site's description; models for newly asked quantiles are added, none removed. */
  updateSite(site: SiteRecord, request: ParsedSiteRequest, now: number): SiteRecord {
    Object.assign(site, { turbines: undefined, capacity: undefined });
    Object.assign(site, siteFields(request));
    site.revision += 1;
    if (!site.capacityUploaded) site.capacityTimeline = [{ value: nameplate(site), start: site.dataStart, end: null }];
    this.addModels(site, now);
    this.save();
    return site;
  }

  /**
   * A capacity upload MERGES its points into the timeline: each replaces the point at its valid
   * time (a later duplicate in the body wins), every other point stays. Points hold forward.
   */
  uploadCapacity(site: SiteRecord, points: { valid_time: number; value: number }[]): void {
    const merged = new Map(site.capacityTimeline.map((segment) => [segment.start, segment.value]));
    for (const point of points) merged.set(point.valid_time, point.value);
    site.capacityTimeline = timelineOf(merged);
    site.capacityUploaded = true;
    this.save();
  }

  /** Deletes the capacity points with from <= valid time <= to; the rest hold forward as before. */
  deleteCapacity(site: SiteRecord, from: number, to: number): number {
    const kept = site.capacityTimeline.filter((segment) => segment.start < from || segment.start > to);
    const deleted = site.capacityTimeline.length - kept.length;
    site.capacityTimeline = timelineOf(new Map(kept.map((segment) => [segment.start, segment.value])));
    site.capacityUploaded = true;
    this.save();
    return deleted;
  }

  /** Merges uploaded actuals of one series type into the site's (a point replaces the one at its time). */
  uploadActuals(site: SiteRecord, type: string, points: { valid_time: number; value: number }[]): void {
    const series = actualsOf(site, type);
    for (const point of points) series.uploaded[String(point.valid_time)] = point.value;
    this.save();
  }

  /** Deletes a site's actuals of one type with from <= valid time <= to: uploaded ones and generated ones. */
  deleteActuals(site: SiteRecord, type: string, from: number, to: number): void {
    const series = actualsOf(site, type);
    for (const key of Object.keys(series.uploaded)) {
      const t = Number(key);
      if (t >= from && t <= to) delete series.uploaded[key];
    }
    series.deleted.push([from, to]);
    this.save();
  }

  /** Marks the site's models as trained again from `at`: queued, training, complete, as at creation. */
  trainModels(site: SiteRecord, at: number): number {
    const models = this.modelsOf(site.id);
    for (const model of models)
      model.states.push(...TRAINING_STEPS.map(([state, offset]) => ({ state, timestamp: at + offset })));
    this.save();
    return models.length;
  }

  /** Serving settings with the priority collision rules of the interface. */
  updateModel(
    model: ModelRecord,
    settings: { serving_active?: boolean; serving_priority?: number },
    resolution: 'strict' | 'auto_increment' | 'swap',
  ): ModelRecord {
    if (settings.serving_priority !== undefined && settings.serving_priority !== model.priority) {
      this.movePriority(model, settings.serving_priority, resolution);
    }
    if (settings.serving_active !== undefined) model.serving_active = settings.serving_active;
    this.save();
    return model;
  }

  private movePriority(model: ModelRecord, priority: number, resolution: 'strict' | 'auto_increment' | 'swap'): void {
    const siblings = this.modelsOf(model.siteId).filter((other) => other.id !== model.id);
    const holder = siblings.find((other) => other.priority === priority);
    if (holder && resolution === 'strict') {
      throw new ConflictError(
        'settings.serving_priority',
        `priority ${priority} is held by model ${holder.id} (${holder.name})`,
      );
    }
    if (holder && resolution === 'swap') {
      holder.priority = model.priority;
    } else if (holder) {
      // auto_increment: shift the holder up by one, and whoever then collides, and so on.
      let taken = priority;
      for (const other of siblings.sort((a, b) => a.priority - b.priority)) {
        if (other.priority === taken) {
          other.priority += 1;
          taken = other.priority;
        }
      }
    }
    model.priority = priority;
  }

  private addModels(site: SiteRecord, createdAt = site.createdAt): void {
    const existing = this.modelsOf(site.id);
    const wanted: { kind: ModelKind; quantile?: number }[] = [{ kind: 'ai' }, { kind: 'physical' }];
    const quantiles = site.settings.quantileModels;
    if (Array.isArray(quantiles)) for (const q of quantiles) wanted.push({ kind: 'quantile', quantile: Number(q) });
    let nextPriority = existing.reduce((max, model) => Math.max(max, model.priority), 0) + 1;
    for (const want of wanted) {
      const name = modelName(want.kind, want.quantile);
      if (existing.some((model) => model.name === name)) continue;
      const plan = MODEL_PLANS[want.kind];
      const schedule = this.schedules[want.kind] ?? plan.schedule;
      const model: ModelRecord = {
        id: uuidFrom(`${this.seed}:${site.id}:model:${name}`),
        siteId: site.id,
        name,
        label: want.kind === 'physical' ? 'physical' : 'ai',
        kind: want.kind,
        ...(want.quantile !== undefined ? { quantile: want.quantile } : {}),
        version: 1,
        display_name: want.quantile !== undefined ? `${plan.display} p${percentOf(want.quantile)}` : plan.display,
        priority: nextPriority++,
        serving_active: true,
        schedule,
        horizonMs: plan.horizonMs,
        states: TRAINING_STEPS.map(([state, offset]) => ({ state, timestamp: createdAt + offset })),
      };
      this.addModel(model);
    }
  }

  /** Loads the state file; false when there is none yet. */
  load(): boolean {
    if (!this.statePath) return false;
    let text: string;
    try {
      text = readFileSync(this.statePath, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
    const state = JSON.parse(text) as StateFile;
    if (state.format !== 1) throw new Error(`${this.statePath}: unknown state format ${String(state.format)}`);
    for (const account of state.accounts) this.accounts.add(account);
    for (const [account, count] of Object.entries(state.created)) this.created.set(account, count);
    for (const site of state.sites) this.sites.set(site.id, site);
    for (const model of state.models) this.addModel(model);
    return true;
  }

  /** Runs `change` with saving held back, then saves once (creating a demo fleet, for one). */
  batch(change: () => void): void {
    this.holdSaves = true;
    try {
      change();
    } finally {
      this.holdSaves = false;
    }
    this.save();
  }

  /** Writes the state file atomically (a temporary file renamed into place). */
  save(): void {
    if (!this.statePath || this.holdSaves) return;
    const state: StateFile = {
      format: 1,
      seed: this.seed,
      accounts: [...this.accounts],
      created: Object.fromEntries(this.created),
      sites: [...this.sites.values()],
      models: [...this.models.values()],
    };
    const temporary = `${this.statePath}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(state));
    renameSync(temporary, this.statePath);
  }
}

export function modelName(kind: ModelKind, quantile?: number): string {
  return kind === 'quantile' ? `quantile_p${percentOf(quantile ?? 0.5)}` : kind;
}

function percentOf(quantile: number): string {
  return String(Math.round(quantile * 1000) / 10);
}

function siteFields(request: ParsedSiteRequest) {
  const common = {
    name: request.name,
    latitude: request.latitude,
    longitude: request.longitude,
    settings: { model_resolution: '15min', ...(request.settings ?? {}) } as Record<string, unknown>,
  };
  switch (request.type) {
    case 'solar':
      return { ...common, type: 'solar' as const, assets: request.assets };
    case 'wind':
      return {
        ...common,
        type: 'wind' as const,
        assets: [],
        turbines: request.assets,
        capacity: request.assets.reduce((sum, group) => sum + turbineRatingKw(group.turbine_type) * group.nr_units, 0),
      };
    case 'load': {
      const peak = request.settings?.forecast_max_value;
      return {
        ...common,
        type: 'load' as const,
        assets: [],
        capacity: typeof peak === 'number' && peak > 0 ? peak : DEFAULT_LOAD_CAPACITY,
      };
    }
  }
}

/** A load site's connection peak (kW) when its settings name no `forecast_max_value`. */
export const DEFAULT_LOAD_CAPACITY = 1000;

/** A turbine type's rated power (kW): the number after its last `/` (`V126/3000`), else a generic 2000 kW. */
export function turbineRatingKw(turbineType: string): number {
  const match = /\/(\d+(?:\.\d+)?)$/.exec(turbineType);
  return match ? Number(match[1]) : GENERIC_TURBINE_KW;
}

const GENERIC_TURBINE_KW = 2000;

/** The site's nameplate in kW: the sum of PV asset capacities, or the wind or load capacity. */
export function nameplate(site: Pick<SiteRecord, 'type' | 'assets' | 'capacity'>): number {
  if (site.type === 'solar') return site.assets.reduce((sum, asset) => sum + asset.capacity, 0);
  return site.capacity ?? DEFAULT_LOAD_CAPACITY;
}

/** Segments from points (valid time → kW), oldest first, each open until the next point. */
function timelineOf(points: Map<number, number>): CapacitySegmentRecord[] {
  const starts = [...points.keys()].sort((a, b) => a - b);
  return starts.map((start, i) => ({ value: points.get(start)!, start, end: starts[i + 1] ?? null }));
}

/** The site's record of one actuals series type, created on first use. */
function actualsOf(site: SiteRecord, type: string): ActualsRecord {
  site.actuals ??= {};
  site.actuals[type] ??= { uploaded: {}, deleted: [] };
  return site.actuals[type];
}

/** The capacity timeline as the site response shows it: `{value, dateEnd}` as the guide does, plus `dateStart` when rich. */
export function capacityArray(site: SiteRecord, withStart: boolean) {
  return site.capacityTimeline.map((segment) => ({
    value: segment.value,
    ...(withStart ? { dateStart: formatInstant(segment.start) } : {}),
    dateEnd: segment.end === null ? null : formatInstant(segment.end),
  }));
}

/** A UUID-shaped id from a hash of `text` (version-4 layout, deterministic). */
export function uuidFrom(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
