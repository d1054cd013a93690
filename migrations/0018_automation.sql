-- Alerts and reports (SPEC 5.3.7, 8 automation; docs/alerts.md): one row per alert or report
-- with its schedule state (claimed by the ticker with a conditional UPDATE), its alert state,
-- every evaluation, and every delivery with its outcome.
CREATE TABLE automations (
  id               uuid PRIMARY KEY,
  workspace_id     uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  kind             text NOT NULL CHECK (kind IN ('alert', 'report')),
  name             text NOT NULL,
  description      text NOT NULL DEFAULT '',
  engine           text NOT NULL,
  sql              text NOT NULL DEFAULT '',
  -- alert: {type: row_count | value, op, threshold, column?}; report: {type: csv | table | screenshot, path?}
  spec             jsonb NOT NULL,
  cron             text NOT NULL,
  timezone         text NOT NULL DEFAULT 'UTC',
  grace_secs       integer NOT NULL DEFAULT 3600,
  recipients       jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- HMAC key of webhook signatures, sealed with secrets.master_key
  signing_secret   text NOT NULL,
  enabled          boolean NOT NULL DEFAULT true,
  state            text NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'triggered', 'error')),
  state_since      timestamptz NOT NULL DEFAULT now(),
  last_notified_at timestamptz,
  last_evaluated_at timestamptz,
  next_fire_at     timestamptz,
  last_fired_at    timestamptz,
  created_by       uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, kind, name)
);
CREATE INDEX automations_due ON automations (next_fire_at) WHERE enabled;

CREATE TABLE automation_evaluations (
  id            uuid PRIMARY KEY,
  automation_id uuid NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
  -- the schedule slot (or the time of a manual run); one evaluation per slot
  scheduled_for timestamptz NOT NULL,
  manual        boolean NOT NULL DEFAULT false,
  started_at    timestamptz NOT NULL,
  ended_at      timestamptz,
  outcome       text CHECK (outcome IN ('ok', 'triggered', 'error', 'delivered')),
  value         jsonb,
  error         text,
  notification  text,
  UNIQUE (automation_id, scheduled_for, manual)
);
CREATE INDEX automation_evaluations_by ON automation_evaluations (automation_id, started_at DESC);

CREATE TABLE automation_deliveries (
  id            uuid PRIMARY KEY,
  automation_id uuid NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
  evaluation_id uuid REFERENCES automation_evaluations (id) ON DELETE CASCADE,
  channel       text NOT NULL CHECK (channel IN ('webhook', 'slack')),
  -- scheme://host[:port] of the target only: a Slack URL's path is its credential
  target        text NOT NULL,
  recipient     integer NOT NULL,
  event         text NOT NULL,
  payload       jsonb NOT NULL,
  status        text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'refused')),
  attempts      integer NOT NULL DEFAULT 0,
  http_status   integer,
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX automation_deliveries_by ON automation_deliveries (automation_id, created_at DESC);
