// The plan as a person reads it: one block per site, one line per field
// (`~ settings.model_resolution: "1h" -> "15min"`, `~ model ai serving_priority: 2 -> 1`), then
// what is kept, what could not be planned, and the counts.
import type { FieldChange } from './diff.js';
import type { SiteEntry, SitesPlan } from './plan.js';

const SIGN = { create: '+', update: '~', delete: '-', none: '=' } as const;

export function formatPlan(plan: SitesPlan): string[] {
  const lines: string[] = [];
  for (const entry of plan.sites) if (entry.action !== 'none') lines.push(...entryLines(entry));
  for (const kept of plan.kept) lines.push(`! site "${kept.name}" (${kept.site_id}) kept: ${kept.reason}`);
  for (const problem of plan.problems) lines.push(`! site "${problem.name}" not planned: ${problem.reason}`);
  if (lines.length === 0) lines.push('No changes: the service holds what the site files say.');
  lines.push('', planCounts(plan));
  return lines;
}

function entryLines(entry: SiteEntry): string[] {
  const where = [entry.site_id, entry.file].filter((part) => part !== null).join(', ');
  const head = `${SIGN[entry.action]} site "${entry.name}" (${where})`;
  if (entry.action === 'delete') return [`${head}: deleted (--allow-delete), with all of its data on the service`];
  const lines = [head, ...entry.changes.map((change) => `    ${fieldLine(change.field, change)}`)];
  for (const serving of entry.serving) {
    for (const change of serving.changes) {
      const setting = change.field.slice(`models.${serving.model}.`.length);
      const later = serving.model_id === null ? ' (once the service has made the model)' : '';
      lines.push(`    ${fieldLine(`model ${serving.model} ${setting}`, change)}${later}`);
    }
  }
  if (entry.serving.length > 0 && entry.resolution !== 'strict') {
    lines.push(`    (a priority another model holds: ${entry.resolution})`);
  }
  for (const file of entry.capacity_files) lines.push(`    + capacity from ${file}, pushed once the site exists`);
  return lines;
}

function fieldLine(label: string, change: FieldChange): string {
  if (change.before === undefined) return `+ ${label}: ${show(change.after)}`;
  if (change.after === undefined) return `- ${label}: ${show(change.before)}`;
  return `~ ${label}: ${show(change.before)} -> ${show(change.after)}`;
}

function show(value: unknown): string {
  return JSON.stringify(value);
}

export function planCounts(plan: SitesPlan): string {
  const count = (action: SiteEntry['action']) => plan.sites.filter((entry) => entry.action === action).length;
  const parts = [`${count('create')} to create, ${count('update')} to change, ${count('delete')} to delete`];
  parts.push(`${count('none')} unchanged`);
  if (plan.kept.length > 0) parts.push(`${plan.kept.length} kept`);
  if (plan.problems.length > 0) parts.push(`${plan.problems.length} not planned`);
  parts.push(`${plan.unmanaged.length} unmanaged (on the service, in no file: left alone)`);
  return `Plan: ${parts.join(', ')}.`;
}
