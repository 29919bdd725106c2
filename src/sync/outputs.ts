// Every model's own output, keyed by the as_of its answer carries. A model with a cron schedule
// is read once per fire, as of just before its next fire (windows.ts fireRead), so a vintage
// published late within its period is found; an answer still older than the fire is awaited:
// read again by the next syncs (counted as a failed read only once the next fire has passed), then given up. A model without a readable schedule is read at
// every issue time the site lists. Each read is an item of its own (src/sync/vintages.ts): the
// newest in the run's first pass, the others in its second; one that fails is recorded with its
// model and time and read again later. An
// output with `as_of: null` is a model that has produced nothing yet: nothing to store, no failure.
import type { ModelOutput } from '../api/schemas.js';
import { formatExactInstant, sameInstant } from '../time.js';
import { loadModelOutputs } from '../warehouse/loader.js';
import { outputColumns } from './normalize.js';
import { loadVintages, type ModelRef, type ResourceSync, skippedUpdates, type SyncEnv } from './types.js';
import {
  type ItemResult,
  NOT_PENDING,
  type PendingVintage,
  pendingPiece,
  readEach,
  readNewest,
  settleReads,
  type VintageItem,
  WrongVintage,
} from './vintages.js';
import { cronFires, outputRead, planModelOutputs, planOutputWindow } from './windows.js';

/** A vintage the model issued: one with an as_of (null: the model has produced nothing yet). */
type Vintage = ModelOutput & { as_of: number };

/**
 * The `newest` pass reads each model's newest fire not read yet (and the one before while the
 * newest is not published) and defers the others to the `older` pass, which reads them with the
 * site's pending ones (a backfill reads its window's all at once).
 */
export const outputsSync: ResourceSync<Vintage[]> = {
  async fetch(env, site, mark, pass, piece = []) {
    const models = await site.models();
    const byId = new Map(models.map((model) => [model.id, model]));
    const known = (items: readonly PendingVintage[]) => items.filter((item) => byId.has(item.modelId));
    const read = (item: VintageItem) => readVintage(env, byId.get(item.modelId) as ModelRef, item);
    if (pass === 'older') {
      const results = await readEach(known(piece), env.requestsPerSite, env.signal, read);
      return {
        ...(await settleReads(env, site.siteId, 'outputs', results, pendingPiece(known(piece)), [])),
        mark: null,
      };
    }
    // The site's issue times are read only for a model without a readable schedule: the list
    // holds every issue time since the site's history began (11,800 a site after a year), and
    // the outputs step of a nightly chain read it a second time after the forecasts step.
    const listed = models.some((model) => !cronFires(model.cron));
    const updates = listed ? await site.updates() : null;
    const window = planOutputWindow(env.now, mark, env.settings, env.backfill);
    const items = models.flatMap((model) =>
      planModelOutputs(window, model.cron, updates ?? [], env.now, env.settings.horizon).map((planned) => ({
        modelId: model.id,
        issue: planned.issue,
      })),
    );
    const { results, deferred } = env.backfill
      ? { results: await readEach(items, env.requestsPerSite, env.signal, read), deferred: [] }
      : await readNewest(items, env.requestsPerSite, env.signal, read);
    const pending = env.backfill ? NOT_PENDING : env.pending(site.siteId, 'outputs');
    const settled = await settleReads(env, site.siteId, 'outputs', results, pending, deferred);
    const skipped = updates ? skippedUpdates('outputs', updates) : [];
    return { ...settled, mark: window.mark, defaulted: [...skipped, ...settled.defaulted] };
  },
  load: (env, site, fetched) =>
    loadVintages(env, 'outputs', fetched, (values, options) =>
      loadModelOutputs(env.warehouse, site.siteId, values.map(outputColumns), options),
    ),
};

/**
 * One item read and checked: the answer's as_of is at or before the as_of asked (else the service
 * ignored it) and, for a fire, at or after the fire (else its vintage is not out yet: awaited).
 * The rows kept are the vintage's own window [as_of, as_of + horizon].
 */
async function readVintage(env: SyncEnv, model: ModelRef, item: VintageItem): Promise<ItemResult<Vintage | null>> {
  const read = outputRead(item.issue, model.cron, env.now, env.settings.horizon);
  const output = await env.client.getModelOutput(model.id, { start: read.start, end: read.end, asOf: read.asOf });
  if (output.as_of === null) return { item, value: null };
  const asOf = output.as_of;
  if (asOf > read.asOf && !sameInstant(asOf, read.asOf))
    throw new WrongVintage(
      `asked as_of ${formatExactInstant(read.asOf)}, the answer is the vintage of ${formatExactInstant(asOf)}`,
    );
  if (read.fire !== null && asOf < read.fire && !sameInstant(asOf, read.fire)) {
    const reason = `no vintage published for the cron fire (as of ${formatExactInstant(read.asOf)} the newest is ${formatExactInstant(asOf)})`;
    // Before the next fire the vintage may still come: no read counted until its period is over.
    return read.asOf >= env.now ? { item, skipped: `${reason} yet` } : { item, awaited: reason };
  }
  return { item, value: ownWindow(output as Vintage, asOf + env.settings.horizon) };
}

/**
 * The rows of `output` from its as_of to `end`: what a read over [as_of, as_of + horizon] would
 * have returned. Most answers hold only those rows, so they are checked before any is copied.
 */
function ownWindow(output: Vintage, end: number): Vintage {
  const within = (time: number) => time >= output.as_of && time <= end;
  if (output.valid_time.every(within)) return output;
  const keep: number[] = [];
  for (let i = 0; i < output.valid_time.length; i++) if (within(output.valid_time[i])) keep.push(i);
  return {
    ...output,
    valid_time: keep.map((i) => output.valid_time[i]),
    forecast: keep.map((i) => output.forecast[i]),
    capacity: keep.map((i) => output.capacity[i]),
  };
}
