-- Identity, groups, grants, workspaces, sessions and the audit log.
-- Emails are unique case-insensitively; a user signing in through SSO is found by `sub`.
CREATE TABLE users (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  sub           text UNIQUE,
  email         text NOT NULL,
  name          text,
  password_hash text,
  is_local      boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  last_login_at timestamptz
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- A local group and an identity-provider group may share a name: the token never joins a local one.
CREATE TABLE groups (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  idp_managed boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (name, idp_managed)
);

CREATE TABLE group_members (
  group_id uuid NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
  user_id  uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  added_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user_idx ON group_members (user_id);

-- Platform role, granted to a group or (bootstrap administrator) to a user.
CREATE TABLE platform_role_grants (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  role       text NOT NULL CHECK (role IN ('platform_admin')),
  group_id   uuid REFERENCES groups (id) ON DELETE CASCADE,
  user_id    uuid REFERENCES users (id) ON DELETE CASCADE,
  granted_by uuid REFERENCES users (id) ON DELETE SET NULL,
  granted_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((group_id IS NULL) <> (user_id IS NULL))
);
CREATE UNIQUE INDEX platform_role_grants_group_key ON platform_role_grants (role, group_id) WHERE group_id IS NOT NULL;
CREATE UNIQUE INDEX platform_role_grants_user_key ON platform_role_grants (role, user_id) WHERE user_id IS NOT NULL;

CREATE TABLE workspaces (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  slug                text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name                text NOT NULL,
  workflow_containers boolean NOT NULL DEFAULT false,
  workflow_plugins    boolean NOT NULL DEFAULT false,
  created_by          uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);

-- One workspace role per group (or bootstrap user) per workspace.
CREATE TABLE workspace_role_grants (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  role         text NOT NULL CHECK (role IN ('ws_admin', 'ws_editor', 'ws_viewer')),
  group_id     uuid REFERENCES groups (id) ON DELETE CASCADE,
  user_id      uuid REFERENCES users (id) ON DELETE CASCADE,
  granted_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  granted_at   timestamptz NOT NULL DEFAULT now(),
  CHECK ((group_id IS NULL) <> (user_id IS NULL))
);
CREATE UNIQUE INDEX workspace_role_grants_group_key ON workspace_role_grants (workspace_id, group_id) WHERE group_id IS NOT NULL;
CREATE UNIQUE INDEX workspace_role_grants_user_key ON workspace_role_grants (workspace_id, user_id) WHERE user_id IS NOT NULL;

-- Only a SHA-256 of the session cookie value is stored.
CREATE TABLE sessions (
  id_hash      bytea PRIMARY KEY,
  user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  sub          text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  ip           text,
  user_agent   text
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_sub_idx ON sessions (sub) WHERE sub IS NOT NULL;
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

CREATE TABLE audit_events (
  id          bigserial PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT now(),
  kind        text NOT NULL CHECK (kind IN ('authz', 'governance', 'auth')),
  action      text NOT NULL,
  actor_id    uuid,
  actor       text,
  target      text,
  workspace   text,
  decision    text,
  details     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_at_idx ON audit_events (at);
