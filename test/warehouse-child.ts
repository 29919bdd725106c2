// A second process for the warehouse tests: holds a warehouse file open and answers commands,
// one JSON object per line on stdin, one JSON answer per line on stdout.
//   node dist/test/warehouse-child.js reader <file> <read_only|read_write>
//     DuckDB directly, as an analyst's notebook would.
//   node dist/test/warehouse-child.js writer <path> <lockWaitMs> <job> <runId> [<hotWindowMs> <nowMs>]
//     efsync's Warehouse, taking the writer lock (with a hot window, its publish moves closed days).
// While the writer waits for the lock it says {"waiting": holder}.
// Commands: {"sql": "..."} → {"rows": [...]}; {"publish": true} → {"ok": true};
// {"exit": true} exits without closing (the lock must go with the process); {"kill": true} dies
// by SIGKILL (nothing runs); stdin end closes.
import { createInterface } from 'node:readline';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { Warehouse } from '../src/warehouse/warehouse.js';

interface Held {
  query(sql: string): Promise<unknown[]>;
  publish(): Promise<void>;
  close(): Promise<void>;
}

function reply(message: unknown): void {
  process.stdout.write(`${JSON.stringify(message, (_, v) => (typeof v === 'bigint' ? Number(v) : v))}\n`);
}

async function openReader(file: string, mode: string): Promise<Held> {
  const instance = await DuckDBInstance.create(file, {
    access_mode: mode === 'read_only' ? 'READ_ONLY' : 'READ_WRITE',
  });
  const connection: DuckDBConnection = await instance.connect();
  return {
    query: async (sql) => (await connection.runAndReadAll(sql)).getRowObjectsJS(),
    publish: async () => {
      throw new Error('a reader does not publish');
    },
    close: async () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

async function openWriter(
  path: string,
  lockWaitMs: string,
  job: string,
  runId: string,
  hotWindowMs?: string,
  nowMs?: string,
): Promise<Held> {
  const warehouse = await Warehouse.open({
    path,
    lockWaitMs: Number(lockWaitMs),
    holder: { job, runId },
    onWait: (holder) => reply({ waiting: holder }),
    ...(hotWindowMs === undefined ? {} : { hotWindowMs: Number(hotWindowMs), now: () => Number(nowMs) }),
  });
  return {
    query: (sql) => warehouse.all(sql),
    publish: () => warehouse.publish(),
    close: () => warehouse.close(),
  };
}

async function main(): Promise<void> {
  const [role, ...args] = process.argv.slice(2);
  let held: Held;
  try {
    held =
      role === 'reader'
        ? await openReader(args[0], args[1])
        : await openWriter(args[0], args[1], args[2], args[3], args[4], args[5]);
  } catch (error) {
    reply({ error: (error as Error).message, name: (error as Error).name });
    return;
  }
  reply({ ready: true, pid: process.pid });
  for await (const line of createInterface({ input: process.stdin })) {
    const command = JSON.parse(line) as { sql?: string; publish?: boolean; exit?: boolean; kill?: boolean };
    if (command.exit) process.exit(0);
    if (command.kill) process.kill(process.pid, 'SIGKILL');
    try {
      if (command.sql !== undefined) reply({ rows: await held.query(command.sql) });
      else if (command.publish) {
        await held.publish();
        reply({ ok: true });
      }
    } catch (error) {
      reply({ error: (error as Error).message });
    }
  }
  await held.close();
}

await main();
