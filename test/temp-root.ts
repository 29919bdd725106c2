// Every temporary folder of a test run (the tests' own, their child processes', DuckDB's) under
// one root that is removed when the run ends: the tests make hundreds of warehouses, and left in
// /tmp they filled the disk of a machine that ran the suite all day. os.tmpdir() reads TMPDIR at
// each call, and the test workers and the processes they start inherit it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'efsync-test-run-'));
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
