// The V8 heap's cap for bin/efsync.js, which restarts the process with it before any command
// runs (a start-up flag): the memory budget's share (src/resources/sizes.ts), from the same
// --memory, --config, EFSYNC_MEMORY, config file and cgroup the command itself reads.
import { loadConfig, sizesOf } from '../config.js';

/**
 * The heap cap in MiB for a command line (the arguments after the script), or null when its
 * budget or config is wrong: the command then says what is wrong and exits 2.
 */
export function heapMbFor(args: readonly string[], env: NodeJS.ProcessEnv): number | null {
  try {
    return sizesOf(loadConfig(flagValue(args, '--config'), env, { memory: flagValue(args, '--memory') })).heapMb;
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
