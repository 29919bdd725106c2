// Reading a checkpoint (PROTOCOL.md "Checkpoints"): a Parquet file, or several parts, with one
// action per row in a struct column named like the action. DuckDB reads it; each row comes back
// as the JSON a commit line would hold (`to_json` turns the string maps into objects).
import type { DuckDBConnection } from '@duckdb/node-api';
import { join } from 'node:path';
import { DeltaTableError } from '../../errors.js';
import { quoteLiteral } from '../../warehouse/sql.js';
import { toAction, type Action } from './actions.js';
import { logDir, type Checkpoint } from './log.js';

export async function readCheckpoint(db: DuckDBConnection, table: string, checkpoint: Checkpoint): Promise<Action[]> {
  const files = checkpoint.files.map((name) => quoteLiteral(join(logDir(table), name)));
  let rows: Record<string, unknown>[];
  try {
    const reader = await db.runAndReadAll(
      `SELECT to_json(c)::VARCHAR AS action FROM read_parquet([${files.join(', ')}], union_by_name = true) c`,
    );
    rows = reader.getRowObjectsJS() as Record<string, unknown>[];
  } catch (error) {
    throw new DeltaTableError(
      'corrupt',
      `${table}: checkpoint ${checkpoint.version} cannot be read (${(error as Error).message})`,
    );
  }
  const actions: Action[] = [];
  for (const row of rows) {
    const action = toAction(JSON.parse(String(row.action)) as Record<string, unknown>);
    if (action) actions.push(action);
  }
  return actions;
}
