// Retention as a run does it: the body of the retention job (jobs/retention.ts, which the nightly
// chain and `efsync retention` run).
import type { JobContext } from '../job.js';
import type { JobOutcome } from '../outcome.js';
import type { MovedDay } from '../warehouse/cold.js';
import { withDuckDBSettings } from '../warehouse/settings.js';
import { applyRetention, describeRetention, retentionPolicy } from './apply.js';

/** Removes what retention no longer keeps, or with `--dry-run` counts it and removes nothing. */
export async function retainInRun(ctx: JobContext): Promise<JobOutcome> {
  const dryRun = ctx.options.dryRun === true;
  if (!ctx.config.retention.enabled && !dryRun)
    return { status: 'ok', rows: {}, failures: [], summary: ['retention.enabled is false: nothing removed'] };
  const policy = retentionPolicy(ctx.config.retention);
  // It deletes, a slice at a time, what the sync wrote: under the sync's DuckDB settings. The
  // closed days go cold first, so that a first sync's long history is thinned a file at a time.
  const { memory_limit, threads } = ctx.config.sync;
  const { moved, result } = await withDuckDBSettings(ctx.warehouse, { memory_limit, threads }, async () => {
    const moved = dryRun ? [] : await ctx.warehouse.moveClosedDays();
    const request = { runId: ctx.runId, now: ctx.now(), dryRun, signal: ctx.signal };
    return { moved, result: await applyRetention(ctx.warehouse, policy, request) };
  });
  return {
    status: 'ok',
    rows: {},
    removed: dryRun ? {} : result.removed,
    failures: [],
    summary: [...describeMove(moved), ...describeRetention(result, policy, dryRun)],
  };
}

/** The line saying which closed days went cold before retention read them (none: no line). */
function describeMove(moved: readonly MovedDay[]): string[] {
  if (moved.length === 0) return [];
  const days = new Set(moved.map((m) => m.day)).size;
  const tables = new Set(moved.map((m) => m.table)).size;
  const rows = moved.reduce((sum, m) => sum + m.rows, 0);
  return [
    `moved to the cold store first: ${days} closed day${days === 1 ? '' : 's'} of ${tables} table${tables === 1 ? '' : 's'}, ${rows} rows`,
  ];
}
