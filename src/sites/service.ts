// What the service holds, in the form a site file has: the projection that import writes and that
// plan compares a file with. Reading is tolerant as the client is (docs/interface-assumptions.md):
// a null setting is no setting, a PV asset without `mount` is fixed, an asset's undocumented keys
// (ids the service fills in) are not part of the form, and an `install_date` given with a time is
// its date.
import pLimit from 'p-limit';
import type { Listing, RejectedItem, ServiceClient } from '../api/client.js';
import { isServiceError } from '../api/errors.js';
import {
  type ModelItem,
  PVAssetDualAxis,
  PVAssetFixed,
  PVAssetSingleAxis,
  type SiteResponse,
  WindAsset,
} from '../api/schemas.js';

/** A site as a file states it: the request body's fields, each as the service holds it. */
export interface SiteForm {
  name: string;
  type: string;
  latitude: number;
  longitude: number;
  settings: Record<string, unknown>;
  /** Solar: PV assets; wind: turbine groups; load: none (absent). */
  assets?: Record<string, unknown>[];
}

/** A model's serving settings as the service holds them (`serving_active` null: not reported). */
export interface ServingState {
  id: string;
  name: string;
  serving_active: boolean | null;
  serving_priority: number;
}

export interface ServiceSite {
  id: string;
  form: SiteForm;
  /** The site's models, when they were read (null: not read, or `modelsError` says why not). */
  models: ServingState[] | null;
  modelsError: string | null;
}

export interface ServiceState {
  sites: ServiceSite[];
  /** Sites of List Sites that could not be read: their names are unknown. */
  unreadable: RejectedItem[];
}

/** Models read at once. */
const MODEL_READS = 8;

/**
 * The account's sites in file form, and the models of those `withModels` says (by site id).
 * One site's models failing to read fails that site alone.
 */
export async function readService(
  client: ServiceClient,
  withModels: (site: SiteResponse) => boolean,
  signal?: AbortSignal,
): Promise<ServiceState> {
  const listed = await client.listSites({ signal });
  const limit = pLimit(MODEL_READS);
  const sites = await Promise.all(
    listed.map((site) =>
      limit(async (): Promise<ServiceSite> => {
        const base = { id: site.site_id, form: siteForm(site), models: null, modelsError: null };
        if (!withModels(site)) return base;
        try {
          return {
            ...base,
            models: servingOf(await client.listSiteModels(site.site_id, { extra: ['serving_active'], signal })),
          };
        } catch (error) {
          if (!isServiceError(error)) throw error;
          return { ...base, modelsError: `its models could not be read: ${error.message}` };
        }
      }),
    ),
  );
  return { sites, unreadable: listed.rejected };
}

/** Models as List Site Models gives them, as their serving settings. */
export function servingOf(models: Listing<ModelItem>): ServingState[] {
  return models.map((model) => ({
    id: model.id,
    name: model.name,
    serving_active: model.serving_active ?? null,
    serving_priority: model.priority,
  }));
}

export function siteForm(site: SiteResponse): SiteForm {
  const form: SiteForm = {
    name: site.name,
    type: site.type,
    latitude: site.latitude,
    longitude: site.longitude,
    settings: Object.fromEntries(Object.entries(site.settings ?? {}).filter(([, value]) => value !== null)),
  };
  if (site.type === 'solar') form.assets = site.assets.map(pvAssetForm);
  if (site.type === 'wind') form.assets = site.assets.map((asset) => documented(asset, WindAsset));
  return form;
}

const PV_VARIANTS = {
  fixed: PVAssetFixed,
  single_axis_tracking: PVAssetSingleAxis,
  dual_axis_tracking: PVAssetDualAxis,
} as const;

function pvAssetForm(asset: Record<string, unknown>): Record<string, unknown> {
  const mount = typeof asset.mount === 'string' ? asset.mount : 'fixed';
  const variant = PV_VARIANTS[mount as keyof typeof PV_VARIANTS];
  return variant ? documented({ ...asset, mount }, variant) : { ...asset };
}

/**
 * The keys of `asset` that `schema` documents, with its defaults filled in when the asset fits it
 * (a tracker's angles the service left out); as given when it does not, so that the check says what is wrong.
 */
function documented(
  asset: Record<string, unknown>,
  schema: { shape: Record<string, unknown>; safeParse(value: unknown): { success: boolean; data?: unknown } },
): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = asset[key];
    if (value === undefined || value === null) continue;
    picked[key] = key === 'install_date' && typeof value === 'string' ? dateOf(value) : value;
  }
  const parsed = schema.safeParse(picked);
  return parsed.success ? (parsed.data as Record<string, unknown>) : picked;
}

/** `2024-05-01T00:00:00Z` -> `2024-05-01`: the file's `install_date` is a date. */
function dateOf(text: string): string {
  return /^\d{4}-\d{2}-\d{2}[T ]/.test(text) ? text.slice(0, 10) : text;
}
