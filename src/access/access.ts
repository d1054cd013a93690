// What a user may do: platform roles and the role in each workspace, derived from the user's
// grants and the grants of the groups they belong to. One function decides every route's access.
import type { Db, WorkspaceRole } from '../db/index.js';
import type { Clock } from '../clock.js';
import { TtlCache } from '../util/ttl-cache.js';

export type Permission = 'workflow:use_secrets';

const RANK: Record<WorkspaceRole, number> = { ws_viewer: 1, ws_editor: 2, ws_admin: 3 };

/** Permissions beyond the role ladder; `workflow:use_secrets` is held by ws_admin only (SPEC 2). */
const PERMISSIONS: Record<Permission, WorkspaceRole[]> = {
  'workflow:use_secrets': ['ws_admin'],
};

export interface AccessSnapshot {
  userId: string;
  /** null when the user no longer exists */
  user: { id: string; email: string; name: string | null; sub: string | null; is_local: boolean } | null;
  groups: Array<{ name: string; idp_managed: boolean }>;
  platformAdmin: boolean;
  /** workspace slug -> effective role (the highest of the user's and their groups' grants) */
  workspaces: Map<string, WorkspaceRole>;
  workspaceNames: Map<string, string>;
}

export type Requirement =
  | { platform: 'platform_admin' }
  | { workspace: string; role: WorkspaceRole }
  | { workspace: string; permission: Permission };

export function roleAtLeast(have: WorkspaceRole | undefined, need: WorkspaceRole): boolean {
  return have !== undefined && RANK[have] >= RANK[need];
}

/**
 * The single access decision. A platform administrator administers every workspace (as Kestra's
 * superadmin and Grafana's server admin do for organisations); everyone else needs a grant.
 */
export function allows(a: AccessSnapshot, req: Requirement): boolean {
  if ('platform' in req) return a.platformAdmin;
  if (a.platformAdmin) return true;
  const role = a.workspaces.get(req.workspace);
  if ('role' in req) return roleAtLeast(role, req.role);
  return role !== undefined && PERMISSIONS[req.permission].includes(role);
}

/** The role a person acts with in a workspace: ws_admin for a platform administrator, else their grant (undefined without one). */
export function roleOf(a: AccessSnapshot, workspace: string): WorkspaceRole | undefined {
  return a.platformAdmin ? 'ws_admin' : a.workspaces.get(workspace);
}

export function permissionsOf(role: WorkspaceRole): Permission[] {
  return (Object.keys(PERMISSIONS) as Permission[]).filter((p) => PERMISSIONS[p].includes(role));
}

export async function loadAccess(db: Db, userId: string): Promise<AccessSnapshot> {
  const [user, groups, platform, ws] = await Promise.all([
    db.selectFrom('users').select(['id', 'email', 'name', 'sub', 'is_local']).where('id', '=', userId).executeTakeFirst(),
    db.selectFrom('group_members as m').innerJoin('groups as g', 'g.id', 'm.group_id')
      .select(['g.name', 'g.idp_managed']).where('m.user_id', '=', userId).orderBy('g.name').execute(),
    db.selectFrom('platform_role_grants as g')
      .leftJoin('group_members as m', 'm.group_id', 'g.group_id')
      .select('g.role')
      .where((eb) => eb.or([eb('g.user_id', '=', userId), eb('m.user_id', '=', userId)]))
      .limit(1).execute(),
    db.selectFrom('workspace_role_grants as g')
      .innerJoin('workspaces as w', 'w.id', 'g.workspace_id')
      .leftJoin('group_members as m', 'm.group_id', 'g.group_id')
      .select(['w.slug', 'w.name', 'g.role'])
      .where((eb) => eb.or([eb('g.user_id', '=', userId), eb('m.user_id', '=', userId)]))
      .execute(),
  ]);
  const workspaces = new Map<string, WorkspaceRole>();
  const workspaceNames = new Map<string, string>();
  for (const r of ws) {
    const cur = workspaces.get(r.slug);
    if (!cur || RANK[r.role] > RANK[cur]) workspaces.set(r.slug, r.role);
    workspaceNames.set(r.slug, r.name);
  }
  if (!user) return { userId, user: null, groups: [], platformAdmin: false, workspaces: new Map(), workspaceNames };
  return { userId, user, groups, platformAdmin: platform.length > 0, workspaces, workspaceNames };
}

/**
 * Bytes of cached access snapshots per replica. A snapshot grows with the person's groups and
 * workspaces, and /api/me keeps its serialised answer beside it (src/api/routes/me.ts), so its
 * strings count twice. Beyond it the oldest go; one larger than the whole budget is read per request.
 */
export const ACCESS_CACHE_BYTES = 32 * 1024 * 1024;

function accessBytes(userId: string, a: AccessSnapshot): number {
  let chars = userId.length;
  if (a.user) chars += a.user.id.length + a.user.email.length + (a.user.name?.length ?? 0) + (a.user.sub?.length ?? 0);
  for (const g of a.groups) chars += g.name.length;
  for (const [slug, name] of a.workspaceNames) chars += slug.length + name.length;
  return 512 + 96 * (a.groups.length + a.workspaces.size + a.workspaceNames.size) + 4 * chars;
}

/**
 * Access snapshots cached for a few seconds. Every governance change clears them everywhere: the
 * domain function that made it calls `invalidate('access', ...)` (see src/util/invalidation.ts),
 * which reaches `forget` here and on the other replicas.
 */
export class AccessResolver {
  private readonly cache: TtlCache<string, AccessSnapshot>;

  constructor(private readonly db: Db, clock: Clock, maxBytes = ACCESS_CACHE_BYTES) {
    this.cache = new TtlCache(50_000, 5_000, () => clock.now().getTime(), { max: maxBytes, sizeOf: accessBytes });
  }

  /** Bytes held, as estimated (for tests and metrics). */
  get bytes(): number { return this.cache.byteSize; }

  async forUser(userId: string): Promise<AccessSnapshot> {
    const hit = this.cache.get(userId);
    if (hit) return hit;
    const snap = await loadAccess(this.db, userId);
    this.cache.set(userId, snap);
    return snap;
  }

  /** Drops cached snapshots (`*` = all) on this replica. */
  forget(keys: string[]): void {
    if (keys.includes('*')) this.cache.clear();
    else for (const k of keys) this.cache.delete(k);
  }
}
