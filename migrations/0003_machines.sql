-- Machines: OAuth clients and signing keys of the service's own identity provider, sealed
-- connection secrets of workspaces, and the policy service (policies and tags per workspace).

-- Only a SHA-256 of the client secret is stored (secrets are 32 random bytes: no stretching needed).
CREATE TABLE oauth_clients (
  client_id         text PRIMARY KEY CHECK (client_id ~ '^[A-Za-z0-9._-]{1,128}$'),
  name              text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  secret_hash       bytea NOT NULL,
  audiences         text[] NOT NULL CHECK (cardinality(audiences) >= 1),
  scopes            text[] NOT NULL DEFAULT '{}',
  grant_types       text[] NOT NULL DEFAULT '{client_credentials}',
  workspace_id      uuid REFERENCES workspaces (id) ON DELETE CASCADE,
  created_by        uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  secret_rotated_at timestamptz NOT NULL DEFAULT now()
);

-- Signing keys: one active key (retired_at IS NULL); retired keys stay published until not_after.
-- private_key is a sealed blob (sealed = true) or, without secrets.master_key, the private JWK.
CREATE TABLE idp_signing_keys (
  kid         text PRIMARY KEY,
  alg         text NOT NULL,
  public_jwk  jsonb NOT NULL,
  private_key text NOT NULL,
  sealed      boolean NOT NULL,
  created_at  timestamptz NOT NULL,
  retired_at  timestamptz,
  not_after   timestamptz,
  CHECK ((retired_at IS NULL) = (not_after IS NULL))
);
CREATE UNIQUE INDEX idp_signing_keys_one_active ON idp_signing_keys ((true)) WHERE retired_at IS NULL;

-- Database and storage connections of a workspace; the secret only ever sealed.
CREATE TABLE connections (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name          text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  kind          text NOT NULL CHECK (kind IN ('database', 'storage')),
  config        jsonb NOT NULL DEFAULT '{}'::jsonb,
  secret_sealed text,
  created_by    uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, name)
);

-- One policy service per workspace (named by the workspace slug), with Ranger-style versions.
CREATE TABLE policy_services (
  workspace_id       uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  policy_version     bigint NOT NULL DEFAULT 0,
  policy_update_time timestamptz,
  tag_version        bigint NOT NULL DEFAULT 0,
  tag_update_time    timestamptz
);

CREATE TABLE policies (
  id           bigserial PRIMARY KEY,
  guid         uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  description  text NOT NULL DEFAULT '',
  is_enabled   boolean NOT NULL DEFAULT true,
  resources    jsonb NOT NULL,
  allow_items  jsonb NOT NULL DEFAULT '[]'::jsonb,
  deny_items   jsonb NOT NULL DEFAULT '[]'::jsonb,
  version      integer NOT NULL DEFAULT 1,
  created_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, name)
);

CREATE TABLE policy_tags (
  id           bigserial PRIMARY KEY,
  guid         uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  type         text NOT NULL CHECK (length(type) BETWEEN 1 AND 255),
  attributes   jsonb NOT NULL DEFAULT '{}'::jsonb,
  resources    jsonb NOT NULL,
  created_by   uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX policy_tags_workspace_idx ON policy_tags (workspace_id);
