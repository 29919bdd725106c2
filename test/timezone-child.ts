// Run under a non-UTC TZ by test/accuracy-exact.test.ts: opens a warehouse as the writer and as a
// reader, and prints what each connection makes of instants, as one JSON line.
//   node dist/test/timezone-child.js <warehouse path>
import { Warehouse } from '../src/warehouse/warehouse.js';

/** Offset-less text, an hour and a UTC date of TIMESTAMPTZ values: all depend on the session's zone. */
export const PROBE = `SELECT current_setting('TimeZone') AS tz,
  CAST(CAST('2026-01-31 14:00:00' AS TIMESTAMPTZ) AS VARCHAR) AS parsed,
  CAST(hour(TIMESTAMPTZ '2026-01-31 14:00:00Z') AS INTEGER) AS hour,
  CAST(CAST(TIMESTAMPTZ '2026-01-31 02:00:00Z' AS DATE) AS VARCHAR) AS day`;

const [path] = process.argv.slice(2);
const writer = await Warehouse.open({ path });
const [asWriter] = await writer.all(PROBE);
await writer.publish();
await writer.close();
const reader = await Warehouse.open({ path, readOnly: true });
const [asReader] = await reader.all(PROBE);
await reader.close();
process.stdout.write(`${JSON.stringify({ writer: asWriter, reader: asReader })}\n`);
