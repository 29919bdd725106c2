// The `efsync` command line: each part of the product registers its own commands.
import { Command } from 'commander';
import { registerAccuracyCommands } from './accuracy/commands.js';
import { registerCapacityCommands } from './capacity/commands.js';
import { registerDemoCommands } from './demo.js';
import { registerEmulatorCommands } from './emulator/commands.js';
import { registerExportCommands } from './export/commands.js';
import { registerRunnerCommands } from './runner/commands.js';
import { registerSyncCommands } from './sync/commands.js';

const program = new Command()
  .name('efsync')
  .description('Sync an energy forecasting service into a DuckDB warehouse, push capacity, score forecasts')
  .showHelpAfterError();

registerDemoCommands(program);
registerSyncCommands(program);
registerRunnerCommands(program);
registerCapacityCommands(program);
registerAccuracyCommands(program);
registerExportCommands(program);
registerEmulatorCommands(program);

await program.parseAsync(process.argv);
