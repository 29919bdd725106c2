// Results into the warehouse: one accuracy_runs row per run and one accuracy_results row per
// subject, model, group key and metric (migration 004_accuracy.sql), written in one transaction.
import { instantLiteral, quoteLiteral } from '../../warehouse/sql.js';
import type { DuckDBValue } from '@duckdb/node-api';
import { DOUBLE, VARCHAR } from '../../warehouse/duckdb-api.js';
import type { Warehouse } from '../../warehouse/warehouse.js';
import type { SkippedSite } from '../input/align.js';
import type { IntervalLabel } from '../../warehouse/rows.js';
import type { Group } from '../compute/groups.js';
import type { AccuracyRow } from '../compute/metrics.js';

export interface RunRecord {
  runId: string;
  scoredAt: number;
  source: string;
  from?: number;
  to?: number;
  sites?: string[];
  models?: string[];
  groups: Group[];
  tz: string;
  forecastLabel: IntervalLabel;
  actualLabel: IntervalLabel;
  deadbandPct: number;
  maxMissingPct: number;
  mapeMinActualPct: number;
  skipped: SkippedSite[];
  reportPath?: string;
  /** full or incremental (warehouse runs), and the pairs aligned (incremental.ts). */
  mode?: string;
  pairsAligned?: number;
}

/** Points scored and dropped over all subjects, read from the first group scored (total by default). */
export function totals(rows: AccuracyRow[]): { pairs: number; dropped: number } {
  const first = rows[0]?.group;
  const inGroup = rows.filter((r) => r.group === first);
  return {
    pairs: inGroup.reduce((sum, r) => sum + r.n, 0),
    dropped: inGroup.reduce((sum, r) => sum + (r.values.dropped ?? 0), 0),
  };
}

const ROWS_PER_INSERT = 500;
/**
 * accuracy_results' columns: the values bound as DOUBLE, for a JS number that happens to be
 * integral is bound as BIGINT, and one past int64 (an r² of -5e29 over near-constant actuals)
 * failed the whole run.
 */
const RESULT_TYPES = [VARCHAR, VARCHAR, VARCHAR, VARCHAR, VARCHAR, DOUBLE, VARCHAR, DOUBLE];

function resultValues(runId: string, rows: AccuracyRow[]): DuckDBValue[][] {
  return rows.flatMap((r) => {
    const base = [runId, r.subject, r.model ?? '', r.group, r.key, r.keyOrder];
    return [['n', r.n] as const, ...Object.entries(r.values)].map(([metric, value]) => [...base, metric, value]);
  });
}

/** Writes the run and its results; returns the rows written per table. */
export async function storeAccuracy(
  warehouse: Warehouse,
  run: RunRecord,
  rows: AccuracyRow[],
): Promise<Record<string, number>> {
  const { pairs, dropped } = totals(rows);
  const results = resultValues(run.runId, rows);
  const list = (values?: string[]) => (values?.length ? `[${values.map(quoteLiteral).join(', ')}]` : 'NULL');
  const instantOrNull = (ms?: number) => (ms === undefined ? 'NULL' : instantLiteral(ms));
  await warehouse.transaction(async () => {
    await warehouse.run(
      `INSERT INTO accuracy_runs VALUES ($1, ${instantOrNull(run.scoredAt)}, $2, ${instantOrNull(run.from)}, ${instantOrNull(run.to)},
        ${list(run.sites)}, ${list(run.models)}, ${list(run.groups)}, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      [
        run.runId,
        run.source,
        run.tz,
        run.forecastLabel,
        run.actualLabel,
        run.deadbandPct,
        run.maxMissingPct,
        run.mapeMinActualPct,
        pairs,
        dropped,
        JSON.stringify(run.skipped),
        run.reportPath ?? null,
        run.mode ?? null,
        run.pairsAligned ?? null,
      ],
    );
    for (let i = 0; i < results.length; i += ROWS_PER_INSERT) {
      const chunk = results.slice(i, i + ROWS_PER_INSERT);
      const placeholders = chunk.map(
        (_, r) => `(${Array.from({ length: 8 }, (_, c) => `$${r * 8 + c + 1}`).join(', ')})`,
      );
      await warehouse.run(
        `INSERT INTO accuracy_results VALUES ${placeholders.join(', ')}`,
        chunk.flat(),
        chunk.flatMap(() => RESULT_TYPES),
      );
    }
  });
  return { accuracy_runs: 1, accuracy_results: results.length };
}
