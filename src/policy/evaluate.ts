// Deny items of the policy service applied where this service itself decides access (the
// catalog): the same policies engines download restrict the catalog too, so one set of rules
// governs both. Roles grant (ws_viewer reads, ...); an enabled policy whose resources match and
// whose deny item names the caller (user, group or workspace role) and the access refuses, and the
// refusal names the policy. Allow items grant nothing here (they are for engines, whose own
// defaults deny). Column-level policies are for engines only: the catalog never sees columns.
import type { Db } from '../db/index.js';
import { TtlCache } from '../util/ttl-cache.js';
import type { PolicyItem } from './policies.js';

export interface Subject { users: string[]; groups: string[]; roles: string[] }
export interface Target { catalog: string; schema: string; table?: string }
interface Rule { name: string; resources: Record<string, string[]>; deny: PolicyItem[] }

function wildcard(pattern: string): RegExp {
  return new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
}
const matches = (values: string[] | undefined, v: string | undefined) => values === undefined || (v !== undefined && values.some((p) => wildcard(p).test(v)));

/**
 * Bytes of cached rules per replica: a workspace may hold any number of policies. Estimated from
 * their JSON when read (once per workspace and 5 s). Beyond it the oldest workspaces go; rules
 * larger than the whole budget are read for each decision.
 */
export const POLICY_CACHE_BYTES = 16 * 1024 * 1024;
const rulesBytes = (workspace: string, rules: Rule[]) => 256 + 2 * workspace.length + 3 * JSON.stringify(rules).length;

export class PolicyEvaluator {
  private readonly cache: TtlCache<string, Rule[]>;
  constructor(private readonly db: Db, now: () => number, maxBytes = POLICY_CACHE_BYTES) {
    this.cache = new TtlCache(10_000, 5_000, now, { max: maxBytes, sizeOf: rulesBytes });
  }
  /** Bytes held, as estimated (for tests and metrics). */
  get bytes(): number { return this.cache.byteSize; }

  private async rules(workspace: string): Promise<Rule[]> {
    const hit = this.cache.get(workspace);
    if (hit) return hit;
    const rows = await this.db.selectFrom('policies as p').innerJoin('workspaces as w', 'w.id', 'p.workspace_id')
      .select(['p.name', 'p.resources', 'p.deny_items']).where('w.slug', '=', workspace).where('p.is_enabled', '=', true).orderBy('p.id').execute();
    const rules = rows.map((r) => ({ name: r.name, resources: r.resources as Record<string, string[]>, deny: r.deny_items as PolicyItem[] }))
      .filter((r) => r.deny.length > 0 && r.resources.column === undefined);
    this.cache.set(workspace, rules);
    return rules;
  }

  /** The name of the first policy denying one of `accesses` on `target` to `who`, or null. */
  async denied(workspace: string, who: Subject, target: Target, accesses: string[]): Promise<{ policy: string; access: string } | null> {
    for (const r of await this.rules(workspace)) {
      if (!matches(r.resources.catalog, target.catalog) || !matches(r.resources.schema, target.schema)) continue;
      // A schema-level policy covers every table in it; a table-level one needs a table.
      if (r.resources.table !== undefined && !matches(r.resources.table, target.table)) continue;
      for (const item of r.deny) {
        const named = (item.users ?? []).some((u) => who.users.includes(u)) || (item.groups ?? []).some((g) => who.groups.includes(g)) || (item.roles ?? []).some((x) => who.roles.includes(x));
        if (!named) continue;
        const access = accesses.find((a) => item.accesses.includes(a) || item.accesses.includes('all'));
        if (access) return { policy: r.name, access };
      }
    }
    return null;
  }
}
