// The tests' child processes run the built JavaScript, as a user's command does: loading src/
// through a TypeScript compiler cost each child ~1 s of CPU, and the suite starts hundreds. Once
// per test run (vitest's globalSetup) dist/ is built again where any source is newer than it
// (`npm run build`: src/, jobs/, the native statistics), and the tests' own child programs
// (test/**/*.ts, types stripped file by file) are written to dist/test/, where their imports of
// ../src/ and ../jobs/ reach the built modules. In-process tests import src/ itself.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
/** What `npm run build` compiles from: a change to any of them makes dist/ stale. */
const SOURCES = ['src', 'jobs', 'native', 'scripts', 'tsconfig.json', 'tsconfig.build.json'];
/** The command, built: `node BUILT_CLI ARGS` runs `efsync ARGS`; every build writes it anew. */
export const BUILT_CLI = join(DIST, 'src', 'cli', 'main.js');

/** The built form of a test's child program: `builtChild('test/sync-child.ts')`. */
export const builtChild = (source: string) => join(DIST, source.replace(/\.ts$/, '.js'));

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

const newest = (paths: string[]) => Math.max(...paths.map((path) => statSync(path).mtimeMs));

function stale(): boolean {
  try {
    return newest(SOURCES.flatMap((source) => files(join(ROOT, source)))) > statSync(BUILT_CLI).mtimeMs;
  } catch {
    return true;
  }
}

// typescript is loaded here only: the test workers import this file for the paths above.
async function writeChildPrograms(): Promise<void> {
  const { default: ts } = await import('typescript');
  rmSync(join(DIST, 'test'), { recursive: true, force: true });
  for (const file of files(join(ROOT, 'test')).filter((f) => f.endsWith('.ts'))) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    const out = builtChild(relative(ROOT, file));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
}

export default async function setup(): Promise<void> {
  if (stale()) execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.js')], { stdio: 'inherit' });
  await writeChildPrograms();
}
