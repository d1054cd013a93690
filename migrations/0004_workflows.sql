-- The workflow engine: flows with revisions, executions, task runs and their attempts, task logs,
-- workspace secrets for templates, trigger state, and the Data API access log pruned by retention.
CREATE TABLE flows (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  namespace    text NOT NULL,
  flow_id      text NOT NULL,
  revision     integer NOT NULL,
  source       text NOT NULL,
  definition   jsonb NOT NULL,
  uses_secrets boolean NOT NULL DEFAULT false,
  deleted      boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  updated_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  PRIMARY KEY (workspace_id, namespace, flow_id)
);

CREATE TABLE flow_revisions (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  namespace    text NOT NULL,
  flow_id      text NOT NULL,
  revision     integer NOT NULL,
  source       text NOT NULL,
  deleted      boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now(),
  created_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  PRIMARY KEY (workspace_id, namespace, flow_id, revision)
);

CREATE TABLE executions (
  id                uuid PRIMARY KEY,
  workspace_id      uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  namespace         text NOT NULL,
  flow_id           text NOT NULL,
  flow_revision     integer NOT NULL,
  state             text NOT NULL,
  inputs            jsonb NOT NULL DEFAULT '{}'::jsonb,
  outputs           jsonb NOT NULL DEFAULT '{}'::jsonb,
  trigger           jsonb,
  error             text,
  kill_requested_at timestamptz,
  files_pruned_at   timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  started_at        timestamptz,
  ended_at          timestamptz
);
CREATE INDEX executions_ws_created_idx ON executions (workspace_id, created_at DESC);
CREATE INDEX executions_flow_idx ON executions (workspace_id, namespace, flow_id, created_at DESC);
CREATE INDEX executions_open_idx ON executions (state) WHERE ended_at IS NULL;
CREATE INDEX executions_ended_idx ON executions (ended_at) WHERE files_pruned_at IS NULL;

-- A task run is one task of one execution (one per foreach value); attempts are its tries.
CREATE TABLE task_runs (
  id           uuid PRIMARY KEY,
  execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
  parent_id    uuid REFERENCES task_runs (id) ON DELETE CASCADE,
  task_id      text NOT NULL,
  path         text NOT NULL,
  iteration    jsonb,
  state        text NOT NULL,
  attempt      integer NOT NULL DEFAULT 0,
  outputs      jsonb NOT NULL DEFAULT '{}'::jsonb,
  error        text,
  lease_token  text,
  lease_until  timestamptz,
  dispatched_at timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  started_at   timestamptz,
  ended_at     timestamptz,
  UNIQUE (execution_id, path)
);
CREATE INDEX task_runs_execution_idx ON task_runs (execution_id);
CREATE INDEX task_runs_open_idx ON task_runs (state, created_at) WHERE ended_at IS NULL;

CREATE TABLE task_run_attempts (
  task_run_id uuid NOT NULL REFERENCES task_runs (id) ON DELETE CASCADE,
  attempt     integer NOT NULL,
  state       text NOT NULL,
  worker      text,
  reason      text,
  log_lines   integer NOT NULL DEFAULT 0,
  log_bytes   bigint NOT NULL DEFAULT 0,
  withheld    integer NOT NULL DEFAULT 0,
  task_bytes  bigint NOT NULL DEFAULT 0,
  started_at  timestamptz NOT NULL DEFAULT now(),
  ended_at    timestamptz,
  PRIMARY KEY (task_run_id, attempt)
);

CREATE TABLE task_logs (
  id           bigserial PRIMARY KEY,
  execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
  task_run_id  uuid REFERENCES task_runs (id) ON DELETE CASCADE,
  attempt      integer NOT NULL DEFAULT 0,
  at           timestamptz NOT NULL DEFAULT now(),
  level        text NOT NULL DEFAULT 'INFO',
  line         text NOT NULL
);
CREATE INDEX task_logs_execution_idx ON task_logs (execution_id, id);
CREATE INDEX task_logs_at_idx ON task_logs (at);

CREATE TABLE workflow_secrets (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name         text NOT NULL CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'),
  sealed       text NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  updated_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  PRIMARY KEY (workspace_id, name)
);

-- Cron triggers: the next fire time is claimed with UPDATE ... WHERE next_fire_at <= now, so one
-- replica fires each slot.
CREATE TABLE trigger_states (
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  namespace     text NOT NULL,
  flow_id       text NOT NULL,
  trigger_id    text NOT NULL,
  next_fire_at  timestamptz,
  last_fired_at timestamptz,
  PRIMARY KEY (workspace_id, namespace, flow_id, trigger_id)
);

CREATE TABLE data_api_access_log (
  id           bigserial PRIMARY KEY,
  at           timestamptz NOT NULL DEFAULT now(),
  workspace_id uuid REFERENCES workspaces (id) ON DELETE CASCADE,
  client       text,
  method       text NOT NULL,
  path         text NOT NULL,
  status       integer NOT NULL
);
CREATE INDEX data_api_access_log_at_idx ON data_api_access_log (at);
