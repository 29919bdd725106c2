// What a job is: a name, a default schedule and a function composed of src/ calls.
import type { ServiceClient } from '../api/client.js';
import type { LoadedConfig, Resource } from '../config.js';
import type { Logger } from '../log.js';
import type { Shard } from '../lake/shard.js';
import type { Progress } from '../progress.js';
import type { Warehouse } from '../warehouse/warehouse.js';

export interface JobOptions {
  /** Only these sites (ids or names); all sites when absent. */
  sites?: string[];
  /** Only the sites of this shard (src/lake/shard.ts); all sites when absent. */
  shard?: Shard;
  /** A historical window to backfill instead of the incremental one (epoch ms). */
  from?: number;
  to?: number;
  /** Only these resources, for the sync jobs. */
  only?: Resource[];
  /** Show what the job would do and change nothing (`--dry-run`), for the jobs that say they can. */
  dryRun?: boolean;
}

export interface JobContext {
  config: LoadedConfig;
  log: Logger;
  runId: string;
  /** Opened for writing; the writer lock is held for the whole run. */
  warehouse: Warehouse;
  /** The service client, connected on first use (the embedded emulator when no service is configured). */
  service(): Promise<ServiceClient>;
  /** Aborted on SIGINT, SIGTERM or the run timeout: finish or roll back the current site, then stop. */
  signal: AbortSignal;
  options: JobOptions;
  progress: Progress;
  /**
   * Given each step's summary lines as the step ends (runner/chain.ts), so a terminal shows them
   * then rather than at the end of the run; they stay in the chain's summary too.
   */
  stepEnded?(lines: readonly string[]): void;
  /** The clock, injectable for tests. */
  now(): number;
}

export interface Failure {
  siteId?: string;
  resource?: string;
  /** The one item that failed alone (a listed site, a model, a vintage), when not the whole resource. */
  item?: string;
  /** Where in the item the answer broke the interface. */
  fieldPath?: string;
  reason: string;
}

export interface JobOutcome {
  status: 'ok' | 'partial' | 'failed';
  /** Rows written per table. */
  rows: Record<string, number>;
  /** Rows removed per table (retention). */
  removed?: Record<string, number>;
  failures: Failure[];
  /** Documented variants filled in, per `resource.field` (see SiteResponse and the series schemas). */
  defaulted?: Record<string, number>;
  /** Lines for the human summary on stdout. */
  summary?: string[];
}

export interface Job {
  name: string;
  description: string;
  /** Cron expression used when config/efsync.yaml names none; null: run only when asked. */
  schedule: string | null;
  /** Whether the job takes `--dry-run` (JobOptions.dryRun). */
  dryRun?: boolean;
  run(ctx: JobContext): Promise<JobOutcome>;
}

export function defineJob(job: Job): Job {
  return job;
}
