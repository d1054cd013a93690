// Who may do what in the catalog (issue 12 point 4): one decision per request, from the gate's
// principal and the workspace (= warehouse) it addresses.
// - The static catalog.auth_token is administration: everything, everywhere.
// - A token acting for a person (`act`, from token exchange) carries the person's workspace role:
//   ws_viewer reads, ws_editor writes (creates, commits, renames), ws_admin also drops and manages
//   namespace properties. A platform administrator is ws_admin everywhere (as for /api). When the
//   token names a workspace (its client is bound to one), only that workspace.
// - A client's own token acts within its workspace with every right there; a client bound to
//   no workspace reaches no warehouse.
// Denials are 403 and name the rule that denied; a caller without any role in a workspace gets
// 403 before any name inside it is looked up, so names never leak (Lakekeeper does the same).
import type { Services } from '../services.js';
import type { WorkspaceRole } from '../db/index.js';
import { roleOf } from '../access/access.js';
import type { CatalogPrincipal } from './gate.js';
import { forbidden } from './errors.js';
import { TtlCache } from '../util/ttl-cache.js';
import { PolicyEvaluator, type Subject } from '../policy/evaluate.js';

export type CatalogRight = 'read' | 'write' | 'manage';
const NEEDS: Record<CatalogRight, WorkspaceRole> = { read: 'ws_viewer', write: 'ws_editor', manage: 'ws_admin' };
const RANK: Record<WorkspaceRole, number> = { ws_viewer: 1, ws_editor: 2, ws_admin: 3 };

/** The caller as recorded in governance events. */
export interface CatalogCaller {
  actorId: string | null;
  actor: string;
  /** The role this caller holds in `workspace`, or null for none; `why` names the rule. */
  roleIn(workspace: string): Promise<{ role: WorkspaceRole | null; why: string }>;
  /** Who the caller is for policy items (null: administration, which policies do not restrict). */
  subject(workspace: string): Promise<Subject | null>;
}

// Person lookups by `sub` (then email) for delegated tokens, a few seconds like access snapshots.
// The provider names `sub` and `email`, with no length limit but the token's: 4 MiB per replica.
const people = new WeakMap<Services, TtlCache<string, { id: string; email: string } | null>>();
export const PEOPLE_CACHE_BYTES = 4 * 1024 * 1024;
const personBytes = (k: string, v: { id: string; email: string } | null) => 200 + 2 * (k.length + (v ? v.id.length + v.email.length : 0));

function peopleCache(s: Services) {
  let cache = people.get(s);
  if (!cache) { cache = new TtlCache(10_000, 5_000, () => s.clock.now().getTime(), { max: PEOPLE_CACHE_BYTES, sizeOf: personBytes }); people.set(s, cache); }
  return cache;
}
/** Bytes the person lookups hold, as estimated (for tests and metrics). */
export const peopleCacheBytes = (s: Services) => peopleCache(s).byteSize;

