// One writer of a Delta table in its own process, for the tests that race writers and kill them:
//   node dist/test/lake-delta-child.js TABLE WRITER COMMITS [checkpoint]
// Appends COMMITS commits of one file each (rows WRITER, 0..ROWS-1 of that commit), each a
// new version won by put-if-absent against the other writers; with `checkpoint`, writes the
// checkpoint that is due afterwards. Prints `committed <version>` per commit.
import { checkpointIfDue } from '../src/lake/delta/checkpoint-write.js';
import { commit } from '../src/lake/delta/commit.js';
import { writeDataFiles } from '../src/lake/delta/files.js';
import { readSnapshot } from '../src/lake/delta/snapshot.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { quoteLiteral } from '../src/warehouse/sql.js';
import { join } from 'node:path';

/** The test's ROWS. */
const ROWS = 3;

const [table, writer, commits, mode] = process.argv.slice(2);
const db = await openDuckDB(':memory:');
try {
  for (let i = 0; i < Number(commits); i++) {
    const snapshot = await readSnapshot(db.connection, table);
    const adds = await writeDataFiles(db.connection, {
      table,
      query: `SELECT ${quoteLiteral(writer)} AS site_id, (TIMESTAMPTZ '2026-11-01 00:00:00+00' + to_hours(${i} * 24 + r)) AS valid_time,
        r::DOUBLE AS value, '2026-11' AS month FROM range(${ROWS}) t(r)`,
      partitionColumns: ['month'],
      prefix: `part-${writer}-${i}`,
      statsColumns: ['site_id', 'valid_time'],
      dataChange: true,
      staging: join(table, '..', '_staging'),
    });
    const done = await commit({
      table,
      readVersion: snapshot.version,
      operation: 'WRITE',
      actions: adds.map((add) => ({ add })),
    });
    process.stdout.write(`committed ${done.version}\n`);
  }
  if (mode === 'checkpoint') await checkpointIfDue(db.connection, table);
} finally {
  db.close();
}
