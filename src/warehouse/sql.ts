// The one way to put a name or a text into SQL text.

/** `"name"`: an identifier, whatever characters it holds. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** `'it''s'`: a string literal, for SQL built as text (parameters are better where they fit). */
export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
