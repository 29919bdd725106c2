// The outage windows the capacity files declare, as the warehouse's data-quality flags read them
// (capacity_windows: an actual inside a window is flagged outage, src/warehouse/flags.ts).
import { existsSync } from 'node:fs';
import type { Warehouse } from '../warehouse/warehouse.js';
import { instant, quoteLiteral } from '../warehouse/sql.js';
import { readCapacityDir } from './files.js';

/**
 * Replaces `capacity_windows` with the windows the capacity files of `dir` declare now, each
 * file's site named by id or name as in the file. A file that does not read is left out (the
 * capacity commands report its errors); returns how many were.
 */
export async function refreshCapacityWindows(
  sql: Pick<Warehouse, 'run' | 'all'>,
  dir: string,
): Promise<{ windows: number; unreadable: number }> {
  const { files, errors } = existsSync(dir) ? readCapacityDir(dir) : { files: [], errors: [] };
  const rows = files.flatMap((f) =>
    f.windows.map(
      (w) =>
        `(${quoteLiteral(f.site)}, ${w.from}, ${w.to}, ${w.valueKw}, ${quoteLiteral(w.reason)}, ${quoteLiteral(f.file)})`,
    ),
  );
  await sql.run('DELETE FROM capacity_windows');
  if (rows.length > 0) {
    await sql.run(`INSERT INTO capacity_windows
      SELECT s.site_id, ${instant('w.from_ms')}, ${instant('w.to_ms')}, w.value_kw, w.reason, w.file
      FROM (VALUES ${rows.join(', ')}) w(site, from_ms, to_ms, value_kw, reason, file)
      JOIN sites s ON s.site_id = w.site OR (s.name = w.site AND NOT EXISTS (SELECT 1 FROM sites i WHERE i.site_id = w.site))`);
  }
  const [{ n }] = await sql.all<{ n: bigint }>('SELECT count(*) AS n FROM capacity_windows');
  return { windows: Number(n), unreadable: new Set(errors.map((e) => e.file)).size };
}
