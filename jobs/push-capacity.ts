// Pushes the capacity timelines of the capacity folder (capacity.dir) to the service: every file
// validated first (one invalid file pushes nothing), then only the sites that changed, each push
// recorded in the ledger (capacity_pushes). `--site` narrows the push, never the validation.
import { pushCapacity } from '../src/capacity/job.js';
import { defineJob } from '../src/job.js';

export default defineJob({
  name: 'push-capacity',
  description: 'Push changed capacity timelines from config/capacity/ to the service, with a ledger',
  // Hourly: a merged config change reaches the service within the hour; unchanged files push nothing.
  schedule: '5 * * * *',
  run: pushCapacity,
});
