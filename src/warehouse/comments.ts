// The comments of the warehouse's tables, views, columns, indexes and macros: one definition,
// ./comments.yaml (as dbt's schema.yml with persist_docs), applied by the migrator after the views,
// so numbered migrations hold only DDL and data moves. Only what exists now is named there; a key
// naming a missing object is an error naming the file, line and key, before anything is written.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { InputFileError, parseYaml, yamlIssueError, type YamlFile } from '../yaml.js';
import { quoteIdentifier, quoteLiteral } from './sql.js';

const COMMENTS_FILE = join(fileURLToPath(new URL('.', import.meta.url)), 'comments.yaml');

const relation = z.strictObject({
  comment: z.string().min(1),
  columns: z.record(z.string(), z.string().min(1)).default({}),
});
const schema = z.strictObject({
  tables: z.record(z.string(), relation).default({}),
  views: z.record(z.string(), relation).default({}),
  indexes: z.record(z.string(), z.string().min(1)).default({}),
  table_macros: z.record(z.string(), z.string().min(1)).default({}),
});

export type CommentSection = keyof z.infer<typeof schema>;

/**
 * The comments file: its text, and the parsed and checked definition, parsed when first read: an
 * open compares only the digest of the text (migrate.ts, viewsStale), so a command's start does
 * not parse the whole file.
 */
export interface CommentsDefinition {
  /** The file's text, as read: part of the digest schema_views records. */
  text: string;
  readonly yaml: YamlFile;
  readonly value: z.infer<typeof schema>;
}

export function commentsDefinition(file = COMMENTS_FILE): CommentsDefinition {
  const text = readFileSync(file, 'utf8');
  let parsed: { yaml: YamlFile; value: z.infer<typeof schema> } | undefined;
  const parse = () => {
    if (parsed) return parsed;
    const yaml = parseYaml(text, file);
    const checked = schema.safeParse(yaml.value);
    if (!checked.success) throw yamlIssueError(yaml, checked.error);
    parsed = { yaml, value: checked.data };
    return parsed;
  };
  return {
    text,
    get yaml() {
      return parse().yaml;
    },
    get value() {
      return parse().value;
    },
  };
}

/** What each kind of target is called in an error. */
const NOUNS = {
  TABLE: 'table',
  VIEW: 'view',
  COLUMN: 'column',
  INDEX: 'index',
  'MACRO TABLE': 'table macro',
} as const;

/** One COMMENT ON statement, with the key of the file that asks for it. */
interface Statement {
  path: string[];
  kind: keyof typeof NOUNS;
  /** What the catalog must hold: `TABLE t`, `VIEW v`, `COLUMN t.c`, `INDEX i`, `MACRO TABLE m`. */
  target: string;
  sql: string;
}

function statementsOf(value: z.infer<typeof schema>, sections: readonly CommentSection[]): Statement[] {
  const out: Statement[] = [];
  const add = (path: string[], kind: keyof typeof NOUNS, names: string[], text: string) =>
    out.push({
      path,
      kind,
      target: `${kind} ${names.join('.')}`,
      sql: `COMMENT ON ${kind} ${names.map(quoteIdentifier).join('.')} IS ${quoteLiteral(text)}`,
    });
  for (const section of ['tables', 'views'] as const) {
    if (!sections.includes(section)) continue;
    for (const [name, { comment, columns }] of Object.entries(value[section])) {
      add([section, name], section === 'tables' ? 'TABLE' : 'VIEW', [name], comment);
      for (const [column, text] of Object.entries(columns))
        add([section, name, 'columns', column], 'COLUMN', [name, column], text);
    }
  }
  if (sections.includes('indexes'))
    for (const [name, text] of Object.entries(value.indexes)) add(['indexes', name], 'INDEX', [name], text);
  if (sections.includes('table_macros'))
    for (const [name, text] of Object.entries(value.table_macros))
      add(['table_macros', name], 'MACRO TABLE', [name], text);
  return out;
}

/** Every target the open database holds, spelled as a Statement's. */
async function catalogTargets(connection: DuckDBConnection): Promise<Set<string>> {
  const where = "database_name = current_database() AND schema_name = 'main'";
  const targets = await connection.runAndReadAll(
    `SELECT 'TABLE ' || table_name FROM duckdb_tables() WHERE ${where}
     UNION ALL SELECT 'VIEW ' || view_name FROM duckdb_views() WHERE ${where} AND NOT internal
     UNION ALL SELECT 'COLUMN ' || table_name || '.' || column_name FROM duckdb_columns() WHERE ${where}
     UNION ALL SELECT 'INDEX ' || index_name FROM duckdb_indexes() WHERE ${where}
     UNION ALL SELECT 'MACRO TABLE ' || function_name FROM duckdb_functions()
       WHERE ${where} AND NOT internal AND function_type = 'table_macro'`,
  );
  return new Set(targets.getRows().map((row) => String(row[0])));
}

/**
 * Applies the comments of `sections` to the open database, in the caller's transaction. Every key
 * is checked against the catalog first, so a file naming a missing object changes nothing.
 */
export async function applyComments(
  connection: DuckDBConnection,
  comments: CommentsDefinition,
  sections: readonly CommentSection[] = ['tables', 'views', 'indexes', 'table_macros'],
): Promise<void> {
  const statements = statementsOf(comments.value, sections);
  const exists = await catalogTargets(connection);
  const missing = statements.find((statement) => !exists.has(statement.target));
  if (missing) {
    const where = comments.yaml.positionOf(missing.path);
    throw new InputFileError(
      comments.yaml.file,
      where.line,
      where.column,
      `${missing.path.join('.')}: no such ${NOUNS[missing.kind]} in the warehouse`,
    );
  }
  if (statements.length > 0) await connection.run(statements.map((statement) => statement.sql).join(';\n'));
}
