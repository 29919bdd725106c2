// `warehouse_info`: one row that tells a reader of the published file or of a snapshot what it
// holds (which kind of file, when it was taken, whether its series hold every valid time kept or a
// window, and what folder beside it the file needs). Written into the file at publish and at
// snapshot, never into the writer file (dropped when a writer file is rebuilt from the published one).
import type { DuckDBConnection } from '@duckdb/node-api';
import { instantLiteral, quoteLiteral } from './sql.js';

export const WAREHOUSE_INFO = 'warehouse_info';

export interface WarehouseInfo {
  /** `published`: the nightly file, its cold folder beside it; `snapshot`: efsync snapshot's single file. */
  kind: 'published' | 'snapshot';
  takenAt: number;
  /** The window of valid times the series tables hold, epoch ms; null: no bound on that side. */
  validFrom: number | null;
  validTo: number | null;
  /** A snapshot's published file, as its path was when it was taken. */
  source: string | null;
  /** The folder beside the file that its series views read (`warehouse.cold`); null when none. */
  coldFolder: string | null;
}

const COLUMNS: [name: string, comment: string][] = [
  [
    'kind',
    "'published': the file efsync publishes each run, reading its cold folder; 'snapshot': a single file of efsync snapshot",
  ],
  ['taken_at', 'When this file was published or the snapshot taken (UTC)'],
  [
    'history',
    "'full': every valid time the warehouse keeps under its retention; 'window': only valid_from to valid_to",
  ],
  ['valid_from', 'First valid time the series tables may hold (inclusive); NULL: no bound'],
  ['valid_to', 'Valid times the series tables hold are before it; NULL: no bound'],
  ['source', 'For a snapshot: the published file it was taken from, as its path was then'],
  [
    'cold_folder',
    'The folder beside this file that the series views read, named relative to it; NULL: the file needs none',
  ],
];

/** Replaces the warehouse_info table of the connection's current database with `info`. */
export async function writeWarehouseInfo(connection: DuckDBConnection, info: WarehouseInfo): Promise<void> {
  const instant = (ms: number | null) => (ms === null ? 'NULL::TIMESTAMPTZ' : instantLiteral(ms));
  const text = (value: string | null) => (value === null ? 'NULL::VARCHAR' : quoteLiteral(value));
  const history = info.validFrom === null && info.validTo === null ? 'full' : 'window';
  const values = [
    quoteLiteral(info.kind),
    instant(info.takenAt),
    quoteLiteral(history),
    instant(info.validFrom),
    instant(info.validTo),
    text(info.source),
    text(info.coldFolder),
  ];
  await connection.run(
    `CREATE OR REPLACE TABLE ${WAREHOUSE_INFO} AS SELECT ${values.map((value, i) => `${value} AS ${COLUMNS[i][0]}`).join(', ')}`,
  );
  await connection.run(
    `COMMENT ON TABLE ${WAREHOUSE_INFO} IS ${quoteLiteral('What this file holds: published or snapshot, when, and which valid times (one row)')}`,
  );
  for (const [column, comment] of COLUMNS) {
    await connection.run(`COMMENT ON COLUMN ${WAREHOUSE_INFO}.${column} IS ${quoteLiteral(comment)}`);
  }
}

/** Drops warehouse_info from a writer file rebuilt from the published one. */
export async function dropWarehouseInfo(connection: DuckDBConnection): Promise<void> {
  await connection.run(`DROP TABLE IF EXISTS ${WAREHOUSE_INFO}`);
}
