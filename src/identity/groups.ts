// Groups: identity-provider-managed groups come from the token's groups claim; local groups are
// created by administrators. The two never mix, even under the same name.
import type { Db } from '../db/index.js';
import { badRequest } from '../errors.js';

export function assertGroupName(name: string): void {
  if (name.length === 0 || name.length > 255 || /[\u0000-\u001f]/.test(name)) {
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
