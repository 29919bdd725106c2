// Data-quality flags on actuals, as accuracy uses them: the thresholds from the config, the
// outage windows of the capacity files, and the counts a report shows. The flags themselves are
// computed by the warehouse (src/warehouse/flags.ts), on every load of actuals and before every
// accuracy run. Scores leave flagged actuals out unless told otherwise (see align.ts).
import { existsSync } from 'node:fs';
import { readCapacityDir } from '../capacity/files.js';
import { Config } from '../config.js';
import type { IntervalLabel } from '../warehouse/rows.js';
import type { FlagName, QualitySettings } from '../warehouse/flags.js';
import { instant, instantLiteral, quoteLiteral, sqlList } from '../warehouse/sql.js';
import type { SqlRunner } from './metrics.js';

export function qualitySettingsFromConfig(
  quality: Config['accuracy']['quality'],
  label: IntervalLabel,
): QualitySettings {
  return {
    staleSpanMs: quality.stale_span,
    negativePct: quality.negative_pct,
    overCapacityPct: quality.over_capacity_pct,
    nightPct: quality.night_pct,
    clippingPoints: quality.clipping_points,
    clippingPct: quality.clipping_pct,
    label,
  };
}

/** The config's defaults. */
const DEFAULTS = Config.parse({});
export const DEFAULT_QUALITY: QualitySettings = qualitySettingsFromConfig(
  DEFAULTS.accuracy.quality,
  DEFAULTS.service.interval_label.actuals,
);

/**
 * Replaces `capacity_windows` with the windows the capacity files of `dir` declare now, each
 * file's site named by id or name as in the file. A file that does not read is left out (the
 * capacity commands report its errors); returns how many were.
 */
export async function refreshCapacityWindows(
  sql: SqlRunner,
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

export interface FlagCount {
  /** The site's name. */
  site: string;
  flag: FlagName;
  count: number;
}

/** Actuals carrying each flag per site, with valid times in [fromMs, toMs) (open ends when absent). */
export async function countFlags(
  sql: SqlRunner,
  scope: { sites?: readonly string[]; fromMs?: number; toMs?: number },
): Promise<FlagCount[]> {
  const where = ['TRUE'];
  if (scope.sites) where.push(scope.sites.length ? `f.site_id IN (${sqlList(scope.sites)})` : 'FALSE');
  if (scope.fromMs !== undefined) where.push(`f.valid_time >= ${instantLiteral(scope.fromMs)}`);
  if (scope.toMs !== undefined) where.push(`f.valid_time < ${instantLiteral(scope.toMs)}`);
  const rows = await sql.all<{ site: string; flag: FlagName; n: bigint }>(`
    SELECT s.name AS site, q.name AS flag, count(*) AS n
    FROM actual_flags f JOIN quality_flags q ON f.flags & q.bit <> 0 JOIN sites s USING (site_id)
    WHERE ${where.join(' AND ')} GROUP BY s.name, q.name, q.bit ORDER BY s.name, q.bit`);
  return rows.map((r) => ({ site: r.site, flag: r.flag, count: Number(r.n) }));
}
