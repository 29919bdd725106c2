// Compares the sites folder with the service and changes nothing: per site, whether the service
// still holds what its file says (site_drift, `efsync status`, the metrics, the drift alerts).
import { defineJob } from '../src/job.js';
import { checkDrift } from '../src/sites/job.js';

export default defineJob({
  name: 'sites-drift',
  description: 'Check that the service holds what config/sites/ says (plan only), per site',
  // Daily, after the nightly chain: a plan reads every site's models (a request each), which at a
  // thousand sites is a tenth of an hour's quota of 100 requests a minute.
  schedule: '35 6 * * *',
  run: checkDrift,
});
