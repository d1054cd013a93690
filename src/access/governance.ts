// Governance changes: users, groups, memberships, platform and workspace grants, workspaces. Each
// runs in one transaction with its audit record (SPEC 6.1) and, once committed, invalidates the
// access snapshots it affects (here and on every replica), whoever called it.
import type { Db, WorkspaceRole } from '../db/index.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import { createLocalUser, publicUser, resolveUserRef } from '../identity/users.js';
import { createLocalGroup, resolveGroupRef } from '../identity/groups.js';
import { grantWorkspaceRoleToGroup, type GrantChange } from './grants.js';
import { assertSlug, findWorkspace } from '../workspaces/workspaces.js';
import { isUniqueViolation } from '../errors.js';
import { auditActor, type Actor } from './actor.js';
import type { ChangeDeps } from '../util/invalidation.js';

const ev = (actor: Actor, action: string, target: string, extra: { workspace?: string; details?: Record<string, unknown> } = {}) =>
  ({ action, ...auditActor(actor), target, ...extra });

/** Everyone's cached access, after a change that can touch many users (a grant to a group). */
const EVERYONE = ['*'];

/** Returns `result` once, when `changed`, the cached access of `who` is cleared here and on every replica. */
async function invalidating<T>(deps: ChangeDeps, result: T, changed: boolean, who: string[]): Promise<T> {
  if (changed) await deps.invalidator.invalidate('access', who);
  return result;
}

/** A new user has no cached access: nothing to invalidate. */
export function createUser(db: Db, actor: Actor, input: { email: string; password: string; name?: string | null }) {
  if (input.password.length < 8) throw badRequest('password must be at least 8 characters');
  return db.transaction().execute(async (tx) => {
    const u = await createLocalUser(tx, input);
    await recordGovernance(tx, ev(actor, 'user.create', `user:${u.email}`));
    return publicUser(u);
  });
}

/** A new local group has no members and no grants: nothing to invalidate. */
export function createGroup(db: Db, actor: Actor, name: string) {
  return db.transaction().execute(async (tx) => {
    const g = await createLocalGroup(tx, name);
    await recordGovernance(tx, ev(actor, 'group.create', `group:${g.name}`, { details: { idp_managed: false } }));
    return g;
  });
}

async function localGroupAndUser(tx: Db, groupRef: string, userRef: string) {
  const group = await resolveGroupRef(tx, groupRef);
  if (group.idp_managed) throw badRequest(`members of identity-provider group "${group.name}" come from the groups claim at sign-in`);
  const user = await resolveUserRef(tx, userRef);
  if (!user.is_local) throw badRequest(`user ${user.email} signs in through SSO; their groups come from the identity provider`);
  return { group, user };
}

export async function addGroupMember(deps: ChangeDeps, actor: Actor, groupRef: string, userRef: string): Promise<boolean> {
  const { added, userId } = await deps.db.transaction().execute(async (tx) => {
    const { group, user } = await localGroupAndUser(tx, groupRef, userRef);
    const row = await tx.insertInto('group_members').values({ group_id: group.id, user_id: user.id })
      .onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing()).returning('user_id').executeTakeFirst();
    if (row) await recordGovernance(tx, ev(actor, 'group.member.add', `group:${group.name}`, { details: { user: user.email } }));
    return { added: row !== undefined, userId: user.id };
  });
  return invalidating(deps, added, added, [userId]);
}

export async function removeGroupMember(deps: ChangeDeps, actor: Actor, groupRef: string, userRef: string): Promise<boolean> {
  const { removed, userId } = await deps.db.transaction().execute(async (tx) => {
    const { group, user } = await localGroupAndUser(tx, groupRef, userRef);
    const res = await tx.deleteFrom('group_members').where('group_id', '=', group.id).where('user_id', '=', user.id).executeTakeFirst();
    const removed = Number(res.numDeletedRows) > 0;
    if (removed) await recordGovernance(tx, ev(actor, 'group.member.remove', `group:${group.name}`, { details: { user: user.email } }));
    return { removed, userId: user.id };
  });
  return invalidating(deps, removed, removed, [userId]);
}

/** Grants (or revokes) platform_admin to a group; unknown names become identity-provider groups. */
export async function setGroupPlatformAdmin(deps: ChangeDeps, actor: Actor, groupRef: string, granted: boolean): Promise<boolean> {
  const changed = await deps.db.transaction().execute(async (tx) => {
    const group = await resolveGroupRef(tx, groupRef, { createIdp: granted });
    let changed: boolean;
    if (granted) {
      const row = await tx.insertInto('platform_role_grants')
        .values({ role: 'platform_admin', group_id: group.id, user_id: null, granted_by: actor.id })
        .onConflict((oc) => oc.columns(['role', 'group_id']).where('group_id', 'is not', null).doNothing())
        .returning('id').executeTakeFirst();
      changed = row !== undefined;
    } else {
      const res = await tx.deleteFrom('platform_role_grants').where('role', '=', 'platform_admin').where('group_id', '=', group.id).executeTakeFirst();
      changed = Number(res.numDeletedRows) > 0;
    }
    if (changed) {
      await recordGovernance(tx, ev(actor, granted ? 'platform.grant' : 'platform.revoke', `group:${group.name}`, { details: { role: 'platform_admin', idp_managed: group.idp_managed } }));
    }
    return changed;
  });
  return invalidating(deps, changed, changed, EVERYONE);
}