async function findPerson(s: Services, sub: string, email: string | null) {
  const cache = peopleCache(s);
  const key = `${sub}\u0000${email ?? ''}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  let row = await s.db.selectFrom('users').select(['id', 'email']).where('sub', '=', sub).executeTakeFirst();
  if (!row && email) row = await s.db.selectFrom('users').select(['id', 'email']).where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase())).executeTakeFirst();
  const v = row ?? null;
  cache.set(key, v);
  return v;
}

export async function catalogCaller(s: Services, p: CatalogPrincipal): Promise<CatalogCaller> {
  if (p.kind === 'admin') {
    return { actorId: null, actor: 'catalog.auth_token', roleIn: async () => ({ role: 'ws_admin', why: 'the catalog administration token' }), subject: async () => null };
  }
  const bound = (ws: string) => p.workspace !== null && p.workspace !== ws;
  if (p.actor === null) {
    const label = `client:${p.clientId ?? p.sub}`;
    return {
      actorId: null, actor: label,
      roleIn: async (ws) => {
        if (p.workspace === null) return { role: null, why: `${label} is bound to no workspace` };
        if (bound(ws)) return { role: null, why: `${label} is bound to workspace ${p.workspace}` };
        return { role: 'ws_admin', why: `${label} acts within its workspace ${ws}` };
      },
      subject: async () => ({ users: [p.clientId ?? p.sub], groups: [], roles: ['ws_admin'] }),
    };
  }
  const person = await findPerson(s, p.sub, p.email);
  const label = person?.email ?? p.email ?? p.sub;
  if (!person) {
    return {
      actorId: null, actor: `${label} via client:${p.actor}`,
      roleIn: async () => ({ role: null, why: `${label} is not a user of this service` }),
      subject: async () => ({ users: [p.sub], groups: [], roles: [] }),
    };
  }
  const own = personCaller(s, person, [p.sub]);
  return {
    actorId: person.id, actor: `${label} via client:${p.actor}`,
    roleIn: async (ws) => {
      if (bound(ws)) return { role: null, why: `the token of client ${p.actor} is bound to workspace ${p.workspace}` };
      return own.roleIn(ws);
    },
    subject: own.subject,
  };
}

/**
 * A person acting for themselves (the console's session routes, issue 17): the same role and
 * policy subject as a token acting for them, so the console shows what an engine acting for the
 * person may read, and nothing more. `subs` are further user names policies may use.
 */
export function personCaller(s: Services, person: { id: string; email: string }, subs: string[] = []): CatalogCaller {
  const label = person.email;
  return {
    actorId: person.id, actor: label,
    roleIn: async (ws) => {
      const snap = await s.access.forUser(person.id);
      if (snap.platformAdmin) return { role: 'ws_admin', why: `${label} is a platform administrator` };
      const role = snap.workspaces.get(ws) ?? null;
      return { role, why: role ? `${label} has ${role} in workspace ${ws}` : `${label} has no role in workspace ${ws}` };
    },
    subject: async (ws) => {
      const snap = await s.access.forUser(person.id);
      const role = roleOf(snap, ws);
      return { users: [person.email, ...subs], groups: snap.groups.map((g) => g.name), roles: role ? [role] : [] };
    },
  };
}

/**
 * The in-process principal, `catalog.system_user`: what the service itself does in the catalog
 * (a purge job removing a dropped table's files) is done and recorded under this name. It is a
 * system administrator: every right in every warehouse, not restricted by policies, like the
 * administration token. It is not an HTTP caller: no token carries it. Governance events name it
 * by its configured name, so changing the key makes later events name a different administrator.
 */
export function systemCaller(s: Services): CatalogCaller {
  const name = s.config.catalog.system_user;
  return { actorId: null, actor: name, roleIn: async () => ({ role: 'ws_admin', why: `${name} is the in-process system principal` }), subject: async () => null };
}

/** Throws 403 ForbiddenException naming the rule unless the caller has `right` in `ws`. */
export async function requireRight(caller: CatalogCaller, ws: string, right: CatalogRight, what: string): Promise<WorkspaceRole> {
  const { role, why } = await caller.roleIn(ws);
  const need = NEEDS[right];
  if (role === null) throw forbidden(`Forbidden: ${why}`);
  if (RANK[role] < RANK[need]) throw forbidden(`Forbidden: ${why}; ${what} needs ${need}`);
  return role;
}

/** Catalog operations and the Ranger access types whose denial refuses them. */
export const POLICY_ACCESSES = {
  read: ['select'], create: ['create'], commit: ['insert', 'update', 'delete', 'alter'], drop: ['drop'], rename: ['alter'],
} as const;
export type PolicyOp = keyof typeof POLICY_ACCESSES;

const evaluators = new WeakMap<Services, PolicyEvaluator>();

/**
 * With the policy service on, its deny items restrict the catalog further (after the role check):
 * the policy's `catalog` resource matches the warehouse (workspace slug) or `iceberg`, `schema` the namespace
 * (levels joined by '.'), `table` the table or view name. 403 names the policy.
 */
export async function requirePolicies(s: Services, caller: CatalogCaller, ws: string, namespace: string[], name: string | undefined, op: PolicyOp): Promise<void> {
  if (!s.config.policy_service.enabled) return;
  const who = await caller.subject(ws);
  if (!who) return;
  let ev = evaluators.get(s);
  if (!ev) { ev = new PolicyEvaluator(s.db, () => s.clock.now().getTime()); evaluators.set(s, ev); }
  // The catalog resource names the warehouse (the workspace slug) or `iceberg`, the catalog's name
  // on every engine (Trino's iceberg.properties, the embedded engine): one policy governs both.
  const target = { schema: namespace.join('.'), table: name };
  const hit = await ev.denied(ws, who, { catalog: ws, ...target }, [...POLICY_ACCESSES[op]])
    ?? await ev.denied(ws, who, { catalog: 'iceberg', ...target }, [...POLICY_ACCESSES[op]]);
  if (hit) throw forbidden(`Forbidden: policy "${hit.policy}" denies ${hit.access} on ${[ws, ...namespace, ...(name ? [name] : [])].join('.')} to ${caller.actor}`);
}
