// The options every metric computation takes, apart from where its pairs and statistics are.
import type { EventDefinition } from '../../config.js';
import type { Group, GroupOptions } from './groups.js';

export interface MetricOptions extends GroupOptions {
  groups: Group[];
  /** Errors within this percentage of the actual count as zero (SFA's deadband); 0 for none. */
  deadbandPct: number;
  /** MAPE skips actuals at or below this percentage of capacity (or exactly zero without capacity). */
  mapeMinActualPct: number;
  /** Compute KSI, OVER and CPI (default true), from the stored histograms. */
  distribution?: boolean;
  /** Threshold and ramp events scored by the event metrics (none when absent). */
  events?: EventDefinition[];
}

/**
 * When the pairs relation holds one subject (a pairs file without a model column), its subject
 * and model are written into the results instead of grouped by: text keys in a GROUP BY over
 * millions of rows made the statistics pass about twice as slow as an ungrouped aggregate.
 */
export interface SingleSubject {
  subject: string;
  model: string | null;
}