/** A new workspace has no grants yet: nothing to invalidate. */
export function createWorkspace(db: Db, actor: Actor, input: { slug: string; name?: string }) {
  assertSlug(input.slug);
  return db.transaction().execute(async (tx) => {
    try {
      const ws = await tx.insertInto('workspaces').values({ slug: input.slug, name: input.name?.trim() || input.slug, created_by: actor.id })
        .returningAll().executeTakeFirstOrThrow();
      await recordGovernance(tx, ev(actor, 'workspace.create', `workspace:${ws.slug}`, { workspace: ws.slug }));
      return ws;
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`workspace already exists: ${input.slug}`);
      throw err;
    }
  });
}

/** A rename changes the workspace names cached with everyone's access. */
export async function updateWorkspace(deps: ChangeDeps, actor: Actor, slug: string, patch: { name?: string; workflow_containers?: boolean; workflow_plugins?: boolean }) {
  const { ws, renamed } = await deps.db.transaction().execute(async (tx) => {
    const ws = await findWorkspace(tx, slug);
    if (!ws) throw notFound(`workspace does not exist: ${slug}`);
    const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    if (Object.keys(set).length === 0) return { ws, renamed: false };
    const updated = await tx.updateTable('workspaces').set(set).where('id', '=', ws.id).returningAll().executeTakeFirstOrThrow();
    await recordGovernance(tx, ev(actor, 'workspace.update', `workspace:${slug}`, { workspace: slug, details: set }));
    return { ws: updated, renamed: updated.name !== ws.name };
  });
  return invalidating(deps, ws, renamed, EVERYONE);
}

export async function setWorkspaceGroupRole(deps: ChangeDeps, actor: Actor, slug: string, groupRef: string, role: WorkspaceRole): Promise<GrantChange> {
  const change = await deps.db.transaction().execute(async (tx) => {
    const ws = await findWorkspace(tx, slug);
    if (!ws) throw notFound(`workspace does not exist: ${slug}`);
    const group = await resolveGroupRef(tx, groupRef, { createIdp: true });
    if (group.created) await recordGovernance(tx, ev(actor, 'group.create', `group:${group.name}`, { details: { idp_managed: true } }));
    const change = await grantWorkspaceRoleToGroup(tx, ws.id, group.id, role, actor.id, deps.clock.now());
    if (change !== 'unchanged') {
      await recordGovernance(tx, ev(actor, 'workspace.grant', `group:${group.name}`, { workspace: slug, details: { role, change } }));
    }
    return change;
  });
  return invalidating(deps, change, change !== 'unchanged', EVERYONE);
}

export async function removeWorkspaceGroup(deps: ChangeDeps, actor: Actor, slug: string, groupRef: string): Promise<boolean> {
  const removed = await deps.db.transaction().execute(async (tx) => {
    const ws = await findWorkspace(tx, slug);
    if (!ws) throw notFound(`workspace does not exist: ${slug}`);
    const group = await resolveGroupRef(tx, groupRef);
    const res = await tx.deleteFrom('workspace_role_grants').where('workspace_id', '=', ws.id).where('group_id', '=', group.id).executeTakeFirst();
    const removed = Number(res.numDeletedRows) > 0;
    if (removed) await recordGovernance(tx, ev(actor, 'workspace.revoke', `group:${group.name}`, { workspace: slug }));
    return removed;
  });
  return invalidating(deps, removed, removed, EVERYONE);
}

export async function listWorkspaceMembers(db: Db, slug: string) {
  const ws = await findWorkspace(db, slug);
  if (!ws) throw notFound(`workspace does not exist: ${slug}`);
  const rows = await db.selectFrom('workspace_role_grants as w')
    .leftJoin('groups as g', 'g.id', 'w.group_id')
    .leftJoin('users as u', 'u.id', 'w.user_id')
    .leftJoin('users as by', 'by.id', 'w.granted_by')
    .select(['w.role', 'w.granted_at', 'g.id as group_id', 'g.name as group_name', 'g.idp_managed', 'u.id as user_id', 'u.email as user_email', 'by.email as granted_by'])
    .where('w.workspace_id', '=', ws.id).orderBy('g.name').orderBy('u.email').execute();
  return {
    groups: rows.filter((r) => r.group_id).map((r) => ({ id: r.group_id!, name: r.group_name!, idp_managed: r.idp_managed!, role: r.role, granted_by: r.granted_by, granted_at: r.granted_at })),
    users: rows.filter((r) => r.user_id).map((r) => ({ id: r.user_id!, email: r.user_email!, role: r.role, granted_by: r.granted_by, granted_at: r.granted_at })),
  };
}
