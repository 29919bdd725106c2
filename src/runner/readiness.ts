/**
 * The daemon's `/readyz` (monitor.ts): the config file still valid, the published warehouse
 * openable, no job failing for longer than `monitoring.ready_failing_for`.
 */
import { loadConfig, type LoadedConfig } from '../config.js';
import { formatAge } from './age.js';
import type { Check } from './monitor.js';
import type { JobRegistry } from './registry.js';
import { collectStatus } from './status.js';

export interface ReadinessOptions {
  config: LoadedConfig;
  registry: JobRegistry;
  clock: () => number;
}

/** Ready: the config file still valid, the published warehouse openable, no job failing too long. */
export async function readiness(options: ReadinessOptions): Promise<Check[]> {
  const { config } = options;
  const checks: Check[] = [configCheck(config)];
  const now = options.clock();
  let status: Awaited<ReturnType<typeof collectStatus>>;
  try {
    status = await collectStatus(config, options.registry, now);
  } catch (error) {
    checks.push({ name: 'warehouse', ok: false, detail: (error as Error).message.split('\n')[0] });
    return checks;
  }
  checks.push({
    name: 'warehouse',
    ok: true,
    detail: status.published ? config.warehouse.path : 'nothing published yet',
  });
  const limit = config.monitoring.ready_failing_for;
  const failing = status.jobs.flatMap((j) => {
    if (!j.last || (j.last.status !== 'failed' && j.last.status !== 'crashed')) return [];
    const since = Date.parse(j.last.lastOkAt ?? j.last.startedAt);
    return now - since > limit ? [`${j.job} ${j.last.status}, no ok run for ${formatAge(now - since)}`] : [];
  });
  checks.push({
    name: 'runs',
    ok: failing.length === 0,
    detail: failing.length === 0 ? `no job failing for over ${formatAge(limit)}` : failing.join('; '),
  });
  return checks;
}

function configCheck(config: LoadedConfig): Check {
  if (!config.file) return { name: 'config', ok: true, detail: 'defaults (no config file)' };
  try {
    loadConfig(config.file);
    return { name: 'config', ok: true, detail: config.file };
  } catch (error) {
    return { name: 'config', ok: false, detail: (error as Error).message.split('\n')[0] };
  }
}
