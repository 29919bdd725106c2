// A sync in its own process, for the test that kills one mid-way:
//   node dist/test/sync-child.js CONFIG.json NOW_MS
// JSON logs at debug level on stderr ('site synced' per site), the runner's exit code.
import { readFileSync } from 'node:fs';
import { Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import syncJob from '../jobs/sync.js';

const [file, now] = process.argv.slice(2);
const config = { ...Config.parse(JSON.parse(readFileSync(file, 'utf8'))), file };
const result = await runJob(syncJob, { config, now: () => Number(now), log: createLogger({ level: 'debug' }) });
process.exitCode = result.exitCode;
