// The layering of efsync, read from its import statements: every part of src/, jobs/ and bench/
// and the parts it may import (docs/architecture.md draws the same table), and no import cycles.
// Adding an import that breaks a rule fails here, naming the file and the import; a file that
// belongs to no part fails too, so a new part is given its place here and in the drawing; and
// only src/cli defines commands (imports commander).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

/** What every part may import: the building blocks that import nothing of any part. */
const SHARED = [
  'time.ts',
  'fault.ts',
  'yaml.ts',
  'log.ts',
  'human-log.ts',
  'progress.ts',
  'outcome.ts',
  'errors.ts',
  'package.ts',
];

/** Every domain part: what the command line may import, and the bench with the jobs besides. */
const BELOW_CLI = [
  'resources',
  'config',
  'api',
  'warehouse',
  'emulator',
  'service',
  'lake',
  'job',
  'capacity',
  'sites',
  'accuracy',
  'retention',
  'export',
  'sync',
  'runner',
] as const;

/** Each part and the parts it may import (besides itself and SHARED), lowest first. */
const ALLOWED: Record<string, readonly string[]> = {
  resources: [],
  config: ['resources'],
  api: [],
  warehouse: ['resources'],
  emulator: ['api'],
  service: ['api', 'config', 'emulator'],
  lake: ['warehouse'],
  job: ['api', 'config', 'lake', 'warehouse'],
  capacity: ['api', 'warehouse', 'job'],
  sites: ['api', 'config', 'warehouse', 'job', 'capacity'],
  accuracy: ['config', 'warehouse', 'capacity', 'lake', 'job'],
  retention: ['config', 'warehouse', 'job'],
  export: ['warehouse'],
  sync: ['api', 'config', 'resources', 'warehouse', 'lake', 'job'],
  runner: ['api', 'config', 'resources', 'warehouse', 'lake', 'service', 'job'],
  jobs: ['job', 'capacity', 'sites', 'accuracy', 'retention', 'sync', 'runner'],
  cli: BELOW_CLI,
  bench: [...BELOW_CLI, 'jobs'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import and re-export of every file (type-only ones too), as paths under the repository. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const pattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g;
  for (const file of ['src', 'jobs', 'bench'].flatMap((dir) => sourceFiles(join(ROOT, dir)))) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(pattern)].map((match) => {
      const target = resolve(dirname(file), match[1] ?? match[2]).replace(/\.js$/, '.ts');
      return relative(ROOT, target);
    });
    graph.set(relative(ROOT, file), [...new Set(targets)]);
  }
  return graph;
}

const graph = importGraph();

/** The part a file belongs to: `shared`, a folder of src/ or a file of it (`config`), jobs or bench; null: none. */
function partOf(file: string): string | null {
  const [top, second, third] = file.split('/');
  if (top === 'jobs' || top === 'bench') return top;
  if (top !== 'src' || second === undefined) return null;
  if (third === undefined && SHARED.includes(second)) return 'shared';
  const part = second.replace(/\.ts$/, '');
  return part in ALLOWED ? part : null;
}

/** The imports of the files of `part` that reach a part it may not import. */
function violations(part: string): string[] {
  const allowed = new Set([part, 'shared', ...(part === 'shared' ? [] : ALLOWED[part])]);
  return [...graph].flatMap(([file, targets]) =>
    partOf(file) === part
      ? targets.filter((target) => !allowed.has(partOf(target) ?? target)).map((target) => `${file} imports ${target}`)
      : [],
  );
}

/** Every import cycle, each as a path a → b → … → a (one per strongly connected set of files). */
function cycles(edges: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const target of edges.get(node) ?? []) {
      if (state.get(target) === 'open') found.push([...stack.slice(stack.indexOf(target)), target].join(' → '));
      else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...edges.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

/**
 * Accuracy's own layout: its entry points at the top (score.ts, job.ts), and below them input/
 * (sites, quality, alignment, the ledger), compute/ (metrics, statistics) and output/ (stored
 * results, the report, the terminal table). A sub-folder imports no entry point, and input/ and
 * compute/ import nothing of output/: results are written last, from what the rest returns.
 */
const ACCURACY_ENTRY_POINTS = ['score.ts', 'job.ts', 'lake.ts'];
const ACCURACY_FOLDERS = ['input', 'compute', 'output'];

/** Where a file of src/accuracy sits: its sub-folder, or its own name at the top; null outside accuracy. */
function accuracyPlace(file: string): string | null {
  const [src, part, place] = file.split('/');
  return src === 'src' && part === 'accuracy' ? place : null;
}

/** The imports of accuracy's sub-folders that reach an entry point, or output/ from input/ or compute/. */
function accuracyViolations(): string[] {
  return [...graph].flatMap(([file, targets]) => {
    const from = accuracyPlace(file);
    if (from === null || !ACCURACY_FOLDERS.includes(from)) return [];
    return targets
      .filter((target) => {
        const to = accuracyPlace(target);
        return (to !== null && ACCURACY_ENTRY_POINTS.includes(to)) || (from !== 'output' && to === 'output');
      })
      .map((target) => `${file} imports ${target}`);
  });
}

describe('the layering of src/, jobs/ and bench/', () => {
  it('reads the import graph (the reader finds the imports it is meant to)', () => {
    expect(graph.get('src/sync/run.ts')).toContain('src/warehouse/loader.ts');
    expect(graph.get('src/warehouse/loader.ts')).toContain('src/warehouse/commit-queue.ts');
    expect(graph.get('jobs/push-capacity.ts')).toContain('src/capacity/job.ts');
  });

  it('puts every file in a part', () => {
    expect([...graph.keys()].filter((file) => partOf(file) === null)).toEqual([]);
  });

  it('draws the parts one way: no part may import, through others, a part that may import it', () => {
    expect(cycles(new Map(Object.entries(ALLOWED)))).toEqual([]);
  });

  for (const part of ['shared', ...Object.keys(ALLOWED)]) {
    it(`${part} imports only ${part === 'shared' ? 'shared modules' : ['shared', ...ALLOWED[part]].join(', ')}`, () => {
      expect(violations(part)).toEqual([]);
    });
  }

  it('puts every file of src/accuracy in input/, compute/ or output/ but its entry points', () => {
    const places = [...graph.keys()].map(accuracyPlace).filter((place) => place !== null);
    expect([...new Set(places)].sort()).toEqual([...ACCURACY_FOLDERS, ...ACCURACY_ENTRY_POINTS].sort());
  });

  it('reads accuracy one way: its sub-folders import no entry point, input/ and compute/ nothing of output/', () => {
    expect(accuracyViolations()).toEqual([]);
  });

  it('defines commands in src/cli only: no other file imports commander', () => {
    const commanders = [...graph.keys()].filter(
      (file) => !file.startsWith('src/cli/') && /from\s+'commander'/.test(readFileSync(join(ROOT, file), 'utf8')),
    );
    expect(commanders).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(cycles(graph)).toEqual([]);
  });
});
