-- Data apps (SPEC 8 apps.storage, docs/apps.md): one row per app of a workspace. The notebook
-- source itself (the draft and every published version) lives in the object store under
-- apps.storage.prefix; this row names the app and says which version viewers run.
CREATE TABLE apps (
  id                uuid PRIMARY KEY,
  workspace_id      uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name              text NOT NULL,
  description       text NOT NULL DEFAULT '',
  created_by        uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  draft_updated_at  timestamptz NOT NULL DEFAULT now(),
  -- The version viewers run; NULL until the first publish. Versions are numbered from 1.
  published_version integer,
  published_at      timestamptz,
  UNIQUE (workspace_id, name)
);
