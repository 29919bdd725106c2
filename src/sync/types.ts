// What every resource module of the sync gets: the service, the warehouse, the run's clock and windows.
import type { ServiceClient } from '../api/client.js';
import type { Logger } from '../log.js';
import type { SiteModel } from '../warehouse/loader.js';
import type { Warehouse } from '../warehouse/warehouse.js';
import type { Backfill, WindowSettings } from './windows.js';

/** Rows inserted or changed, per table. */
export type RowCounts = Record<string, number>;

export interface SyncEnv {
  client: ServiceClient;
  /** Loads on it are serialised by the warehouse itself, one transaction per site and resource. */
  warehouse: Warehouse;
  /** The run's clock, read once at its start, so every site plans the same windows. */
  now: number;
  runId: string;
  settings: WindowSettings;
  backfill?: Backfill;
  /** Requests of one resource of one site that may run at once. */
  requestsPerSite: number;
  log: Logger;
}

/** One site being synced; its models are listed once and shared by the models and outputs steps. */
export interface SiteTask {
  siteId: string;
  name: string;
  models(): Promise<SiteModel[]>;
}
