import { DuckDBInstance } from '@duckdb/node-api';
import { statSync, rmSync } from 'node:fs';
const batch = Number(process.argv[2]); const total = Number(process.argv[3] ?? 6e6); const ret = process.argv[4] === 'ret';
const path = `/tmp/walx/b${batch}.duckdb`; rmSync(path, {force:true}); rmSync(path+'.wal',{force:true});
const inst = await DuckDBInstance.create(path, { checkpoint_threshold: '256MB', memory_limit: '64MB', threads: '1' });
const c = await inst.connect();
await c.run(`CREATE TABLE forecasts (site_id VARCHAR NOT NULL, model_name VARCHAR NOT NULL, model_version INTEGER NOT NULL, update_time TIMESTAMPTZ NOT NULL, valid_time TIMESTAMPTZ NOT NULL, forecast DOUBLE, capacity DOUBLE)`);
const cpu0 = process.cpuUsage(); const t0 = performance.now(); let stageMs = 0, insMs = 0, comMs = 0;
for (let off = 0; off < total; off += batch) {
  const a = performance.now();
  // each site: 1000 rows per vintage; site id from offset so batches hold distinct sites
  await c.run(`CREATE OR REPLACE TEMP TABLE st AS SELECT 's'||((${off}+i)//10000) site_id, 'm' model_name, 1 model_version, TIMESTAMPTZ '2026-01-01' + to_hours((((${off}+i)%10000)//100)::BIGINT) update_time, TIMESTAMPTZ '2026-01-01' + to_minutes(((${off}+i)%100 * 15)::BIGINT) valid_time, random() forecast, 1.0 capacity FROM range(${batch}) t(i)`);
  const b = performance.now();
  await c.run('BEGIN');
  const sql = `INSERT INTO forecasts SELECT s.* FROM st s ANTI JOIN (SELECT * FROM forecasts WHERE site_id IN (SELECT DISTINCT site_id FROM st)) f USING (site_id, model_name, model_version, update_time, valid_time)` + (ret ? ' RETURNING site_id' : '');
  if (ret) { const r = await c.runAndReadAll(sql); r.currentRowCount; } else await c.run(sql);
  const d = performance.now();
  await c.run('COMMIT');
  const e = performance.now();
  stageMs += b - a; insMs += d - b; comMs += e - d;
}
await c.run('CHECKPOINT');
const cpu = process.cpuUsage(cpu0);
console.log(`batch ${batch} ret ${ret} wall ${((performance.now()-t0)/1000).toFixed(1)} s cpu ${((cpu.user+cpu.system)/1e6).toFixed(1)} s stage ${(stageMs/1000).toFixed(1)} insert ${(insMs/1000).toFixed(1)} commit ${(comMs/1000).toFixed(1)} db ${(statSync(path).size/1e6).toFixed(0)} MB`);
