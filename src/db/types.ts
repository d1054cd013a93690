// Table types of the metadata database, kept beside migrations/ (one migration, one change here).
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

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

export interface Database {
  users: UsersTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
  platform_role_grants: PlatformRoleGrantsTable;
  workspaces: WorkspacesTable;
  workspace_role_grants: WorkspaceRoleGrantsTable;
  sessions: SessionsTable;
  audit_events: AuditEventsTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Workspace = Selectable<WorkspacesTable>;
