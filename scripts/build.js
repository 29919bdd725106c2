// `npm run build`, run by `npm ci` through the prepare script: compiles src/ and jobs/ into dist/
// once, so the command runs JavaScript with no compiler loaded. dist/ is emptied first, so a
// removed module (a job above all: every file in dist/jobs is loaded) does not linger there; the
// SQL migrations are copied beside the compiled migrate.js, which reads them at run time.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(`${root}dist`, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
cpSync(`${root}src/warehouse/migrations`, `${root}dist/src/warehouse/migrations`, { recursive: true });
