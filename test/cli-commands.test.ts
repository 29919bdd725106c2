// The table of top-level commands (src/cli/commands.ts): it names every command the modules
// register, and a command line registers only the module of the command it names.
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMANDS, registerCommands } from '../src/cli/commands.js';

const program = () => new Command().option('--debug').option('--log-format <format>').option('--verbose');
const names = (p: Command) => p.commands.map((c) => c.name());

describe('the command table', () => {
  it('names every top-level command, in the order help lists them', async () => {
    const all = program();
    await registerCommands(all, ['--help']);
    expect(names(all)).toEqual(COMMANDS.flatMap((c) => c.names));
  });

  it('registers only the command the line names, past the global options and their values', async () => {
    for (const args of [
      ['sync'],
      ['--log-format', 'json', 'sync', '--plan'],
      ['--log-format=json', '--debug', 'sync'],
    ]) {
      const one = program();
      await registerCommands(one, args);
      expect(names(one)).toEqual(['sync']);
    }
    const runner = program();
    await registerCommands(runner, ['status', '--check']);
    expect(names(runner)).toEqual(['run', 'schedule', 'status', 'config']);
  });

  it('registers none for --version alone, and the named one beside it', async () => {
    const none = program();
    await registerCommands(none, ['--version']);
    expect(names(none)).toEqual([]);
    const one = program();
    await registerCommands(one, ['sync', '--version']);
    expect(names(one)).toEqual(['sync']);
  });

  it('registers them all for help and for a name that is no command, so commander can list them', async () => {
    for (const args of [[], ['help', 'sync'], ['synk']]) {
      const all = program();
      await registerCommands(all, args);
      expect(names(all)).toHaveLength(COMMANDS.flatMap((c) => c.names).length);
    }
  });
});
