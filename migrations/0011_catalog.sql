-- The embedded Iceberg REST catalog: one warehouse per workspace. Namespaces are arrays of levels
-- (nested namespaces); tables and views share one name space per namespace, as the Iceberg REST
-- specification asks (a view may not take a table's name). The current metadata is kept beside
-- its location so a load needs no object-store read; a commit is a compare-and-swap on
-- metadata_location.
CREATE TABLE catalog_namespaces (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  levels       text[] NOT NULL CHECK (cardinality(levels) BETWEEN 1 AND 16),
  properties   jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, levels)
);

CREATE TABLE catalog_tables (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  namespace_id      uuid NOT NULL REFERENCES catalog_namespaces (id) ON DELETE RESTRICT,
  name              text NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
  kind              text NOT NULL CHECK (kind IN ('table', 'view')),
  metadata_location text NOT NULL,
  metadata          jsonb NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (namespace_id, name)
);

-- Idempotency-Key of the Iceberg REST specification: the final answer of a mutation, replayed
-- when the same key comes again (pruned after the advertised lifetime).
CREATE TABLE catalog_idempotency (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  key          uuid NOT NULL,
  operation    text NOT NULL,
  status       integer NOT NULL,
  body         jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, key)
);
CREATE INDEX catalog_idempotency_created ON catalog_idempotency (created_at);
