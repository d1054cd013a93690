// Table types of the metadata database, kept beside migrations/ (one migration, one change here).
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { WorkflowTables } from './workflow-types.js';
import type { CatalogTables } from './catalog-types.js';
import type { QueryTables } from './query-types.js';
import type { EngineTables } from './engine-types.js';
import type { AutomationTables } from './automation-types.js';
import type { DataApiTables } from './data-api-types.js';
import type { AppTables } from './app-types.js';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export type PlatformRole = 'platform_admin';
export type WorkspaceRole = 'ws_admin' | 'ws_editor' | 'ws_viewer';
export const WORKSPACE_ROLES: readonly WorkspaceRole[] = ['ws_admin', 'ws_editor', 'ws_viewer'];

export interface UsersTable {
  id: Generated<string>;
  sub: string | null;
  email: string;
  name: string | null;
  password_hash: string | null;
  is_local: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: Timestamp;
  last_login_at: Date | null;
}

export interface GroupsTable {
  id: Generated<string>;
  name: string;
  idp_managed: Generated<boolean>;
  created_at: CreatedAt;
}

export interface GroupMembersTable {
  group_id: string;
  user_id: string;
  added_at: CreatedAt;
}

export interface PlatformRoleGrantsTable {
  id: Generated<string>;
  role: PlatformRole;
  group_id: string | null;
  user_id: string | null;
  granted_by: string | null;
  granted_at: CreatedAt;
}

export interface WorkspacesTable {
  id: Generated<string>;
  slug: string;
  name: string;
  workflow_containers: Generated<boolean>;
  workflow_plugins: Generated<boolean>;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface WorkspaceRoleGrantsTable {
  id: Generated<string>;
  workspace_id: string;
  role: WorkspaceRole;
  group_id: string | null;
  user_id: string | null;
  granted_by: string | null;
  granted_at: Timestamp;
}

export interface SessionsTable {
  id_hash: Buffer;
  user_id: string;
  sub: string | null;
  /** The identity provider's session id (`sid`), for back-channel logout by sid. */
  sid: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  ip: string | null;
  user_agent: string | null;
}

export interface AuditEventsTable {
  id: Generated<string>;
  at: CreatedAt;
  kind: 'authz' | 'governance' | 'auth';
  action: string;
  actor_id: string | null;
  actor: string | null;
  target: string | null;
  workspace: string | null;
  decision: string | null;
  details: ColumnType<unknown, string | undefined, string>;
}

// ---- machines (migrations/0003_machines.sql) ----

export interface OAuthClientsTable {
  client_id: string;
  name: string;
  secret_hash: Buffer;
  audiences: string[];
  scopes: ColumnType<string[], string[] | undefined, string[]>;
  grant_types: ColumnType<string[], string[] | undefined, string[]>;
  workspace_id: string | null;
  created_by: string | null;
  created_at: CreatedAt;
  secret_rotated_at: Timestamp;
  /** 'ES256' (default) or 'RS256' (migration 0007). */
  token_signing_alg: ColumnType<string, string | undefined, string>;
}

export interface IdpSigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: ColumnType<Record<string, unknown>, string, string>;
  private_key: string;
  sealed: boolean;
  created_at: ColumnType<Date, Date | string, never>;
  retired_at: Date | null;
  not_after: Date | null;
}

export interface ConnectionsTable {
  id: Generated<string>;
  workspace_id: string;
  name: string;
  kind: 'database' | 'storage';
  config: ColumnType<Record<string, unknown>, string | undefined, string>;
  secret_sealed: string | null;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface PolicyServicesTable {
  workspace_id: string;
  policy_version: ColumnType<string, number | string | undefined, number | string>;
  policy_update_time: Date | null;
  tag_version: ColumnType<string, number | string | undefined, number | string>;
  tag_update_time: Date | null;
}

export interface PoliciesTable {
  id: Generated<string>;
  guid: Generated<string>;
  workspace_id: string;
  name: string;
  description: Generated<string>;
  is_enabled: Generated<boolean>;
  resources: ColumnType<unknown, string, string>;
  allow_items: ColumnType<unknown, string | undefined, string>;
  deny_items: ColumnType<unknown, string | undefined, string>;
  mask_items: ColumnType<unknown, string | undefined, string>;
  row_filter_items: ColumnType<unknown, string | undefined, string>;
  version: Generated<number>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface PolicyTagsTable {
  id: Generated<string>;
  guid: Generated<string>;
  workspace_id: string;
  type: string;
  attributes: ColumnType<Record<string, string>, string | undefined, string>;
  resources: ColumnType<unknown, string, string>;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface Database extends WorkflowTables, CatalogTables, QueryTables, EngineTables, AutomationTables, DataApiTables, AppTables {
  users: UsersTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  platform_role_grants: PlatformRoleGrantsTable;
  workspaces: WorkspacesTable;
  workspace_role_grants: WorkspaceRoleGrantsTable;
  sessions: SessionsTable;
  audit_events: AuditEventsTable;
  oauth_clients: OAuthClientsTable;
  idp_signing_keys: IdpSigningKeysTable;
  connections: ConnectionsTable;
  policy_services: PolicyServicesTable;
  policies: PoliciesTable;
  policy_tags: PolicyTagsTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Workspace = Selectable<WorkspacesTable>;
