#!/usr/bin/env node
// Runs the JavaScript that `npm ci` compiled into dist/ (the prepare script, scripts/build.js):
// no compiler at run time. After editing src/ or jobs/, `npm run build` compiles them again.
import { existsSync } from 'node:fs';

// The V8 heap is bounded: left alone, V8 lets it grow towards a quarter of RAM before it collects
// hard (230-250 MB in a 1,000-site sync whose live data is under 100 MB). The bound is a start-up
// flag, so where Node can (22.15 and later: process.execve) the process restarts itself once
// with it, keeping its pid (signals and supervisors see one process), and with glibc's malloc
// held to two arenas (MALLOC_ARENA_MAX, read only at start; unless set already) rather than one
// per thread that allocates. On Node 20, start node with --max-old-space-size yourself.
// EFSYNC_HEAP_MB=0, or the flag already given, leaves both as they are.
const heapMb = Number(process.env.EFSYNC_HEAP_MB ?? 192);
if (!Number.isInteger(heapMb) || heapMb < 0) {
  process.stderr.write(`EFSYNC_HEAP_MB: a whole number of MB (0: no bound), not "${process.env.EFSYNC_HEAP_MB}"\n`);
  process.exit(2);
}
const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
if (heapMb > 0 && !flags.some((flag) => flag.startsWith('--max-old-space-size')) && process.execve) {
  process.execve(
    process.execPath,
    [process.execPath, `--max-old-space-size=${heapMb}`, ...process.execArgv, ...process.argv.slice(1)],
    { MALLOC_ARENA_MAX: '2', ...process.env },
  );
}

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('efsync is not built (no dist/src/cli.js): run npm ci, or npm run build\n');
  process.exit(2);
}
await import(cli.href);
