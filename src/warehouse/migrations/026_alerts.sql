-- Alerts (docs/runner.md, "Alerts"): the state of each alert efsync watches, so that a webhook
-- hears of a change of state once (firing, then resolved), never once per run; and every
-- delivery of a change to a webhook, with its attempts. A webhook is named by its config name,
-- never its URL (a Slack URL holds its secret). No DEFAULT now(): see docs/warehouse.md, "After a crash".

CREATE TABLE alert_states (
  alert_key VARCHAR PRIMARY KEY,
  kind VARCHAR NOT NULL,
  firing BOOLEAN NOT NULL,
  summary VARCHAR NOT NULL,
  changed_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE alert_states IS 'Each alert efsync evaluates and its state since its last change';
COMMENT ON COLUMN alert_states.alert_key IS 'The alert: run/<job>, stale/<site_id>/<actual|forecast>, missed/<job>';
COMMENT ON COLUMN alert_states.kind IS 'run (a failed or partial run), stale (a site''s newest data too old), missed (a scheduled job that did not run)';
COMMENT ON COLUMN alert_states.firing IS 'True while the alert fires';
COMMENT ON COLUMN alert_states.summary IS 'What the last change said';
COMMENT ON COLUMN alert_states.changed_at IS 'When the state last changed (or was first seen)';

CREATE TABLE alert_deliveries (
  alert_key VARCHAR NOT NULL,
  firing BOOLEAN NOT NULL,
  webhook VARCHAR NOT NULL,
  attempts INTEGER NOT NULL,
  ok BOOLEAN NOT NULL,
  status INTEGER,
  error VARCHAR,
  delivered_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE alert_deliveries IS 'Each change of an alert''s state sent to each webhook (alerts.webhooks), with its retries';
COMMENT ON COLUMN alert_deliveries.alert_key IS 'The alert (alert_states.alert_key)';
COMMENT ON COLUMN alert_deliveries.firing IS 'True: the alert started firing; false: it resolved';
COMMENT ON COLUMN alert_deliveries.webhook IS 'The webhook''s name in the config (never its URL)';
COMMENT ON COLUMN alert_deliveries.attempts IS 'Requests made, the retries included';
COMMENT ON COLUMN alert_deliveries.ok IS 'True when the webhook answered 2xx';
COMMENT ON COLUMN alert_deliveries.status IS 'The last HTTP status; NULL when there was no answer';
COMMENT ON COLUMN alert_deliveries.error IS 'Why the last attempt failed; NULL when ok';
COMMENT ON COLUMN alert_deliveries.delivered_at IS 'When the last attempt ended';
