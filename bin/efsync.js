#!/usr/bin/env node
// Runs the JavaScript that `npm ci` compiled into dist/ (the prepare script, scripts/build.js):
// no compiler at run time. After editing src/ or jobs/, `npm run build` compiles them again.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('efsync is not built (no dist/src/cli.js): run npm ci, or npm run build\n');
  process.exit(2);
}
await import(cli.href);
