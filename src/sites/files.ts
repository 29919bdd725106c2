// Site files as operators write them: one YAML file per site under config/sites/ (docs/sites.md).
// A file is the site's request body as the service takes it (the same zod schemas the client and
// the emulator use), plus what efsync manages beside it: the serving settings of its models, how a
// priority collision is resolved, and whether the site may ever be deleted. Reading checks every
// file and reports every mistake at its `file:line:column`; the name is the site's key, so two
// files naming one site are a mistake too.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { z } from 'zod';
import {
  LoadSiteItem,
  ModelSettings,
  PriorityConflictResolution,
  type SiteRequest,
  SolarSiteItem,
  WindSiteItem,
} from '../api/schemas.js';
import { ConfigError } from '../errors.js';
import { InputFileError, listFolderFiles, parseYaml, type YamlFile, yamlIssueErrors } from '../yaml.js';

export const SITE_EXTENSIONS = ['.yaml', '.yml'] as const;

/** What a site file holds beside the request body. */
const managed = {
  /** Serving settings by model name; a model not named here is left as the service has it. */
  models: z.record(z.string().min(1), ModelSettings).optional(),
  /** How the service resolves a serving priority another model of the site holds (its default: strict). */
  priority_conflict_resolution: PriorityConflictResolution.optional(),
  /** Never delete this site, even when its file is removed and apply is given --allow-delete. */
  protect: z.boolean().optional(),
};

export const SiteSpec = z.discriminatedUnion(
  'type',
  [SolarSiteItem.extend(managed), WindSiteItem.extend(managed), LoadSiteItem.extend(managed)],
  { error: (issue) => (issue.code === 'invalid_union' ? 'must be solar, wind or load' : undefined) },
);

export type SiteSpec = z.output<typeof SiteSpec>;

export interface SiteFile {
  /** The path as the operator sees it (the folder joined with the file name). */
  file: string;
  spec: SiteSpec;
  /** sha256 of the file's bytes: the ledger's proof of which version was applied. */
  contentHash: string;
  /** Line and column of the value at a path of the file (for the plan's errors). */
  positionOf: YamlFile['positionOf'];
}

/** The request body a file describes: the file without what efsync manages beside it. */
export function requestOf(spec: SiteSpec): SiteRequest {
  const { models: _models, priority_conflict_resolution: _resolution, protect: _protect, ...request } = spec;
  return request;
}

export function readSiteFile(path: string): { file: SiteFile } | { errors: InputFileError[] } {
  const bytes = readFileSync(path);
  const contentHash = createHash('sha256').update(bytes).digest('hex');
  let yaml: YamlFile;
  try {
    yaml = parseYaml(bytes.toString('utf8').replace(/^\uFEFF/, ''), path);
  } catch (error) {
    if (error instanceof InputFileError) return { errors: [error] };
    throw error;
  }
  if (yaml.value === null || typeof yaml.value !== 'object' || Array.isArray(yaml.value)) {
    return {
      errors: [new InputFileError(path, 1, 1, 'the file must be a mapping with name, type, latitude, longitude')],
    };
  }
  const parsed = SiteSpec.safeParse(yaml.value);
  if (!parsed.success) {
    return { errors: yamlIssueErrors(yaml, parsed.error).sort((a, b) => a.line - b.line || a.column - b.column) };
  }
  const shared = sharedPriorities(parsed.data, yaml);
  if (shared.length > 0) return { errors: shared };
  return { file: { file: path, spec: parsed.data, contentHash, positionOf: yaml.positionOf } };
}

/** Two models of one file given one serving priority: no service order could hold both. */
function sharedPriorities(spec: SiteSpec, yaml: YamlFile): InputFileError[] {
  const holders = new Map<number, string>();
  const errors: InputFileError[] = [];
  for (const [model, settings] of Object.entries(spec.models ?? {})) {
    const priority = settings.serving_priority;
    if (priority === undefined) continue;
    const holder = holders.get(priority);
    if (holder === undefined) holders.set(priority, model);
    else {
      const at = yaml.positionOf(['models', model, 'serving_priority']);
      errors.push(
        new InputFileError(
          yaml.file,
          at.line,
          at.column,
          `models.${model}.serving_priority: ${priority} is also the priority of model ${holder}`,
        ),
      );
    }
  }
  return errors;
}

/** Every site file of `dir`, checked; a name two files give is an error at the second. */
export function readSiteDir(dir: string): { files: SiteFile[]; errors: InputFileError[] } {
  const listed = listFolderFiles(dir, SITE_EXTENSIONS, { folder: 'sites folder', setting: 'sites.dir' });
  const errors = [...listed.errors];
  const files: SiteFile[] = [];
  const byName = new Map<string, SiteFile>();
  for (const path of listed.files) {
    const read = readSiteFile(path);
    if ('errors' in read) {
      errors.push(...read.errors);
      continue;
    }
    const first = byName.get(read.file.spec.name);
    if (first) {
      const at = read.file.positionOf(['name']);
      errors.push(
        new InputFileError(
          path,
          at.line,
          at.column,
          `name: site "${read.file.spec.name}" is also named by ${basename(first.file)}`,
        ),
      );
      continue;
    }
    byName.set(read.file.spec.name, read.file);
    files.push(read.file);
  }
  return { files, errors };
}

/** Invalid site files: plan and apply stop before any request while one is wrong. */
export class SiteFilesError extends ConfigError {
  constructor(readonly errors: InputFileError[]) {
    super(
      `${errors.length} error${errors.length === 1 ? '' : 's'} in the site files:\n${errors.map((e) => `  ${e.message}`).join('\n')}`,
    );
  }
}
