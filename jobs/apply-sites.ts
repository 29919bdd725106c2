// Applies the sites folder (sites.dir) to the service: every file checked first (one invalid file
// applies nothing), then the plan carried out in order, each change recorded in site_changes.
// `efsync sites apply PLAN.json` runs it with a saved plan, which it applies exactly or refuses.
import { defineJob } from '../src/job.js';
import { applySites } from '../src/sites/job.js';

export default defineJob({
  name: 'apply-sites',
  description: 'Create and update sites and their models serving from config/sites/, with a ledger',
  // Run only when asked: changes to sites are reviewed (`efsync sites plan`), then applied.
  schedule: null,
  run: applySites,
});
