// A Delta table's schema (PROTOCOL.md "Schema Serialization Format": Spark's JSON form of a
// StructType) and its DuckDB types, both ways: the reader casts the files' columns and the
// partition values to the schema's types; the writer declares efsync's tables in Spark's terms.
import { DeltaTableError } from '../../errors.js';

export type DeltaType =
  | string
  | { type: 'struct'; fields: DeltaField[] }
  | { type: 'array'; elementType: DeltaType; containsNull: boolean }
  | { type: 'map'; keyType: DeltaType; valueType: DeltaType; valueContainsNull: boolean };

export interface DeltaField {
  name: string;
  type: DeltaType;
  nullable: boolean;
  metadata: Record<string, unknown>;
}

export interface DeltaSchema {
  type: 'struct';
  fields: DeltaField[];
}

const PRIMITIVE_TO_DUCKDB: Record<string, string> = {
  string: 'VARCHAR',
  long: 'BIGINT',
  integer: 'INTEGER',
  short: 'SMALLINT',
  byte: 'TINYINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  binary: 'BLOB',
  date: 'DATE',
  // An instant, stored as UTC microseconds (PROTOCOL.md "Primitive Types").
  timestamp: 'TIMESTAMPTZ',
};

/** The schema string of a metaData action, parsed. */
export function parseSchema(table: string, schemaString: string): DeltaSchema {
  let parsed: DeltaSchema;
  try {
    parsed = JSON.parse(schemaString) as DeltaSchema;
  } catch {
    throw new DeltaTableError('corrupt', `${table}: the schema string of its metaData is not JSON`);
  }
  if (parsed?.type !== 'struct' || !Array.isArray(parsed.fields))
    throw new DeltaTableError('corrupt', `${table}: its schema is not a struct`);
  return parsed;
}

/** The DuckDB type of a Delta type; a type efsync cannot read (timestamp_ntz, variant) is refused. */
export function duckdbType(table: string, type: DeltaType): string {
  if (typeof type === 'string') {
    const primitive = PRIMITIVE_TO_DUCKDB[type];
    if (primitive) return primitive;
    const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
    if (decimal) return `DECIMAL(${decimal[1]}, ${decimal[2]})`;
    throw new DeltaTableError('unsupported', `${table}: column type ${type} is not supported`);
  }
  switch (type.type) {
    case 'struct':
      return `STRUCT(${type.fields.map((f) => `${quoteName(f.name)} ${duckdbType(table, f.type)}`).join(', ')})`;
    case 'array':
      return `${duckdbType(table, type.elementType)}[]`;
    case 'map':
      return `MAP(${duckdbType(table, type.keyType)}, ${duckdbType(table, type.valueType)})`;
  }
}

function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

const DUCKDB_TO_PRIMITIVE: Record<string, string> = {
  VARCHAR: 'string',
  BIGINT: 'long',
  INTEGER: 'integer',
  SMALLINT: 'short',
  TINYINT: 'byte',
  FLOAT: 'float',
  DOUBLE: 'double',
  BOOLEAN: 'boolean',
  BLOB: 'binary',
  DATE: 'date',
  'TIMESTAMP WITH TIME ZONE': 'timestamp',
  // JSON text: Parquet holds it as a string (with the JSON annotation), so do Delta readers.
  JSON: 'string',
};

/** The Delta type of a DuckDB column type as `information_schema` names it (efsync's tables use only these). */
export function deltaType(duckdb: string): DeltaType {
  if (duckdb.endsWith('[]')) return { type: 'array', elementType: deltaType(duckdb.slice(0, -2)), containsNull: true };
  const primitive = DUCKDB_TO_PRIMITIVE[duckdb.toUpperCase()];
  if (primitive) return primitive;
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/i.exec(duckdb);
  if (decimal) return `decimal(${decimal[1]},${decimal[2]})`;
  throw new Error(`no Delta type for the DuckDB type ${duckdb}`);
}
