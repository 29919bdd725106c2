// The nightly chain: sync everything in order, apply retention, then score the forecasts. A
// partial sync (some sites failed) still lets the steps after it run; a step that fails as a
// whole stops the chain.
import { runChain } from '../src/runner/chain.js';
import { defineJob } from '../src/job.js';
import { loadJobs } from '../src/runner/registry.js';

export const NIGHTLY_STEPS = [
  'sync-sites',
  'sync-models',
  'sync-forecasts',
  'sync-outputs',
  'sync-actuals',
  'retention',
  'accuracy',
] as const;

export default defineJob({
  name: 'nightly',
  description: 'Sync sites, models, forecasts, model outputs and actuals, apply retention, then score accuracy',
  schedule: '0 2 * * *',
  run: async (ctx) => runChain(ctx, await loadJobs(), NIGHTLY_STEPS),
});
