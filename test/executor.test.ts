// The executor (src/warehouse/executor.ts): a piece of work that runs out of DuckDB's memory is
// split into halves down to an item alone, which gets one more try after memory is handed back
// and then fails with its error; a hand-back gives the C heap's free pages to the kernel. The work here runs a statement that really runs out of a small
// memory_limit when its piece holds more items than fit.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailedError } from '../src/errors.js';
import { type DuckDBHandle, isOutOfMemory, openDuckDB } from '../src/warehouse/duckdb.js';
import { firstThatFits, halvesOf, runInHalves, runSplitting, skippedForMemory } from '../src/warehouse/executor.js';
import { builtChild } from './built.js';

const run = promisify(execFile);

let db: DuckDBHandle;

beforeAll(async () => {
  db = await openDuckDB(':memory:', { memoryLimit: '20MB' });
  // nothing spills: a list held whole runs out of the limit
  await db.connection.run(`SET temp_directory = ''`);
});

afterAll(() => db.close());

/** A statement that runs out of 20MB when `fits` is false, and goes through when it is true. */
async function statement(connection: DuckDBConnection, fits: boolean): Promise<void> {
  await connection.run(`SELECT length(list(i)) FROM range(${fits ? 1_000 : 4_000_000}) t(i)`);
}

/** Work that runs out of memory for a piece of more than `fit` items; records each piece it was given. */
function workFitting(fit: number, tried: string[][]) {
  return async (piece: readonly string[]) => {
    tried.push([...piece]);
    await statement(db.connection, piece.length <= fit);
    return piece.length;
  };
}

const ITEMS = ['a', 'b', 'c', 'd', 'e'];

describe('runInHalves', () => {
  it('runs a piece that fits whole', async () => {
    const tried: string[][] = [];
    expect(await runInHalves(ITEMS, workFitting(5, tried))).toEqual([5]);
    expect(tried).toEqual([ITEMS]);
  });

  it('splits a piece that runs out into halves, the first the longer, in order, each split again', async () => {
    const tried: string[][] = [];
    const handedBack: number[] = [];
    const done = await runInHalves(ITEMS, workFitting(2, tried), {
      handBack: async () => {
        handedBack.push(tried.length);
      },
    });
    expect(tried).toEqual([ITEMS, ['a', 'b', 'c'], ['a', 'b'], ['c'], ['d', 'e']]);
    expect(done).toEqual([2, 1, 2]);
    // memory is handed back after each piece that ran out, before any of it goes again
    expect(handedBack).toEqual([1, 2]);
  });

  it('gives an item alone that runs out one more try after the hand-back, then fails with its error', async () => {
    const tried: string[][] = [];
    let handedBack = 0;
    const failed = await runInHalves(['a', 'b'], workFitting(0, tried), {
      handBack: async () => {
        handedBack++;
      },
    }).catch((error: unknown) => error);
    expect(isOutOfMemory(failed)).toBe(true);
    expect(tried).toEqual([['a', 'b'], ['a'], ['a']]);
    expect(handedBack).toBe(2);
  });

  it('retries an item alone that fits after the hand-back', async () => {
    let memoryBack = false;
    const tried: string[][] = [];
    const done = await runInHalves(
      ['a'],
      async (piece) => {
        tried.push([...piece]);
        await statement(db.connection, memoryBack);
      },
      {
        handBack: async () => {
          memoryBack = true;
        },
      },
    );
    expect(done).toHaveLength(1);
    expect(tried).toEqual([['a'], ['a']]);
  });

  it("runs an item alone's one more try on one of the warehouse's threads, then sets its threads back", async () => {
    const warehouse = {
      all: async <T>(sql: string) => (await db.connection.runAndReadAll(sql)).getRowObjectsJS() as T[],
      run: async (sql: string) => void (await db.connection.run(sql)),
    };
    const threads = async () =>
      Number((await warehouse.all<{ t: bigint }>(`SELECT current_setting('threads') AS t`))[0].t);
    await warehouse.run('SET threads = 4');
    const tried: number[] = [];
    const done = await runInHalves(
      ['a'],
      async () => {
        tried.push(await threads());
        await statement(db.connection, tried.at(-1) === 1);
      },
      { handBack: async () => undefined, warehouse },
    );
    expect(done).toHaveLength(1);
    expect(tried).toEqual([4, 1]);
    expect(await threads()).toBe(4);
  });

  it('without a hand-back, fails an item alone at once: its retry would meet the same memory', async () => {
    const tried: string[][] = [];
    const failed = await runInHalves(['a', 'b'], workFitting(0, tried)).catch((error: unknown) => error);
    expect(isOutOfMemory(failed)).toBe(true);
    expect(tried).toEqual([['a', 'b'], ['a']]);
  });

  it('does not split a piece that failed for another reason', async () => {
    const tried: string[][] = [];
    const failed = await runInHalves(ITEMS, async (piece) => {
      tried.push([...piece]);
      await db.connection.run('SELECT * FROM no_such_table');
    }).catch((error: unknown) => error);
    expect(String(failed)).toMatch(/no_such_table/);
    expect(tried).toEqual([ITEMS]);
  });

  it('goes on with what the hand-back says is left of the piece, and with nothing when nothing is', async () => {
    const tried: string[][] = [];
    let left: string[] | null = ['b', 'c', 'd'];
    const done = await runInHalves(ITEMS, workFitting(1, tried), {
      handBack: async () => undefined,
      remaining: async (piece) => {
        const rest = left && piece.filter((item) => left!.includes(item));
        left = null; // the next piece that runs out is done by the hand-back
        return rest;
      },
    });
    expect(tried).toEqual([ITEMS, ['b', 'c'], ['d']]);
    expect(done).toEqual([1]);
  });

  it('settles each piece that went through, outside the splitting; hands a failed one to `failed`', async () => {
    const settled: string[][] = [];
    const tried: string[][] = [];
    const done = await runInHalves(
      ['a', 'b', 'c'],
      async (piece) => {
        tried.push([...piece]);
        await statement(db.connection, piece.length <= 1);
        if (piece.includes('c')) throw new Error('constraint violated');
        return `ok ${piece.join('')}`;
      },
      {
        handBack: async () => undefined,
        settle: async (piece) => {
          settled.push([...piece]);
        },
        failed: async (piece, error) => `failed ${piece.join('')}: ${(error as Error).message}`,
      },
    );
    expect(tried).toEqual([['a', 'b', 'c'], ['a', 'b'], ['a'], ['b'], ['c']]);
    expect(done).toEqual(['ok a', 'ok b', 'failed c: constraint violated']);
    expect(settled).toEqual([['a'], ['b']]);
  });

  it("says plainly when a retry after running out of memory meets the failed attempt's deletes, and stops", async () => {
    // DuckDB's error when a DELETE's aborted marks remain (duckdb PR #16905); not cheap to provoke for real
    const tried: string[][] = [];
    const failed = await runInHalves(
      ['a', 'b'],
      async (piece) => {
        tried.push([...piece]);
        if (tried.length === 1) await statement(db.connection, false);
        throw new Error('TransactionContext Error: Conflict on tuple deletion!');
      },
      { handBack: async () => undefined },
    ).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(FailedError);
    expect((failed as FailedError).message).toMatch(
      /^DuckDB ran out of memory \(Out of Memory Error: .*\), and the retry/,
    );
    expect((failed as FailedError).message).toMatch(/\(TransactionContext Error: Conflict on tuple deletion!\)$/);
    expect(((failed as FailedError).cause as Error).message).toMatch(/Conflict on tuple deletion/);
    expect(tried).toEqual([['a', 'b'], ['a']]);
  });
});

