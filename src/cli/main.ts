// The `efsync` command line (bin/efsync.js runs its compiled dist/src/cli/main.js): one module of
// src/cli/ per command group registers its commands, every one of them through the boundary
// (boundary.ts): typed errors, one exit-code table; one signal handler (src/runner/signals.ts).
import { Command, Option } from 'commander';
import { installSignalHandler } from '../runner/signals.js';
import { commanderExit, outliveGoneReaders } from './boundary.js';
import { registerCommands } from './commands.js';
import { LOG_FORMATS, setLogOutput, type LogFormat } from '../log.js';
import { packageVersion } from '../package.js';

installSignalHandler();
outliveGoneReaders();

const program = new Command()
  .name('efsync')
  .description('Sync an energy forecasting service into a DuckDB warehouse, push capacity, score forecasts')
  .version(packageVersion(), '-V, --version', 'print the version of efsync')
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

await registerCommands(program, process.argv.slice(2));

await program.parseAsync(process.argv).catch((error: unknown) => {
  process.exitCode = commanderExit(error);
});
