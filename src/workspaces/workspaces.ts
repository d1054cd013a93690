// Workspaces: a slug used in paths and by the CLI; feature switches off by default.
import type { Db, Workspace } from '../db/index.js';
import { badRequest } from '../errors.js';

export const SLUG_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function assertSlug(slug: string): void {
  if (!SLUG_RE.test(slug)) {
    throw badRequest(`invalid workspace slug "${slug}": use 1-63 lower-case letters, digits and '-', starting with a letter or digit`);
  }
}

export function findWorkspace(db: Db, slug: string): Promise<Workspace | undefined> {
  return db.selectFrom('workspaces').selectAll().where('slug', '=', slug).executeTakeFirst();
}

/** Creates the workspace unless it exists; returns it and whether it was created. */
export async function ensureWorkspace(db: Db, slug: string, createdBy: string | null): Promise<{ workspace: Workspace; created: boolean }> {
  assertSlug(slug);
  const inserted = await db.insertInto('workspaces')
    .values({ slug, name: slug, created_by: createdBy })
    .onConflict((oc) => oc.column('slug').doNothing())
    .returningAll().executeTakeFirst();
  if (inserted) return { workspace: inserted, created: true };
  return { workspace: (await findWorkspace(db, slug))!, created: false };
}