describe('runSplitting', () => {
  it('splits a piece of any shape by its own halves', async () => {
    const tried: [number, number][] = [];
    const done = await runSplitting(
      [0, 8] as [number, number],
      async ([from, to]) => {
        tried.push([from, to]);
        await statement(db.connection, to - from <= 2);
        return to - from;
      },
      {
        halves: ([from, to]) => {
          const middle = Math.floor((from + to) / 2);
          return to - from < 2 ? null : [[from, middle] as [number, number], [middle, to] as [number, number]];
        },
      },
    );
    expect(tried).toEqual([
      [0, 8],
      [0, 4],
      [0, 2],
      [2, 4],
      [4, 8],
      [4, 6],
      [6, 8],
    ]);
    expect(done).toEqual([2, 2, 2, 2]);
  });

  it('halvesOf a list: the first the longer, none of fewer than two', () => {
    expect(halvesOf([1, 2, 3])).toEqual([[1, 2], [3]]);
    expect(halvesOf([1])).toBeNull();
    expect(halvesOf([])).toBeNull();
  });
});

describe('firstThatFits', () => {
  it('tries each plan in turn while one runs out, and throws the last one’s error', async () => {
    const tried: number[] = [];
    await firstThatFits([1, 4, 16], async (parts) => {
      tried.push(parts);
      await statement(db.connection, parts >= 4);
    });
    expect(tried).toEqual([1, 4]);
    const failed = await firstThatFits([1, 4], (parts) => statement(db.connection, parts > 4)).catch(
      (error: unknown) => error,
    );
    expect(isOutOfMemory(failed)).toBe(true);
  });
});

describe('skippedForMemory', () => {
  it('returns why work that ran out was skipped, null when it went through, and throws other errors', async () => {
    expect(await skippedForMemory(() => statement(db.connection, true))).toBeNull();
    expect(await skippedForMemory(() => statement(db.connection, false))).toMatch(/^Out of Memory Error: [^\n]*$/);
    await expect(skippedForMemory(() => db.connection.run('SELECT * FROM no_such_table'))).rejects.toThrow(
      /no_such_table/,
    );
  });
});

describe('handBackPool', () => {
  it("gives the C heap's free pages back to the kernel, not only its top (efsync_trim)", async () => {
    const { stdout } = await run(process.execPath, [builtChild('test/trim-child.ts')], {
      env: { ...process.env, MALLOC_ARENA_MAX: '1' },
    });
    const rss = JSON.parse(stdout) as { held: number; freed: number; handedBack: number };
    // 125 MiB written, 117 of it freed below a buffer still held: glibc keeps it until trimmed
    expect(rss.freed).toBeGreaterThan(rss.held - 20);
    expect(rss.handedBack).toBeLessThan(rss.freed - 90);
  });
});

describe('the executor alone', () => {
  it('tells out-of-memory errors apart and purges the pool: no other file of src/ does', () => {
    const src = resolve(import.meta.dirname, '../src');
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
    const using = files.filter((file) => /isOutOfMemory|PURGE_LIMIT/.test(readFileSync(join(src, file), 'utf8')));
    // duckdb.ts defines isOutOfMemory (what DuckDB's error says); the executor alone calls it and purges the pool
    expect(using.sort()).toEqual(['warehouse/duckdb.ts', 'warehouse/executor.ts']);
  });
});
