// Syncs models of every site into the warehouse (the nightly chain runs it; schedule it alone in config).
import { defineJob } from '../src/job.js';
import { runSync } from '../src/sync/index.js';

export default defineJob({
  name: 'sync-models',
  description: 'Sync models of every site (or --site ...) into the warehouse',
  schedule: null,
  run: (ctx) => runSync(ctx, ['models']),
});
