import { DuckDBInstance } from '@duckdb/node-api';
for (const b of [60000, 250000]) {
  const inst = await DuckDBInstance.create(`/tmp/walx/b${b}.duckdb`);
  const c = await inst.connect();
  const r = await c.runAndReadAll(`SELECT count(DISTINCT row_group_id) rgs, count(*) segs, sum(count) FILTER (WHERE column_id=0) nrows, count(DISTINCT block_id) blocks FROM pragma_storage_info('forecasts')`);
  const r2 = await c.runAndReadAll(`SELECT total_blocks, used_blocks, free_blocks, block_size FROM pragma_database_size()`);
  console.log(b, r.getRowObjects(), r2.getRowObjects());
}
