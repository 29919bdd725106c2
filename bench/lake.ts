// `npm run bench -- --shards N`: the sync as N shard processes at once writing one lake of Delta tables
// (and as 1, 2, ... shards below N, each into a fresh lake), then `efsync lake compact` of the
// N-shard lake. Rows are those the shards committed (their Delta adds). Prints figures only.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { lakeFiles } from '../src/lake/layout.js';

export interface ShardFigures {
  shards: number;
  seconds: number;
  rows: number;
}

export interface LakeFigures {
  runs: ShardFigures[];
  compact: { seconds: number; filesBefore: number; filesAfter: number };
}

export async function benchShards(
  cli: string,
  env: NodeJS.ProcessEnv,
  work: string,
  max: number,
): Promise<LakeFigures> {
  const counts = [1, 2, 4, 8, 16].filter((n) => n < max).concat(max);
  const runs: ShardFigures[] = [];
  let lake = '';
  for (const n of counts) {
    lake = join(work, `lake-${n}`);
    const t0 = process.hrtime.bigint();
    const codes = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        runCli(cli, ['sync', '--sink', 'parquet', '--lake', lake, '--shard', `${i}/${n}`], env),
      ),
    );
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (codes.some((c) => c !== 0)) throw new Error(`a shard of ${n} exited with ${codes.join(', ')}`);
    const rows = [...(await lakeFiles(lake)).values()].flat().reduce((sum, f) => sum + f.rows, 0);
    runs.push({ shards: n, seconds, rows });
  }
  const filesBefore = [...(await lakeFiles(lake)).values()].flat().length;
  const t0 = process.hrtime.bigint();
  const code = await runCli(cli, ['lake', 'compact', '--lake', lake], env);
  if (code !== 0) throw new Error(`efsync lake compact exited with ${code}`);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { runs, compact: { seconds, filesBefore, filesAfter: [...(await lakeFiles(lake)).values()].flat().length } };
}

function runCli(cli: string, args: string[], env: NodeJS.ProcessEnv): Promise<number | null> {
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve) => child.on('exit', resolve));
}

export function printShards(figures: LakeFigures): void {
  const lines = figures.runs.map((r) => [
    `${r.shards} shard${r.shards === 1 ? '' : 's'}`,
    `${r.seconds.toFixed(2)} s`,
    `${r.rows.toLocaleString('en-US')} rows`,
    `${Math.round(r.rows / r.seconds).toLocaleString('en-US')} rows/s`,
  ]);
  const c = figures.compact;
  lines.push(['lake compact', `${c.seconds.toFixed(2)} s`, `${c.filesBefore} files to ${c.filesAfter}`, '']);
  for (const line of lines)
    console.log(line.map((cell, i) => (i === 0 ? cell.padEnd(14) : cell.padStart(18))).join(''));
}
