// The jobs: every module in jobs/ (one job per file, `export default defineJob({...})`), loaded
// once per process. A module that fails to load breaks only its own job, never the others.
import { readdirSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError, RequestError } from '../errors.js';
import type { Job } from '../job.js';

export const JOBS_DIR = fileURLToPath(new URL('../../jobs/', import.meta.url));

/** `efsync run` with a job name that no module in jobs/ defines: a usage error (exit 2). */
export class UnknownJobError extends RequestError {
  constructor(
    readonly job: string,
    readonly known: string[],
  ) {
    super(`unknown job "${job}"; the jobs are: ${known.join(', ')}`);
  }
}

export class JobRegistry {
  private readonly jobs = new Map<string, Job>();
  /** Job modules that exist but did not load, with the reason. */
  readonly broken = new Map<string, Error>();

  add(job: Job): this {
    const existing = this.jobs.get(job.name);
    if (existing && existing !== job) throw new Error(`two jobs are named "${job.name}"`);
    this.jobs.set(job.name, job);
    return this;
  }

  /** The job, or an error that lists the known jobs (or says why its module did not load). */
  get(name: string): Job {
    const job = this.jobs.get(name);
    if (job) return job;
    const broken = this.broken.get(name);
    if (broken) throw new ConfigError(`job "${name}" (jobs/${name}.ts) did not load: ${broken.message}`);
    throw new UnknownJobError(name, this.names());
  }

  has(name: string): boolean {
    return this.jobs.has(name);
  }

  names(): string[] {
    return [...this.jobs.keys(), ...this.broken.keys()].sort();
  }

  all(): Job[] {
    return [...this.jobs.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
}

const loaded = new Map<string, Promise<JobRegistry>>();

/** Every job module in `dir` (default jobs/), each file named after its job. */
export function loadJobs(dir = JOBS_DIR): Promise<JobRegistry> {
  let registry = loaded.get(dir);
  if (!registry) {
    registry = importJobs(dir);
    loaded.set(dir, registry);
  }
  return registry;
}

/**
 * The job `name`, loading its own module only (jobs/<name>.ts): a command that runs one job starts
 * without the others' code. Without such a module, every job loads, for the error that lists them.
 */
export async function loadJob(name: string, dir = JOBS_DIR): Promise<Job> {
  const file = jobFiles(dir).find((f) => basename(f, extname(f)) === name);
  if (file === undefined) return (await loadJobs(dir)).get(name);
  const registry = new JobRegistry();
  await importJob(registry, dir, file);
  return registry.get(name);
}

async function importJobs(dir: string): Promise<JobRegistry> {
  const registry = new JobRegistry();
  for (const file of jobFiles(dir)) await importJob(registry, dir, file);
  return registry;
}

/** The job modules in `dir`, sorted: .ts in the sources, .js once compiled. */
function jobFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
}

/** Adds the job of `file` to `registry`, or notes why its module did not load. */
async function importJob(registry: JobRegistry, dir: string, file: string): Promise<void> {
  const name = basename(file, extname(file));
  try {
    const module = (await import(pathToFileURL(join(dir, file)).href)) as { default?: Job };
    registry.add(checkJob(module.default, name));
  } catch (error) {
    registry.broken.set(name, error as Error);
  }
}

function checkJob(job: Job | undefined, name: string): Job {
  if (!job || typeof job.run !== 'function') throw new Error('the module has no default export made with defineJob()');
  if (job.name !== name) throw new Error(`the job is named "${job.name}" but its file is jobs/${name}.ts`);
  return job;
}
