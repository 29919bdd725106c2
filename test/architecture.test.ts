// The layering of src/, read from its import statements: extract (src/api) → normalize and
// compose (src/sync) → load (src/warehouse), each stage knowing only its neighbours, and no
// import cycles. Adding an import that breaks a rule fails here, naming the file and the import.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import and re-export of every file (type-only ones too), as paths under src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const pattern = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g;
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(pattern)].map((match) => {
      const target = resolve(dirname(file), match[1] ?? match[2]).replace(/\.js$/, '.ts');
      return relative(SRC, target);
    });
    graph.set(relative(SRC, file), [...new Set(targets)]);
  }
  return graph;
}

const graph = importGraph();

/** The imports of files under `from` that reach into any of `forbidden` (folders or files of src/). */
function violations(from: string, forbidden: readonly string[]): string[] {
  return [...graph].flatMap(([file, targets]) =>
    file.startsWith(`${from}/`)
      ? targets
          .filter((target) => forbidden.some((f) => target === f || target.startsWith(`${f}/`)))
          .map((target) => `${file} imports ${target}`)
      : [],
  );
}

/** Every import cycle, each as a path a → b → … → a (one per strongly connected set of files). */
function cycles(): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (state.get(target) === 'open') found.push([...stack.slice(stack.indexOf(target)), target].join(' → '));
      else if (!state.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

describe('the layering of src/', () => {
  it('reads the import graph (the reader finds the imports it is meant to)', () => {
    expect(graph.get('sync/run.ts')).toContain('warehouse/loader.ts');
    expect(graph.get('warehouse/loader.ts')).toContain('warehouse/series.ts');
  });

  it('src/warehouse knows DuckDB and its own rows: nothing of the service, the sync, accuracy, the runner or the config', () => {
    expect(
      violations('warehouse', ['api', 'sync', 'accuracy', 'runner', 'retention', 'config.ts', 'service.ts']),
    ).toEqual([]);
  });

  it('src/retention knows the warehouse: nothing of the service, the sync or accuracy (its rules are SQL on tables)', () => {
    expect(violations('retention', ['api', 'sync', 'accuracy', 'service.ts'])).toEqual([]);
  });

  it('src/api knows HTTP and the service: nothing of the config or the warehouse', () => {
    expect(violations('api', ['config.ts', 'warehouse', 'sync', 'runner'])).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(cycles()).toEqual([]);
  });
});
