-- Query engines of a workspace (SPEC 7, 8 engines.*). The API records a desired state and
-- enqueues; the engines worker moves `state` and holds a lease (lease_token, lease_until) while it
-- acts, like a task run, so a run whose worker died is taken over once the lease expires.
-- `generation` counts the changes of what is wanted; a job carries the generation it serves.
CREATE TABLE engines (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name                 text NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{0,39}$'),
  kind                 text NOT NULL CHECK (kind IN ('trino', 'olap')),
  version              text,
  image                text NOT NULL,
  resources            jsonb NOT NULL,
  provisioner          text NOT NULL CHECK (provisioner IN ('cluster', 'local_container')),
  state                text NOT NULL CHECK (state IN ('provisioning', 'running', 'stopping', 'stopped', 'failed')),
  desired              text NOT NULL CHECK (desired IN ('running', 'stopped', 'deleted')),
  generation           integer NOT NULL DEFAULT 1,
  config_hash          text NOT NULL,
  running_config_hash  text,
  running_config       jsonb,
  endpoint_url         text,
  error                text,
  oauth_client_id      text,
  client_secret_sealed text,
  idp_issuer           text NOT NULL,
  lease_token          uuid,
  lease_until          timestamptz,
  created_by           uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  state_changed_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, name)
);
-- the reaper's sweep: engines in a transition whose lease is free or expired
CREATE INDEX engines_transitional ON engines (state_changed_at) WHERE state IN ('provisioning', 'stopping');
