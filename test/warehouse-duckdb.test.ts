// What efsync takes for DuckDB running out of memory: the failures a smaller piece of work, or a
// checkpoint first, gets through (their statement or transaction rolled back).
import { describe, expect, it } from 'vitest';
import { isOutOfMemory, openDuckDB } from '../src/warehouse/duckdb.js';

describe('isOutOfMemory', () => {
  it('is a statement DuckDB stopped at its memory limit', async () => {
    const db = await openDuckDB(':memory:', { memoryLimit: '1MB' });
    try {
      const failed = await db.connection
        .run('SELECT range, range::VARCHAR FROM range(10000000) ORDER BY range DESC')
        .catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(Error);
      expect(isOutOfMemory(failed)).toBe(true);
    } finally {
      db.close();
    }
  });

  it('is a commit that ran out, whose message has no "Out of Memory" prefix', () => {
    // as COPY FROM DATABASE's commit failed on a 630 MB writer file under 64 MB
    const commit =
      'TransactionContext Error: Failed to commit: failed to allocate data of size 512.0 KiB (60.8 MiB/61.0 MiB used)';
    expect(isOutOfMemory(new Error(commit))).toBe(true);
    expect(
      isOutOfMemory(new Error('TransactionContext Error: Failed to commit: PRIMARY KEY or UNIQUE constraint violated')),
    ).toBe(false);
    expect(isOutOfMemory(new Error('IO Error: No space left on device'))).toBe(false);
    expect(isOutOfMemory('Out of Memory Error')).toBe(false);
  });
});
