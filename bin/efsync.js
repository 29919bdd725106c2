#!/usr/bin/env node
// Runs the JavaScript that `npm ci` compiled into dist/ (the prepare script, scripts/build.js):
// no compiler at run time. After editing src/ or jobs/, `npm run build` compiles them again.
// CommonJS (bin/package.json), not ESM: Node loads an ESM entry through libuv's thread pool,
// which starts the pool before this file runs; the pool's size is read once, when it starts.
// V8's compiled code of the modules is kept between runs where Node can (22.1 and later:
// module.enableCompileCache, in the OS's temporary folder or NODE_COMPILE_CACHE;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off): a command starts ~0.1 s sooner, twice where it
// restarts itself (below). Node 20 has no such cache.
require('node:module').enableCompileCache?.();
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { PerformanceObserver } = require('node:perf_hooks');
const { pathToFileURL } = require('node:url');
const { getHeapSpaceStatistics, setFlagsFromString } = require('node:v8');

// One thread in libuv's pool, unless set already. efsync runs one DuckDB statement at a time
// on a connection, and Node runs each on a thread of that pool; each thread that calls DuckDB
// gets an arena of its own in DuckDB's jemalloc and in glibc's malloc, each keeping the pages
// it freed. The default four only add arenas, for no speed: DuckDB's own threads (sync.threads)
// do its parallel work.
process.env.UV_THREADPOOL_SIZE ??= '1';

// The V8 heap is bounded. Left alone, V8 lets it grow to up to 4x its live data before it
// collects the old generation. The sync's live data is bounded by design (sync.rows_in_memory),
// and the heap may grow only HEAP_GROWING_PERCENT (20%) past what the last full collection kept:
// a flag V8 reads at each collection, so it is set here on every Node (it costs a little more
// time in major collections; a sync under a budget past the default sets a floor under it:
// dist/src/resources/heap-floor.js).
// A hard cap is a start-up flag, so where Node can (22.15 and later: process.execve) the process
// restarts itself once with it, keeping its pid (signals and supervisors see one process): the
// memory budget's share of it (--memory, EFSYNC_MEMORY, resources.memory, the cgroup's limit, or
// 300 MB: dist/src/cli/heap.js, docs/warehouse.md "Memory budget"; 192 MB at 300 MB), with
// the young generation's two semi-spaces sized by the budget too (8 MB up to the default budget,
// up to 32 MB past it: Node 26 alone lets them reach 64 MB, which raises a sync's peak; smaller
// ones cost more time in minor collections), and with glibc's malloc held to one arena
// (MALLOC_ARENA_MAX, read only at start; unless set already; bin/efsync says why) rather than one
// per thread that allocates. Node 20 cannot restart in place, and a child process would add the
// memory of a process of its own: there the cap is the live data and the growth above, and the
// semi-spaces are held in process at the budget's size, at most V8's own 16 MB
// (holdYoungGeneration); start node with --max-old-space-size for a hard cap too.
// --max-old-space-size already given leaves the cap, the young generation and the arenas as they
// are.
const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
const given = (name) => flags.some((flag) => flag.startsWith(name));
const cli = join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');
// The semi-spaces of a command whose budget or config is wrong (it exits 2 before any work).
const DEFAULT_SEMI_SPACE_MB = 8;
if (!existsSync(cli)) {
  process.stderr.write('efsync is not built (no dist/src/cli/main.js): run npm ci, or npm run build\n');
  process.exit(2);
}
// The old process's libuv pool, started by this import, ends with it: the restart starts afresh.
import(pathToFileURL(join(__dirname, '..', 'dist', 'src', 'cli', 'heap.js')).href)
  .then(({ launchSizesFor, HEAP_GROWING_PERCENT }) => {
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    return launchSizesFor(process.argv.slice(2), process.env);
  })
  .then((sizes) => {
    // null: a wrong budget or config, which the command reports (exit 2) before any work.
    if (sizes !== null) holdFreedPages(sizes.allocatorDecayMs);
    if (sizes !== null && !given('--max-old-space-size') && process.execve) restart(sizes);
    else start(sizes?.semiSpaceMb ?? DEFAULT_SEMI_SPACE_MB);
  });

/**
 * DuckDB allocates through a jemalloc of its own, linked into its library, which reads this
 * variable when the library loads (after this, on any Node). By default it keeps the pages it
 * freed for 1 s, then marks them free (MADV_FREE) but still resident for 1 s more, and only purges
 * while it allocates, so such pages add to a step's peak. Here they go back to the OS after the
 * budget's `decayMs` (src/resources/sizes.ts: a second at and above the default budget, 10 ms below
 * it), still when the arena next allocates: DuckDB turns jemalloc's background thread off at start
 * (its allocator_background_threads, false by default), whatever this says. Unless set already.
 */
function holdFreedPages(decayMs) {
  process.env.DUCKDB_JE_MALLOC_CONF ??= `dirty_decay_ms:${decayMs},muzzy_decay_ms:0`;
}

/** The command, in this process, its young generation held at `semiMb` unless a flag sizes it. */
function start(semiMb) {
  if (!given('--max-semi-space-size')) holdYoungGeneration(semiMb);
  import(pathToFileURL(cli).href);
}

/** The process again, in its own pid, with the heap capped and the young generation sized as the budget says. */
function restart({ heapMb, semiSpaceMb }) {
  process.execve(
    process.execPath,
    [
      process.execPath,
      `--max-old-space-size=${heapMb}`,
      `--max-semi-space-size=${semiSpaceMb}`,
      ...process.execArgv,
      ...process.argv.slice(1),
    ],
    { MALLOC_ARENA_MAX: '1', ...process.env },
  );
}

/**
 * Where the process cannot restart (Node 20), the young generation is held at `semiMb` MB
 * semi-spaces all the same, as the restart's --max-semi-space-size does: V8 doubles them from
 * 1 MB up to 16 MB (32 MB of RSS) as a sync's garbage survives, and reads its growth factor at
 * each doubling, so once they reach `semiMb` the factor becomes 1 and they grow no more: that
 * lowers a sync's peak for no more CPU, where holding them at 1 MB from the start would cost
 * much more CPU in minor collections. At 16 MB and more they grow as V8 lets them.
 */
function holdYoungGeneration(semiMb) {
  const observer = new PerformanceObserver(() => {
    const young = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
    if (young && young.space_size >= 2 * semiMb * 1024 * 1024) {
      setFlagsFromString('--semi-space-growth-factor=1');
      observer.disconnect();
    }
  });
  observer.observe({ entryTypes: ['gc'] });
}
