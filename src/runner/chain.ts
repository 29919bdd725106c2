// A job made of other jobs, run in order in one run (one lock, one ledger row, one signal).
// The chain stops only on a fatal step (one that failed as a whole or threw) or on the signal:
// a partial sync, where some sites failed, still lets the steps after it run. Each step's line in
// the summary gives its wall time and peak RSS (measure.ts): what the history bench reads. The
// lines of a step go to `ctx.stepEnded` as it ends, so a terminal shows each step's at once.
import type { JobContext } from '../job.js';
import type { Failure, JobOutcome } from '../outcome.js';
import { describeCost, measureStep } from './measure.js';
import { collectGarbage } from '../warehouse/executor.js';
import { outcomeOf } from './outcome.js';
import type { JobRegistry } from './registry.js';

export async function runChain(ctx: JobContext, registry: JobRegistry, steps: readonly string[]): Promise<JobOutcome> {
  const jobs = steps.map((name) => registry.get(name)); // every step known before the first runs
  const rows: Record<string, number> = {};
  const removed: Record<string, number> = {};
  const failures: Failure[] = [];
  const defaulted: Record<string, number> = {};
  const summary: string[] = [];
  let status: JobOutcome['status'] = 'ok';
  // What a step's committed writes and deletes hold stays in DuckDB's memory, counted against the
  // next step's limit, until a checkpoint (which then purges the pool): a step that another
  // follows ends with one, within its cost, so that the next starts with its whole limit and a
  // step's peak includes writing its work into the file. The first starts after one too. A
  // checkpoint that fails (a full disk) has invalidated DuckDB: the run's error.
  await ctx.warehouse.checkpoint();
  for (const [index, job] of jobs.entries()) {
    if (ctx.signal.aborted) {
      summary.push(`stopped before ${steps.slice(index).join(', ')}`);
      break;
    }
    collectGarbage();
    const ended = measureStep();
    // A step that is a chain itself leaves its lines to this one, which prints them, indented, as it ends.
    const stepCtx = { ...ctx, log: ctx.log.child({ step: job.name }), stepEnded: undefined };
    const outcome = await runStep(ctx, job.name, () => job.run(stepCtx));
    const followed = index < jobs.length - 1 && outcome.status !== 'failed' && !ctx.signal.aborted;
    if (followed) await ctx.warehouse.checkpoint();
    const cost = ended();
    for (const [table, count] of Object.entries(outcome.rows)) rows[table] = (rows[table] ?? 0) + count;
    for (const [table, count] of Object.entries(outcome.removed ?? {})) removed[table] = (removed[table] ?? 0) + count;
    failures.push(...outcome.failures);
    for (const [field, count] of Object.entries(outcome.defaulted ?? {}))
      defaulted[field] = (defaulted[field] ?? 0) + count;
    const lines = [
      `${job.name}: ${outcome.status} ${describeCost(cost)}`,
      ...(outcome.summary ?? []).map((line) => `  ${line}`),
    ];
    summary.push(...lines);
    ctx.stepEnded?.(lines);
    if (outcome.status === 'failed') {
      status = 'failed';
      const rest = steps.slice(index + 1);
      if (rest.length > 0) summary.push(`not run after the failure of ${job.name}: ${rest.join(', ')}`);
      break;
    }
    if (outcome.status === 'partial') status = 'partial';
  }
  return { status, rows, removed, failures, defaulted, summary };
}

async function runStep(ctx: JobContext, step: string, run: () => Promise<JobOutcome>): Promise<JobOutcome> {
  try {
    return await run();
  } catch (error) {
    const outcome = outcomeOf(error);
    if (outcome === 'usage' || outcome === 'config') throw error; // the chain's options or config are wrong: exit 2
    const reason = error instanceof Error ? error.message : String(error);
    ctx.log.error({ step, err: error }, 'step failed');
    return { status: 'failed', rows: {}, failures: [{ resource: step, reason }] };
  }
}
