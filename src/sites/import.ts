// `efsync sites import`: adoption. Writes one file per site the service holds and no file names
// yet, in the form plan compares (src/sites/service.ts), with every model's serving settings; so
// right after an import, plan shows no change. A file that exists is never overwritten.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { stringify } from 'yaml';
import type { ServiceClient } from '../api/client.js';
import { RequestError } from '../errors.js';
import { formatInstant } from '../time.js';
import { listFolderFiles } from '../yaml.js';
import { readSiteFile, SITE_EXTENSIONS } from './files.js';
import { readService, type ServiceSite } from './service.js';

export interface Imported {
  name: string;
  siteId: string;
  /** The file written; null when none was. */
  file: string | null;
  /** Why no file was written, or what the check found in the one written (`file:line:column: rule`). */
  notes: string[];
}

export async function importSites(options: {
  dir: string;
  client: ServiceClient;
  /** Only the sites of these names or ids; all when empty. */
  sites: string[];
  now: number;
  signal?: AbortSignal;
}): Promise<Imported[]> {
  const wanted = (site: { site_id: string; name: string }) =>
    options.sites.length === 0 || options.sites.includes(site.name) || options.sites.includes(site.site_id);
  const state = await readService(options.client, wanted, options.signal);
  const chosen = state.sites.filter((site) => wanted({ site_id: site.id, name: site.form.name }));
  const unknown = options.sites.filter((s) => !chosen.some((site) => site.form.name === s || site.id === s));
  if (unknown.length > 0) {
    throw new RequestError(
      `--site ${unknown.map((u) => JSON.stringify(u)).join(', ')}: no site of that name or id on the service`,
    );
  }
  mkdirSync(options.dir, { recursive: true });
  const named = namedInFolder(options.dir);
  const taken = new Set(
    listFolderFiles(options.dir, SITE_EXTENSIONS, { folder: 'sites folder', setting: 'sites.dir' }).files.map((f) =>
      basename(f),
    ),
  );
  const results: Imported[] = [];
  for (const site of [...chosen].sort((a, b) => a.form.name.localeCompare(b.form.name))) {
    const base = { name: site.form.name, siteId: site.id, file: null };
    const sameName = state.sites.filter((s) => s.form.name === site.form.name);
    if (named.has(site.form.name)) {
      results.push({ ...base, notes: [`already in ${named.get(site.form.name)}: not imported`] });
    } else if (sameName.length > 1) {
      results.push({
        ...base,
        notes: [
          `${sameName.length} sites on the service are named so (names are the files' keys): rename all but one, then import`,
        ],
      });
    } else if (site.modelsError) {
      results.push({ ...base, notes: [`not imported: ${site.modelsError}`] });
    } else {
      const file = join(options.dir, freeName(site.form.name, taken, options.dir));
      taken.add(basename(file));
      const { text, shared } = fileText(site, options.now);
      writeFileSync(file, text, { flag: 'wx' });
      const read = readSiteFile(file);
      results.push({
        ...base,
        file,
        notes: [
          ...shared.map(
            (model) => `models: more than one model is named "${model}": their serving is left out of the file`,
          ),
          ...('errors' in read ? read.errors.map((e) => e.message) : []),
        ],
      });
    }
  }
  return results;
}

/** The names the folder's readable files give, with their file. */
function namedInFolder(dir: string): Map<string, string> {
  const named = new Map<string, string>();
  for (const path of listFolderFiles(dir, SITE_EXTENSIONS, { folder: 'sites folder', setting: 'sites.dir' }).files) {
    const read = readSiteFile(path);
    if ('file' in read) named.set(read.file.spec.name, path);
  }
  return named;
}

/** `Gävle wind / north` -> `gavle-wind-north.yaml`, numbered when taken. */
function freeName(name: string, taken: Set<string>, dir: string): string {
  const slug =
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 80) || 'site';
  for (let n = 1; ; n++) {
    const candidate = `${slug}${n === 1 ? '' : `-${n}`}.yaml`;
    if (!taken.has(candidate) && !existsSync(join(dir, candidate))) return candidate;
  }
}

/** The file's text; models named alike are left out (a file keys them by name), and listed. */
function fileText(site: ServiceSite, now: number): { text: string; shared: string[] } {
  const { form } = site;
  const spec: Record<string, unknown> = {
    name: form.name,
    type: form.type,
    latitude: form.latitude,
    longitude: form.longitude,
  };
  if (Object.keys(form.settings).length > 0) spec.settings = form.settings;
  if (form.assets !== undefined) spec.assets = form.assets;
  const all = site.models ?? [];
  const shared = [...new Set(all.map((m) => m.name).filter((name, i, names) => names.indexOf(name) !== i))];
  const models = all.filter((m) => !shared.includes(m.name)).sort((a, b) => a.serving_priority - b.serving_priority);
  if (models.length > 0) {
    spec.models = Object.fromEntries(
      models.map((m) => [
        m.name,
        {
          ...(m.serving_active === null ? {} : { serving_active: m.serving_active }),
          serving_priority: m.serving_priority,
        },
      ]),
    );
  }
  const header = `# Imported by efsync sites import on ${formatInstant(now)} from site ${site.id}.\n`;
  return { text: header + stringify(spec, { lineWidth: 0 }), shared };
}
