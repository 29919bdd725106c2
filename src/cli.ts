// The `efsync` command line: each part of the product registers its own commands, every one of
// them through the boundary (boundary.ts): typed errors, one exit-code table, one signal handler.
import { Command, Option } from 'commander';
import { registerAccuracyCommands } from './accuracy/commands.js';
import { commanderExit, installSignalHandler } from './boundary.js';
import { registerCapacityCommands } from './capacity/commands.js';
import { registerDemoCommands } from './demo.js';
import { registerEmulatorCommands } from './emulator/commands.js';
import { registerExportCommands } from './export/commands.js';
import { registerLakeCommands } from './lake/commands.js';
import { LOG_FORMATS, setLogOutput, type LogFormat } from './log.js';
import { registerRetentionCommands } from './retention/commands.js';
import { registerRunnerCommands } from './runner/commands.js';
import { registerSqlCommands } from './sql.js';
import { registerSyncCommands } from './sync/commands.js';

installSignalHandler();

const program = new Command()
  .name('efsync')
  .description('Sync an energy forecasting service into a DuckDB warehouse, push capacity, score forecasts')
  .option('--debug', 'print the stack trace of an error (it is always in the JSON log)')
  .addOption(
    new Option(
      '--log-format <format>',
      'logs on stderr: human lines on a terminal and JSON elsewhere (auto, the default), or always human, or always json',
    ).choices(LOG_FORMATS),
  )
  .option('--verbose', 'on a terminal, show the info log lines too (warn and above otherwise)')
  .hook('preAction', (_program, action) => {
    const flags = action.optsWithGlobals<{ logFormat?: LogFormat; verbose?: boolean }>();
    setLogOutput({ format: flags.logFormat ?? 'auto', verbose: flags.verbose === true });
  })
  .showHelpAfterError('(efsync <command> --help lists its options)')
  // Commander's own errors (unknown option, missing argument) throw instead of exiting 1, which
  // means partial here; set before the commands are added, so every command inherits it.
  .exitOverride();

registerDemoCommands(program);
registerSyncCommands(program);
registerRunnerCommands(program);
registerCapacityCommands(program);
registerAccuracyCommands(program);
registerRetentionCommands(program);
registerSqlCommands(program);
registerExportCommands(program);
registerLakeCommands(program);
registerEmulatorCommands(program);

await program.parseAsync(process.argv).catch((error: unknown) => {
  process.exitCode = commanderExit(error);
});
