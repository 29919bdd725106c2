// The sizes bin/efsync.js applies before any command runs, since only a start-up flag or a
// variable read at load sets them: the V8 heap's cap and young generation (it restarts the
// process with them) and jemalloc's decay (before DuckDB's library loads). The memory budget's
// (src/resources/sizes.ts), from the same --memory, --config, EFSYNC_MEMORY, config file and
// cgroup the command itself reads.
import { loadConfig, sizesOf } from '../config.js';
import type { Sizes } from '../resources/sizes.js';

export { HEAP_GROWING_PERCENT } from '../resources/heap-floor.js';

/**
 * The sizes bin/efsync.js applies for a command line (the arguments after the script), or null
 * when its budget or config is wrong: the command then says what is wrong and exits 2.
 */
export function launchSizesFor(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Pick<Sizes, 'heapMb' | 'semiSpaceMb' | 'allocatorDecayMs'> | null {
  try {
    const { heapMb, semiSpaceMb, allocatorDecayMs } = sizesOf(
      loadConfig(flagValue(args, '--config'), env, { memory: flagValue(args, '--memory') }),
    );
    return { heapMb, semiSpaceMb, allocatorDecayMs };
  } catch {
    return null;
  }
}

/** A flag's value, as `--name value` or `--name=value`, as commander reads it. */
function flagValue(args: readonly string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}
