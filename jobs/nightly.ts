// The nightly chain: sync everything in order, then score the forecasts. A partial sync (some
// sites failed) still lets accuracy run; a step that fails as a whole stops the chain.
import { runChain } from '../src/runner/chain.js';
import { defineJob } from '../src/runner/job.js';
import { loadJobs } from '../src/runner/registry.js';

export const NIGHTLY_STEPS = [
  'sync-sites',
  'sync-models',
  'sync-forecasts',
  'sync-outputs',
  'sync-actuals',
  'accuracy',
] as const;

export default defineJob({
  name: 'nightly',
  description: 'Sync sites, models, forecasts, model outputs and actuals, then score accuracy',
  schedule: '0 2 * * *',
  run: async (ctx) => runChain(ctx, await loadJobs(), NIGHTLY_STEPS),
});
