// The top-level commands and the module of src/cli/ that registers each: the one table main.ts
// registers from.
import type { Command } from 'commander';

type Register = (program: Command) => void;

/**
 * Every top-level command, in the order help lists them, with the module that registers it. A run
 * loads only the module of the command it names, so that `efsync sync` starts without the report,
 * the lake or the emulator's code; help, and a name that is not here, load them all.
 */
export const COMMANDS: readonly { names: readonly string[]; load: () => Promise<Register> }[] = [
  { names: ['demo'], load: async () => (await import('./demo.js')).registerDemoCommands },
  { names: ['sync'], load: async () => (await import('./sync.js')).registerSyncCommands },
  {
    names: ['run', 'schedule', 'status', 'config'],
    load: async () => (await import('./runner.js')).registerRunnerCommands,
  },
  { names: ['sites'], load: async () => (await import('./sites.js')).registerSitesCommands },
  { names: ['capacity'], load: async () => (await import('./capacity.js')).registerCapacityCommands },
  { names: ['accuracy'], load: async () => (await import('./accuracy.js')).registerAccuracyCommands },
  { names: ['retention'], load: async () => (await import('./retention.js')).registerRetentionCommands },
  { names: ['sql'], load: async () => (await import('./sql.js')).registerSqlCommands },
  { names: ['export'], load: async () => (await import('./export.js')).registerExportCommands },
  { names: ['snapshot'], load: async () => (await import('./snapshot.js')).registerSnapshotCommands },
  { names: ['lake'], load: async () => (await import('./lake.js')).registerLakeCommands },
  { names: ['emulator'], load: async () => (await import('./emulator.js')).registerEmulatorCommands },
];

/**
 * Registers on `program` the command that `args` (the arguments after the script) names, or
 * every command when they name none of them (help, a mistyped name): commander then lists them.
 * `--version` with no command needs none.
 */
export async function registerCommands(program: Command, args: readonly string[]): Promise<void> {
  const name = commandName(args, program);
  if (name === undefined && args.some((arg) => arg === '--version' || arg === '-V')) return;
  const named = COMMANDS.find((c) => c.names.includes(name ?? ''));
  for (const register of await Promise.all((named ? [named] : COMMANDS).map((c) => c.load()))) register(program);
}

/** The first argument that is neither a global option nor the value of one: the command's name. */
function commandName(args: readonly string[], program: Command): string | undefined {
  const takesValue = new Set(program.options.filter((o) => o.required || o.optional).map((o) => o.long));
  for (let i = 0; i < args.length; i++) {
    if (!args[i].startsWith('-')) return args[i];
    if (takesValue.has(args[i])) i++;
  }
  return undefined;
}
