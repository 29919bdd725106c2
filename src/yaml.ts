// Files that operators edit (YAML, and the folders that hold them): every error names the file,
// line and column.
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { extname, join, sep } from 'node:path';
import { isMap, isNode, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';

/** An error in an input file, located as `file:line:column`. */
export class InputFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly column: number,
    readonly rule: string,
  ) {
    super(`${file}:${line}:${column}: ${rule}`);
    this.name = 'InputFileError';
  }
}

export interface YamlFile {
  file: string;
  value: unknown;
  /** Line and column (1-based) of the value at `path`, or of its nearest parent that exists. */
  positionOf(path: readonly PropertyKey[]): { line: number; column: number };
}

// An alias bomb expands a few lines into gigabytes; real config never needs this many.
const MAX_ALIAS_COUNT = 50;

export function parseYaml(text: string, file: string): YamlFile {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const pos = first.linePos?.[0] ?? { line: 1, col: 1 };
    throw new InputFileError(file, pos.line, pos.col, first.message.split('\n')[0]);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    throw new InputFileError(file, 1, 1, `YAML aliases expand too far (${(error as Error).message})`);
  }
  return { file, value, positionOf: (path) => locate(doc, lineCounter, path) };
}

/**
 * Where the value at `path` starts; where its key is when the value starts on a later line (a
 * nested map or list), so that the line named is the key's own, not its first child's.
 */
function locate(doc: Document, lines: LineCounter, path: readonly PropertyKey[]) {
  for (let depth = path.length; depth >= 0; depth--) {
    const node = doc.getIn(path.slice(0, depth) as unknown[], true);
    if (isNode(node) && node.range) {
      const pos = lines.linePos(node.range[0]);
      const key = depth > 0 ? keyNodeOf(doc, path.slice(0, depth)) : undefined;
      const keyPos = key?.range ? lines.linePos(key.range[0]) : undefined;
      if (keyPos && keyPos.line < pos.line) return { line: keyPos.line, column: keyPos.col };
      return { line: pos.line, column: pos.col };
    }
  }
  return { line: 1, column: 1 };
}

function keyNodeOf(doc: Document, path: readonly PropertyKey[]) {
  const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1) as unknown[], true);
  if (!isMap(parent)) return undefined;
  const pair = parent.items.find(
    (item) => isScalar(item.key) && String(item.key.value) === String(path[path.length - 1]),
  );
  return isNode(pair?.key) ? pair.key : undefined;
}

/**
 * Every zod issue of a YAML file's value, each as a located error. An unknown key is named and
 * located itself, one error per key (zod puts that issue on the map that holds them).
 */
export function yamlIssueErrors(yaml: YamlFile, error: z.ZodError): InputFileError[] {
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => located(yaml, [...issue.path, key], `Unrecognized key: ${JSON.stringify(key)}`))
      : [located(yaml, issue.path, missing(yaml, issue) ? 'is required' : issue.message)],
  );
}

/** A required key left out, where zod's own message would say "received undefined". */
function missing(yaml: YamlFile, issue: z.core.$ZodIssue): boolean {
  if (issue.code !== 'invalid_type' || !issue.message.startsWith('Invalid input: expected')) return false;
  let value: unknown = yaml.value;
  for (const key of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  return value === undefined;
}

/** The first zod issue of a YAML file's value, as a located error. */
export function yamlIssueError(yaml: YamlFile, error: z.ZodError): InputFileError {
  return yamlIssueErrors(yaml, error)[0];
}

function located(yaml: YamlFile, path: readonly PropertyKey[], rule: string): InputFileError {
  const where = yaml.positionOf(path);
  const key = path.map(String).join('.');
  return new InputFileError(yaml.file, where.line, where.column, key ? `${key}: ${rule}` : rule);
}

/**
 * The files of `dir` (not its subfolders) whose extension is one of `extensions`, sorted by name.
 * A file that resolves outside the folder (a symlink escaping it) is an error: config review
 * covers the folder, nothing else.
 */
export function listFolderFiles(
  dir: string,
  extensions: readonly string[],
  names: { folder: string; setting: string },
): { files: string[]; errors: InputFileError[] } {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    return {
      files: [],
      errors: [new InputFileError(dir, 1, 1, `the ${names.folder} does not exist (set --dir or ${names.setting})`)],
    };
  }
  const root = realpathSync(dir);
  const files: string[] = [];
  const errors: InputFileError[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (!extensions.includes(extname(name).toLowerCase())) continue;
    const path = join(dir, name);
    let target: string;
    try {
      target = realpathSync(path);
    } catch {
      errors.push(new InputFileError(path, 1, 1, 'the file is a link to nothing (a dangling symlink)'));
      continue;
    }
    if (!target.startsWith(root + sep)) {
      errors.push(
        new InputFileError(path, 1, 1, `the file resolves to ${target}, outside the ${names.folder} ${root}`),
      );
      continue;
    }
    if (statSync(target).isFile()) files.push(path);
  }
  return { files, errors };
}
