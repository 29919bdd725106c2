// Data-quality flags on actuals, as accuracy reports them: the counts per site and flag. The flags
// themselves are computed in one place, src/warehouse/flags.ts (its header says when), with the
// settings of config.ts (qualitySettingsFromConfig). Scores leave flagged actuals out unless told
// otherwise (see align.ts).
import type { FlagName } from '../../warehouse/flags.js';
import { instantLiteral, sqlList } from '../../warehouse/sql.js';
import type { SqlRunner } from '../compute/metrics.js';

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
