// Syncs every resource (or `--only` some, else sync.resources of the config) of every site:
// `efsync sync` is this job, run once through the runner like `efsync run sync`.
import { syncJob } from '../src/sync/index.js';

export default syncJob;
