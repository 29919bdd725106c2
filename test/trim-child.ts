// A process whose C heap holds much freed memory below a block still in use, which then hands
// memory back through the executor (handBackPool), for executor.test.ts: prints its RSS in MiB
// with the buffers held, once they are freed, and after the hand-back, as JSON.
//   node dist/test/trim-child.js
import { readFileSync } from 'node:fs';
import { connectionRunner } from '../src/accuracy/compute/metrics.js';
import { openDuckDB } from '../src/warehouse/duckdb.js';
import { collectGarbage, handBackPool } from '../src/warehouse/executor.js';

const rssMib = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

const db = await openDuckDB(':memory:');
// DuckDB's worker threads trim the heap themselves when they go idle: one thread, none to idle
await db.connection.run('SET threads = 1');
const warehouse = {
  ...connectionRunner(db.connection),
  memoryLimit: null,
  exclusive: <T>(fn: () => Promise<T>) => fn(),
};
// 2,000 buffers of 64 KiB (below glibc's mmap threshold: they come from its heap), each written
// so that its pages are resident, all held until the last is made; then every 16th is kept, so
// the heap's top stays in use when the others are freed
const buffers = Array.from({ length: 2_000 }, (_, i) => Buffer.allocUnsafeSlow(64 * 1024).fill(i % 251));
const held = rssMib();
const kept = buffers.filter((_, i) => i % 16 === 15);
buffers.length = 0;
collectGarbage();
await new Promise((resolve) => setTimeout(resolve, 200));
const freed = rssMib();
await handBackPool(warehouse);
const handedBack = rssMib();
db.close();
console.log(JSON.stringify({ held, freed, handedBack, kept: kept.length }));
