// Groups: identity-provider-managed groups come from the token's groups claim; local groups are
// created by administrators. The two never mix, even under the same name.
import type { Db } from '../db/index.js';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';

export interface GroupRow { id: string; name: string; idp_managed: boolean }

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function assertGroupName(name: string): void {
  if (name.length === 0 || name.length > 255 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw badRequest('invalid group name: 1 to 255 characters, no control characters');
  }
}

/** Finds or creates the identity-provider group of that name; returns its id and whether it is new. */
export async function ensureIdpGroup(db: Db, name: string): Promise<{ id: string; created: boolean }> {
  assertGroupName(name);
  const inserted = await db.insertInto('groups').values({ name, idp_managed: true })
    .onConflict((oc) => oc.columns(['name', 'idp_managed']).doNothing())
    .returning('id').executeTakeFirst();
  if (inserted) return { id: inserted.id, created: true };
  const row = await db.selectFrom('groups').select('id')
    .where('name', '=', name).where('idp_managed', '=', true).executeTakeFirstOrThrow();
  return { id: row.id, created: false };
}

export async function createLocalGroup(db: Db, name: string): Promise<GroupRow> {
  assertGroupName(name);
  try {
    return await db.insertInto('groups').values({ name, idp_managed: false })
      .returning(['id', 'name', 'idp_managed']).executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`group already exists: ${name}`);
    throw err;
  }
}

/**
 * A group named in a path: its id, or its name. A name that is both a local and an
 * identity-provider group is ambiguous (409) and must be given by id. With `createIdp`, an
 * unknown name becomes an identity-provider group (grants may precede the first sign-in).
 */
export async function resolveGroupRef(db: Db, ref: string, opts: { createIdp?: boolean } = {}): Promise<GroupRow & { created?: boolean }> {
  if (UUID_RE.test(ref)) {
    const g = await db.selectFrom('groups').select(['id', 'name', 'idp_managed']).where('id', '=', ref).executeTakeFirst();
    if (g) return g;
  }
  const rows = await db.selectFrom('groups').select(['id', 'name', 'idp_managed']).where('name', '=', ref).execute();
  if (rows.length > 1) throw conflict(`group name "${ref}" is both a local and an identity-provider group; use its id`);
  if (rows.length === 1) return rows[0];
  if (opts.createIdp) {
    const { id, created } = await ensureIdpGroup(db, ref);
    return { id, name: ref, idp_managed: true, created };
  }
  throw notFound(`group does not exist: ${ref}`);
}

export async function listGroups(db: Db) {
  const rows = await db.selectFrom('groups as g')
    .leftJoin('platform_role_grants as p', 'p.group_id', 'g.id')
    .select((eb) => [
      'g.id', 'g.name', 'g.idp_managed', 'g.created_at', 'p.role as platform_role',
      eb.selectFrom('group_members as m').whereRef('m.group_id', '=', 'g.id').select((e) => e.fn.countAll<string>().as('n')).as('members'),
    ])
    .orderBy('g.name').orderBy('g.idp_managed').execute();
  return rows.map((r) => ({
    id: r.id, name: r.name, idp_managed: r.idp_managed, created_at: r.created_at,
    platform_roles: r.platform_role ? [r.platform_role] : [], members: Number(r.members ?? 0),
  }));
}

export async function listGroupMembers(db: Db, groupId: string) {
  return db.selectFrom('group_members as m').innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.id', 'u.email', 'u.name', 'u.is_local', 'm.added_at'])
    .where('m.group_id', '=', groupId).orderBy('u.email').execute();
}
