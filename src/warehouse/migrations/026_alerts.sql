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
