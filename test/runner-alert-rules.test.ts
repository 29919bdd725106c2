// The example Prometheus alerting rules of docs/runner.md: taken from the page itself, checked with
// `promtool check rules` and fired on made-up series with `promtool test rules` (a stale site, a
// failed run, a throttled service), so the page cannot drift from what Prometheus accepts.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { needsPromtool, PROMTOOL, promtool } from './fixtures/promtool.js';
import { tempDir } from './sync-support.js';

const MARKER = '# efsync alerting rules';

/** The fenced block of docs/runner.md that starts with the marker line. */
function documentedRules(): string {
  const page = readFileSync(join(import.meta.dirname, '..', 'docs', 'runner.md'), 'utf8');
  const start = page.indexOf(`\`\`\`yaml\n${MARKER}\n`);
  expect(start, 'docs/runner.md has the rules block').toBeGreaterThan(0);
  const body = page.slice(start + '```yaml\n'.length);
  return body.slice(0, body.indexOf('```'));
}

/** A day and three hours of minute samples: 27h is past every threshold of the rules. */
const UNIT_TESTS = `
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'efsync_job_last_run_status{efsync_job="nightly",status="failed"}'
        values: '1x1700'
      - series: 'efsync_job_last_run_status{efsync_job="nightly",status="ok"}'
        values: '0x1700'
      - series: 'efsync_job_last_success_timestamp_seconds{efsync_job="nightly"}'
        values: '0x1700'
      - series: 'efsync_site_newest_value_timestamp_seconds{site_id="s1",resource="actuals"}'
        values: '0x1700'
      - series: 'efsync_site_newest_value_timestamp_seconds{site_id="s2",resource="actuals"}'
        values: '0+60x1700'
      - series: 'efsync_service_throttled_total{endpoint="GET /platform/v2/sites/{site_id}/forecast"}'
        values: '0+1x1700'
    alert_rule_test:
      - eval_time: 27h
        alertname: EfsyncRunFailed
        exp_alerts:
          - exp_labels: { severity: critical, efsync_job: nightly }
            exp_annotations:
              summary: 'efsync nightly: the last run failed'
              description: 'See \`efsync status\` and the run ledger (runs, run_failures) for the error.'
      - eval_time: 27h
        alertname: EfsyncNightlyNotSucceeding
        exp_alerts:
          - exp_labels: { severity: critical, efsync_job: nightly }
            exp_annotations: { summary: 'efsync nightly: no ok run for 1d 3h 0m 0s' }
      - eval_time: 1h
        alertname: EfsyncSiteStale
        exp_alerts: []
      - eval_time: 27h
        alertname: EfsyncSiteStale
        exp_alerts:
          - exp_labels: { severity: warning, site_id: s1 }
            exp_annotations: { summary: 'efsync site s1: newest actual 1d 3h 0m 0s old' }
      - eval_time: 27h
        alertname: EfsyncServiceThrottled
        exp_alerts:
          - exp_labels: { severity: warning }
            exp_annotations: { summary: 'efsync: the service answered 429 30 times in 30 minutes (the quota)' }
`;

describe('the alerting rules of docs/runner.md', () => {
  it(needsPromtool('promtool check rules accepts them'), ({ skip }) => {
    if (!PROMTOOL) skip();
    const dir = tempDir('efsync-rules-');
    writeFileSync(join(dir, 'rules.yml'), documentedRules());
    const { code, output } = promtool(['check', 'rules', join(dir, 'rules.yml')]);
    expect(code, output).toBe(0);
    expect(output).toContain('SUCCESS: 7 rules found');
  });

  it(needsPromtool('they fire on a failed run, a stale site and a throttled service, and not before'), ({ skip }) => {
    if (!PROMTOOL) skip();
    const dir = tempDir('efsync-rules-');
    writeFileSync(join(dir, 'rules.yml'), documentedRules());
    writeFileSync(join(dir, 'tests.yml'), UNIT_TESTS);
    const { code, output } = promtool(['test', 'rules', join(dir, 'tests.yml')]);
    expect(code, output).toBe(0);
    expect(output).toContain('SUCCESS');
  });
});
