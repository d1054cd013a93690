// Grants: platform and workspace roles given to groups (and, for the bootstrap administrator,
// to a user). Each change is idempotent and reports whether anything changed.
import type { Db, WorkspaceRole } from '../db/index.js';

export async function grantPlatformAdminToUser(db: Db, userId: string, grantedBy: string | null): Promise<boolean> {
  const row = await db.insertInto('platform_role_grants')
    .values({ role: 'platform_admin', user_id: userId, group_id: null, granted_by: grantedBy })
    .onConflict((oc) => oc.columns(['role', 'user_id']).where('user_id', 'is not', null).doNothing())
    .returning('id').executeTakeFirst();
  return row !== undefined;
}

export async function platformAdminExists(db: Db): Promise<boolean> {
  const row = await db.selectFrom('platform_role_grants').select('id')
    .where('role', '=', 'platform_admin').limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Does this user hold platform_admin directly or through a group? */
export async function isPlatformAdmin(db: Db, userId: string): Promise<boolean> {
  const row = await db.selectFrom('platform_role_grants as g')
    .leftJoin('group_members as m', 'm.group_id', 'g.group_id')
    .select('g.id')
    .where('g.role', '=', 'platform_admin')
    .where((eb) => eb.or([eb('g.user_id', '=', userId), eb('m.user_id', '=', userId)]))
    .limit(1).executeTakeFirst();
  return row !== undefined;
}

export type GrantChange = 'created' | 'updated' | 'unchanged';

async function upsertWorkspaceGrant(
  db: Db, target: { workspace_id: string; group_id: string | null; user_id: string | null },
  role: WorkspaceRole, grantedBy: string | null, now: Date,
): Promise<GrantChange> {
  const col = target.group_id ? 'group_id' : 'user_id';
  const existing = await db.selectFrom('workspace_role_grants').select(['id', 'role'])
    .where('workspace_id', '=', target.workspace_id)
    .where(col, '=', (target.group_id ?? target.user_id)!)
    .forUpdate().executeTakeFirst();
  if (existing?.role === role) return 'unchanged';
  if (existing) {
    await db.updateTable('workspace_role_grants')
      .set({ role, granted_by: grantedBy, granted_at: now })
      .where('id', '=', existing.id).execute();
    return 'updated';
  }
  const row = await db.insertInto('workspace_role_grants')
    .values({ ...target, role, granted_by: grantedBy, granted_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', col]).where(col, 'is not', null).doNothing())
    .returning('id').executeTakeFirst();
  return row ? 'created' : 'unchanged';
}

/** `now` comes from the service clock (grants record when they were made). */
export function grantWorkspaceRoleToGroup(db: Db, workspaceId: string, groupId: string, role: WorkspaceRole, grantedBy: string | null, now: Date) {
  return upsertWorkspaceGrant(db, { workspace_id: workspaceId, group_id: groupId, user_id: null }, role, grantedBy, now);
}

export function grantWorkspaceRoleToUser(db: Db, workspaceId: string, userId: string, role: WorkspaceRole, grantedBy: string | null, now: Date) {
  return upsertWorkspaceGrant(db, { workspace_id: workspaceId, group_id: null, user_id: userId }, role, grantedBy, now);
}
