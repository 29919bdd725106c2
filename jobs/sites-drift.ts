// Compares the sites folder with the service and changes nothing: per site, whether the service
// still holds what its file says (site_drift, `efsync status`, the metrics, the drift alerts).
import { defineJob } from '../src/job.js';
import { checkDrift } from '../src/sites/job.js';

export default defineJob({
  name: 'sites-drift',
  description: 'Check that the service holds what config/sites/ says (plan only), per site',
  // Hourly, between the capacity push (:05) and the nightly chain: a change made by hand on the
  // service is reported within the hour.
  schedule: '35 * * * *',
  run: checkDrift,
});
