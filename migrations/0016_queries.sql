-- Recorded SQL queries (SPEC 8 engine.*): one row per query run through the query API, with its
-- state, bounds, inline preview and the object-store key of the full result.
CREATE TABLE queries (
  id                  uuid PRIMARY KEY,
  workspace_id        uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  engine              text NOT NULL,
  sql                 text NOT NULL,
  params              jsonb NOT NULL DEFAULT '[]'::jsonb,
  principal           uuid REFERENCES users (id) ON DELETE SET NULL,
  principal_role      text NOT NULL CHECK (principal_role IN ('ws_admin', 'ws_editor', 'ws_viewer')),
  state               text NOT NULL CHECK (state IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  error               text,
  rows                bigint,
  truncated           boolean NOT NULL DEFAULT false,
  columns             jsonb,
  preview             jsonb,
  result_key          text,
  result_bytes        bigint,
  max_rows            integer NOT NULL,
  timeout_ms          integer NOT NULL,
  cancel_requested_at timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  ended_at            timestamptz
);

-- History: a person's own queries, newest first; the workspace's for ws_admin.
CREATE INDEX queries_ws_principal ON queries (workspace_id, principal, created_at DESC);
CREATE INDEX queries_ws_created ON queries (workspace_id, created_at DESC);
-- Retention and the sweep of runs whose replica stopped.
CREATE INDEX queries_ended ON queries (ended_at) WHERE result_key IS NOT NULL;
CREATE INDEX queries_live ON queries (state, created_at) WHERE state IN ('QUEUED', 'RUNNING');
