// What a job is: a name, a default schedule and a function composed of src/ calls, and what a run
// hands it (its context). Jobs (jobs/*.ts) and the domain functions they compose take it; the
// runner runs them.
import type { ServiceClient } from './api/client.js';
import type { LoadedConfig, Resource } from './config.js';
import type { Shard } from './lake/shard.js';
import type { Logger } from './log.js';
import type { JobOutcome } from './outcome.js';
import type { Progress } from './progress.js';
import type { Warehouse } from './warehouse/warehouse.js';

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
  /** apply-sites: the saved plan to apply (`efsync sites apply PLAN.json`); absent: plan and apply. */
  plan?: string;
  /** apply-sites: delete the managed sites whose file was removed (never a protected one). */
  allowDelete?: boolean;
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
