// Syncs every resource (or `--only` some, else sync.resources of the config) of every site:
// `efsync sync` is this job, run once through the runner like `efsync run sync`.
import { defineJob } from '../src/job.js';
import { runSync } from '../src/sync/index.js';

export default defineJob({
  name: 'sync',
  description: 'Sync sites, models, forecasts, model outputs and actuals (or --only some) into the warehouse',
  schedule: null,
  run: (ctx) => runSync(ctx),
});
