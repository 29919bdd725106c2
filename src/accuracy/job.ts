// Accuracy as a run of the runner scores it: the body of the accuracy job (jobs/accuracy.ts, the
// nightly chain's last step) and of `efsync accuracy`, in the run's warehouse with the accuracy
// DuckDB settings.
import { reportPath } from '../config.js';
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import { DAY, startOfUtcDay } from '../time.js';
import { accuracyStepSettings, withDuckDBSettings } from '../warehouse/settings.js';
import { headlineTable } from './output/format.js';
import { ledgerLine } from './input/incremental.js';
import { runWarehouseAccuracy, settingsFromConfig, type AccuracySettings, type WarehouseRun } from './score.js';

/**
 * Valid times scored when the run names no window: from 00:00 UTC 30 days before now, up to now.
 * The start is a UTC midnight so that each night one whole day leaves the window: its statistics
 * (kept per UTC day) go with it, and no day is left half in it to be summed again.
 */
const DEFAULT_WINDOW = 30 * DAY;

/** Scores the warehouse of a run with `settings`; a site left out makes the run partial. */
export async function scoreInRun(
  ctx: JobContext,
  settings: AccuracySettings,
): Promise<{ outcome: JobOutcome; run: WarehouseRun }> {
  const { memory_limit, threads } = ctx.config.accuracy;
  const run = await withDuckDBSettings(ctx.warehouse, accuracyStepSettings({ memory_limit, threads }), () =>
    runWarehouseAccuracy(ctx.warehouse, settings, { runId: ctx.runId, now: ctx.now(), signal: ctx.signal }),
  );
  const failures = run.result.skipped.map((s) => ({ siteId: s.siteId, resource: 'accuracy', reason: s.reason }));
  return { run, outcome: { status: failures.length ? 'partial' : 'ok', rows: run.written, failures } };
}

/**
 * Scores the run's window (`--from`/`--to`, else the last 30 days) with the config's settings,
 * writes the report, and sums it up: the headline table, the ledger's line, the report's path.
 */
export async function scoreWindowInRun(ctx: JobContext): Promise<JobOutcome> {
  const to = ctx.options.to ?? ctx.now();
  const { outcome, run } = await scoreInRun(ctx, {
    ...settingsFromConfig(ctx.config.accuracy, ctx.config.service.interval_label, ctx.config.capacity.dir),
    from: ctx.options.from ?? startOfUtcDay(to - DEFAULT_WINDOW),
    to,
    sites: ctx.options.sites,
    reportPath: reportPath(ctx.config),
  });
  const ledger = run.result.ledger ? [ledgerLine(run.result.ledger)] : [];
  return {
    ...outcome,
    summary: [...headlineTable(run.result.rows).split('\n'), ...ledger, `report: ${run.reportPath}`],
  };
}
