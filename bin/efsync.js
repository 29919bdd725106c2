#!/usr/bin/env node
// Runs the JavaScript that `npm ci` compiled into dist/ (the prepare script, scripts/build.js):
// no compiler at run time. After editing src/ or jobs/, `npm run build` compiles them again.
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';

// The V8 heap is bounded. Left alone, V8 lets it grow to up to 4x its live data before it
// collects the old generation (a 200-site sync's heap reached 430 MB holding ~100 MB). The
// sync's live data is bounded by design (sync.rows_in_memory), and the heap may grow only 20%
// past what the last full collection kept: a flag V8 reads at each collection, so it is set here
// on every Node (it cost ~0.7 s of major collections in a 100-site sync: 0.8 s against 0.1 s).
setFlagsFromString('--heap-growing-percent=20');
// A hard cap is a start-up flag, so where Node can (22.15 and later: process.execve) the process
// restarts itself once with it, keeping its pid (signals and supervisors see one process), with
// the young generation held to two 8 MB semi-spaces (Node 26 let it reach 64 MB: a 40-site sync
// peaked at 365 MB, 313 MB with this, for ~0.2 s more of minor collections), and with glibc's
// malloc held to two arenas (MALLOC_ARENA_MAX, read only at start; unless set
// already) rather than one per thread that allocates. Node 20 cannot restart in place, and a
// child process would add its own ~40 MB: there the cap is the live data and the growth above;
// start node with --max-old-space-size for a hard cap too. EFSYNC_HEAP_MB=0, or the flag already
// given, leaves the cap and the arenas as they are.
const heapMb = Number(process.env.EFSYNC_HEAP_MB ?? 192);
if (!Number.isInteger(heapMb) || heapMb < 0) {
  process.stderr.write(`EFSYNC_HEAP_MB: a whole number of MB (0: no bound), not "${process.env.EFSYNC_HEAP_MB}"\n`);
  process.exit(2);
}
const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
if (heapMb > 0 && !flags.some((flag) => flag.startsWith('--max-old-space-size')) && process.execve) {
  process.execve(
    process.execPath,
    [
      process.execPath,
      `--max-old-space-size=${heapMb}`,
      '--max-semi-space-size=8',
      ...process.execArgv,
      ...process.argv.slice(1),
    ],
    { MALLOC_ARENA_MAX: '2', ...process.env },
  );
}

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('efsync is not built (no dist/src/cli.js): run npm ci, or npm run build\n');
  process.exit(2);
}
await import(cli.href);
