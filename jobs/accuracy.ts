// Scores the site forecast and every model output against the actuals of the last days, stores
// the results (accuracy_runs, accuracy_results) and writes the HTML report (accuracy.report).
// The nightly chain runs it after the sync; `efsync accuracy` runs the same with more options.
import { scoreWindowInRun } from '../src/accuracy/job.js';
import { defineJob } from '../src/job.js';

export default defineJob({
  name: 'accuracy',
  description: 'Score forecasts and model outputs against actuals into the accuracy tables and the HTML report',
  // Run by the nightly chain after the sync, or when asked.
  schedule: null,
  run: scoreWindowInRun,
});
