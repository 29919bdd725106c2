// `npm run build`, run by `npm ci` through the prepare script: compiles src/ and jobs/ into dist/
// once, so the command runs JavaScript with no compiler loaded. dist/src and dist/jobs are emptied
// first, so a removed module (a job above all: every file in dist/jobs is loaded) does not linger
// there; the SQL migrations, views.sql and comments.yaml are copied beside the compiled migrate.js
// and comments.js, which read them at run time. Then the native extension (build-native.js), which does not fail the
// build where it cannot be made; dist/native is left in place until the new file replaces it,
// as a test that builds runs beside others that load it.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

for (const dir of ['src', 'jobs']) rmSync(`${root}dist/${dir}`, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
cpSync(`${root}src/warehouse/migrations`, `${root}dist/src/warehouse/migrations`, { recursive: true });
for (const file of ['views.sql', 'comments.yaml'])
  cpSync(`${root}src/warehouse/${file}`, `${root}dist/src/warehouse/${file}`);
execFileSync(process.execPath, [`${root}scripts/build-native.js`], { stdio: 'inherit' });
