// `npm run bench -- --shards N`: the sync as N shard processes at once writing one lake of Delta tables
// (and as 1, 2, ... shards below N, each into a fresh lake), then `efsync lake compact` of the
// N-shard lake, then that lake scored: N `efsync accuracy --lake --shard` processes at once, and
// the reduce. Rows are those the shards committed (their Delta adds); a shard's commit time is
// its run's publish (the Delta commits of every table, from its summary line). Prints figures only.
import { join } from 'node:path';
import { lakeFiles } from '../src/lake/layout.js';
import { stepsOf } from './history.js';
import { runMeasured } from './process.js';

export interface ShardFigures {
  shards: number;
  seconds: number;
  rows: number;
  /** Each shard's commit to the lake, in seconds, by shard index. */
  commitS: number[];
}

export interface LakeFigures {
  runs: ShardFigures[];
  /** The N shards' scores at once (wall time, and each shard's process), then the reduce's process. */
  score: { seconds: number; shardS: number[]; reduceS: number };
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
    const shards = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        runMeasured(cli, ['sync', '--sink', 'parquet', '--lake', lake, '--shard', `${i}/${n}`], env, {
          keepStdout: true,
        }),
      ),
    );
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (shards.some((s) => s.code !== 0)) throw new Error(`a shard of ${n} exited with ${shards.map((s) => s.code)}`);
    const rows = [...(await lakeFiles(lake)).values()].flat().reduce((sum, f) => sum + f.rows, 0);
    runs.push({ shards: n, seconds, rows, commitS: shards.map((s) => commitSeconds(s.stdout)) });
  }
  const filesBefore = [...(await lakeFiles(lake)).values()].flat().length;
  const compacted = await runMeasured(cli, ['lake', 'compact', '--lake', lake], env);
  if (compacted.code !== 0) throw new Error(`efsync lake compact exited with ${compacted.code}`);
  const filesAfter = [...(await lakeFiles(lake)).values()].flat().length;
  const score = await scoreShards(cli, env, lake, max);
  return { runs, score, compact: { seconds: compacted.seconds, filesBefore, filesAfter } };
}

/** N shards scoring the lake at once, then the reduce (docs/lake.md, Scoring a lake). */
async function scoreShards(
  cli: string,
  env: NodeJS.ProcessEnv,
  lake: string,
  n: number,
): Promise<LakeFigures['score']> {
  const t0 = process.hrtime.bigint();
  const shards = await Promise.all(
    Array.from({ length: n }, (_, i) => runMeasured(cli, ['accuracy', '--lake', lake, '--shard', `${i}/${n}`], env)),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (shards.some((s) => s.code !== 0)) throw new Error(`a shard's score exited with ${shards.map((s) => s.code)}`);
  const reduced = await runMeasured(cli, ['accuracy', '--lake', lake], env);
  if (reduced.code !== 0) throw new Error(`the reduce exited with ${reduced.code}`);
  return { seconds, shardS: shards.map((s) => s.seconds), reduceS: reduced.seconds };
}

/** The publish step of a sync's summary: for the lake sink, its Delta commits. */
function commitSeconds(stdout: string): number {
  const seconds = stepsOf(stdout).publish?.seconds;
  if (seconds === undefined) throw new Error(`a shard's summary has no publish line:\n${stdout}`);
  return seconds;
}

export function printShards(figures: LakeFigures): void {
  const lines = figures.runs.map((r) => [
    `${r.shards} shard${r.shards === 1 ? '' : 's'}`,
    `${r.seconds.toFixed(2)} s`,
    `${r.rows.toLocaleString('en-US')} rows`,
    `${Math.round(r.rows / r.seconds).toLocaleString('en-US')} rows/s`,
    `commit ${Math.min(...r.commitS).toFixed(2)}-${Math.max(...r.commitS).toFixed(2)} s`,
  ]);
  const s = figures.score;
  const c = figures.compact;
  lines.push(['lake compact', `${c.seconds.toFixed(2)} s`, `${c.filesBefore} files to ${c.filesAfter}`, '', '']);
  const perShard = `per shard ${Math.min(...s.shardS).toFixed(2)}-${Math.max(...s.shardS).toFixed(2)} s`;
  lines.push([`score ${s.shardS.length} shards`, `${s.seconds.toFixed(2)} s`, '', '', perShard]);
  lines.push(['reduce', `${s.reduceS.toFixed(2)} s`, '', '', '']);
  for (const line of lines)
    console.log(
      line
        .map((cell, i) => (i === 0 ? cell.padEnd(14) : cell.padStart(i === 4 ? 22 : 18)))
        .join('')
        .trimEnd(),
    );
}
