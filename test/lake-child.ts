// One shard of a sync into the lake, in its own process, for the tests that run shards at once
// and kill one:   node dist/test/lake-child.js CONFIG.json NOW_MS I/N
// JSON logs at debug level on stderr ('site synced' per site), the runner's exit code.
import { readFileSync } from 'node:fs';
import { Config } from '../src/config.js';
import { parseShard } from '../src/lake/shard.js';
import { createLogger } from '../src/log.js';
import { runJob } from '../src/runner/run.js';
import syncJob from '../jobs/sync.js';

const [file, now, shard] = process.argv.slice(2);
const config = { ...Config.parse(JSON.parse(readFileSync(file, 'utf8'))), file };
const result = await runJob(syncJob, {
  config,
  options: { shard: parseShard(shard, 'argv') },
  now: () => Number(now),
  log: createLogger({ level: 'debug' }),
});
process.exitCode = result.exitCode;
