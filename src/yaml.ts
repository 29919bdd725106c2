// YAML files that operators edit: every error names the file, line and column.
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
 * The first zod issue of a YAML file's value, as a located error. An unknown key is named and
 * located itself (zod puts that issue on the map that holds it).
 */
export function yamlIssueError(yaml: YamlFile, error: z.ZodError): InputFileError {
  const issue = error.issues[0];
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]] : issue.path;
  const where = yaml.positionOf(path as PropertyKey[]);
  const key = path.map(String).join('.');
  return new InputFileError(yaml.file, where.line, where.column, key ? `${key}: ${issue.message}` : issue.message);
}
