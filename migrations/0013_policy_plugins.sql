-- Engine plugins polling the policy service: what each (by Ranger's pluginId) last asked for and
-- holds, so administrators see which engines lag behind the current policy, tag and role versions.
CREATE TABLE policy_plugins (
  workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  plugin_id            text NOT NULL CHECK (length(plugin_id) BETWEEN 1 AND 255),
  cluster_name         text NOT NULL DEFAULT '' CHECK (length(cluster_name) <= 255),
  policy_version_held  bigint,
  policy_polled_at     timestamptz,
  tag_version_held     bigint,
  tag_polled_at        timestamptz,
  role_version_held    bigint,
  role_polled_at       timestamptz,
  last_activation_time timestamptz,
  last_poll_at         timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, plugin_id)
);
