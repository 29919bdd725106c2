// Every model's own output, keyed by as_of: each vintage the model issued (its cron fire times,
// mapped onto the site's listed issue times), read as of its publication.
// A malformed vintage fails alone (recorded with its model, as_of and field path); an output with
// `as_of: null` is a model that has produced nothing yet: nothing to store, and no failure.
import pLimit from 'p-limit';
import type { ModelOutput } from '../api/schemas.js';
import { isServiceError } from '../api/errors.js';
import type { Failure } from '../runner/job.js';
import { formatInstant } from '../time.js';
import { loadModelOutputs } from '../warehouse/loader.js';
import { outputColumns } from './normalize.js';
import { loadOptions, skippedUpdates, type ResourceSync } from './types.js';
import { cronFires, planModelVintages } from './windows.js';

type Read = { output: ModelOutput } | { rejected: Failure };

/** A vintage the model issued: one with an as_of (null: the model has produced nothing yet). */
type Vintage = ModelOutput & { as_of: number };

export const outputsSync: ResourceSync<Vintage[]> = {
  async fetch(env, site, mark) {
    const [models, updates] = await Promise.all([site.models(), site.updates()]);
    const plans = models.map((model) =>
      planModelVintages(env.now, mark, env.settings, updates, cronFires(model.schedule?.value), env.backfill),
    );
    const limit = pLimit(env.requestsPerSite);
    const reads = await Promise.all(
      models.flatMap((model, m) =>
        plans[m].reads.map((read) =>
          limit(async (): Promise<Read> => {
            try {
              return {
                output: await env.client.getModelOutput(model.id, {
                  start: read.start,
                  end: read.end,
                  ...(read.asOf === null ? {} : { asOf: read.asOf }),
                }),
              };
            } catch (error) {
              if (!isServiceError(error) || error.kind !== 'malformed') throw error;
              const vintage = read.asOf === null ? 'latest' : `as_of ${formatInstant(read.asOf)}`;
              return {
                rejected: {
                  siteId: site.siteId,
                  resource: 'outputs',
                  item: `model ${model.id} ${vintage}`,
                  ...(error.fieldPath !== undefined ? { fieldPath: error.fieldPath } : {}),
                  reason: error.message,
                },
              };
            }
          }),
        ),
      ),
    );
    const outputs = reads.flatMap((read) => ('output' in read ? [read.output] : []));
    const rejected = reads.flatMap((read) => ('rejected' in read ? [read.rejected] : []));
    const vintages = outputs.filter((output): output is Vintage => output.as_of !== null);
    return {
      data: vintages,
      rows: vintages.reduce((sum, output) => sum + output.valid_time.length, 0),
      // A rejected vintage is read again next run: the sync state stays where it was.
      mark:
        rejected.length > 0 ? null : planModelVintages(env.now, mark, env.settings, updates, null, env.backfill).mark,
      rejected,
      defaulted: [
        ...skippedUpdates('outputs', updates),
        ...outputs.flatMap((output) => output.defaulted.map((field) => `outputs.${field}`)),
      ],
    };
  },
  load: (env, site, fetched) =>
    loadModelOutputs(
      env.warehouse,
      site.siteId,
      fetched.data.map(outputColumns),
      loadOptions(env, 'outputs', fetched.mark),
    ),
};
