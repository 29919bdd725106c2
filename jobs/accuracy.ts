// Scores the site forecast and every model output against the actuals of the last days, stores
// the results (accuracy_runs, accuracy_results) and writes the HTML report (accuracy.report).
// The nightly chain runs it after the sync; `efsync accuracy` runs the same with more options.
import { headlineTable } from '../src/accuracy/format.js';
import { ledgerLine } from '../src/accuracy/incremental.js';
import { scoreInRun } from '../src/accuracy/job.js';
import { settingsFromConfig } from '../src/accuracy/score.js';
import { reportPath } from '../src/config.js';
import { defineJob } from '../src/job.js';
import { DAY } from '../src/time.js';

/** Valid times scored when the run names no window: the last 30 days up to now. */
const DEFAULT_WINDOW = 30 * DAY;

export default defineJob({
  name: 'accuracy',
  description: 'Score forecasts and model outputs against actuals into the accuracy tables and the HTML report',
  // Run by the nightly chain after the sync, or when asked.
  schedule: null,
  async run(ctx) {
    const to = ctx.options.to ?? ctx.now();
    const { outcome, run } = await scoreInRun(ctx, {
      ...settingsFromConfig(ctx.config.accuracy, ctx.config.service.interval_label, ctx.config.capacity.dir),
      from: ctx.options.from ?? to - DEFAULT_WINDOW,
      to,
      sites: ctx.options.sites,
      reportPath: reportPath(ctx.config),
    });
    const ledger = run.result.ledger ? [ledgerLine(run.result.ledger)] : [];
    return {
      ...outcome,
      summary: [...headlineTable(run.result.rows).split('\n'), ...ledger, `report: ${run.reportPath}`],
    };
  },
});
