// The report's plots, drawn to SVG in a worker thread that ends with the report. vega and
// vega-lite (~250 modules) and each plot's scene graph then live in the worker's heap, which goes
// back to the system when it ends. Drawn in the process, they would stay in V8's heap under the
// publish that follows, whatever was collected (loaded modules are never unloaded).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type * as vl from 'vega-lite';

export interface PlotDrawer {
  /** The plot of a vega-lite spec as an SVG element. */
  draw(spec: vl.TopLevelSpec): Promise<string>;
  /** Ends the worker: what it loaded and drew goes with it. */
  close(): Promise<void>;
}

// Source text, not a module file: the same worker runs from dist/ and from the TypeScript sources
// under the tests. It imports vega by the file URLs the process resolved, from any working directory.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const modules = Promise.all([import(workerData.vega), import(workerData.vegaLite)]);
parentPort.on('message', async ({ id, spec }) => {
  try {
    const [vega, { compile }] = await modules;
    const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
    try {
      parentPort.postMessage({ id, svg: await view.toSVG() });
    } finally {
      view.finalize();
    }
  } catch (error) {
    parentPort.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
`;

interface Reply {
  id: number;
  svg?: string;
  error?: string;
}

/**
 * The worker's young generation in MiB (both semi-spaces and the space for large new objects):
 * a worker left to V8's default grows it as its garbage survives, which the process's own is
 * held from (bin/efsync.js); measured, docs/decisions/memory-budget.md.
 */
const WORKER_YOUNG_GENERATION_MB = 12;

/** A drawer whose worker starts now; close it when the report is drawn. */
export function plotDrawer(): PlotDrawer {
  const resolve = createRequire(import.meta.url).resolve;
  const worker = new Worker(WORKER, {
    eval: true,
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    workerData: {
      vega: pathToFileURL(resolve('vega')).href,
      vegaLite: pathToFileURL(resolve('vega-lite')).href,
    },
  });
  const pending = new Map<number, { done: (svg: string) => void; fail: (error: Error) => void }>();
  let ended: Error | null = null;
  const failAll = (error: Error) => {
    ended ??= error;
    for (const { fail } of pending.values()) fail(error);
    pending.clear();
  };
  worker.on('message', (reply: Reply) => {
    const waiting = pending.get(reply.id);
    pending.delete(reply.id);
    if (reply.error !== undefined) waiting?.fail(new Error(`drawing a report plot: ${reply.error}`));
    else waiting?.done(reply.svg ?? '');
  });
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`the report's plot worker ended (exit code ${code})`)));
  let next = 0;
  return {
    draw: (spec) =>
      new Promise((done, fail) => {
        if (ended) return fail(ended);
        const id = next++;
        pending.set(id, { done, fail });
        worker.postMessage({ id, spec });
      }),
    close: async () => {
      await worker.terminate();
    },
  };
}
