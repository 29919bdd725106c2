// The `efsync` command line: each part of the product registers its own commands.
import { Command } from 'commander';

const program = new Command()
  .name('efsync')
  .description('Sync an energy forecasting service into a DuckDB warehouse, push capacity, score forecasts')
  .showHelpAfterError();

// Command registrations (one line per area).
import { registerEmulatorCommands } from './emulator/commands.js';
registerEmulatorCommands(program);
import { registerSyncCommands } from './sync/commands.js';
registerSyncCommands(program);
import { registerCapacityCommands } from './capacity/commands.js';
registerCapacityCommands(program);
import { registerRunnerCommands } from './runner/commands.js';
registerRunnerCommands(program);
import { registerAccuracyCommands } from './accuracy/commands.js';
registerAccuracyCommands(program);

await program.parseAsync(process.argv);
