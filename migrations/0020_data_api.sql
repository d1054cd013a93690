-- The Data API (issue 15): published, parameterised SQL queries served at /data-api/{ws}/{name}.
-- An endpoint keeps every version it was published as; consumers call the latest or pin one.
CREATE TABLE data_api_endpoints (
  id             uuid PRIMARY KEY,
  workspace_id   uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name           text NOT NULL,
  latest_version integer NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, name)
);

CREATE TABLE data_api_versions (
  endpoint_id  uuid NOT NULL REFERENCES data_api_endpoints (id) ON DELETE CASCADE,
  version      integer NOT NULL,
  engine       text NOT NULL,
  sql          text NOT NULL,
  params       jsonb NOT NULL DEFAULT '[]'::jsonb,
  description  text NOT NULL DEFAULT '',
  created_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint_id, version)
);

-- One access-log row per call: what was called, by whom, and how it went.
ALTER TABLE data_api_access_log
  ADD COLUMN endpoint    text,
  ADD COLUMN version     integer,
  ADD COLUMN rows        integer,
  ADD COLUMN bytes       bigint,
  ADD COLUMN duration_ms integer;
CREATE INDEX data_api_access_log_ws_at_idx ON data_api_access_log (workspace_id, at DESC);
