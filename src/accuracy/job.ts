// Accuracy as a run of the runner scores it: the body of the accuracy job (jobs/accuracy.ts) and
// of `efsync accuracy`, in the run's warehouse with the accuracy DuckDB settings.
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import { withDuckDBSettings } from '../warehouse/settings.js';
import { runWarehouseAccuracy, type AccuracySettings, type WarehouseRun } from './score.js';

/** Scores the warehouse of a run with `settings`; a site left out makes the run partial. */
export async function scoreInRun(
  ctx: JobContext,
  settings: AccuracySettings,
): Promise<{ outcome: JobOutcome; run: WarehouseRun }> {
  const { memory_limit, threads } = ctx.config.accuracy;
  const run = await withDuckDBSettings(ctx.warehouse, { memory_limit, threads }, () =>
    runWarehouseAccuracy(ctx.warehouse, settings, { runId: ctx.runId, now: ctx.now() }),
  );
  const failures = run.result.skipped.map((s) => ({ siteId: s.siteId, resource: 'accuracy', reason: s.reason }));
  return { run, outcome: { status: failures.length ? 'partial' : 'ok', rows: run.written, failures } };
}
