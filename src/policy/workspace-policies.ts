// A workspace's enabled policies, prepared for decide.ts and kept per replica until the policy
// version changes: every load reads the workspace's current policy version (one indexed row), so
// a policy saved, enabled, disabled or deleted applies to the next statement, and the policies
// themselves are read again only when it moved. Entries are keyed by slug and hold the workspace
// id they were read for, so a workspace deleted and made again under the same slug is read anew.
// Only the named workspace's rows are ever read: another workspace's policies never apply.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { TtlCache } from '../util/ttl-cache.js';
import { NO_POLICIES, preparePolicies, type StoredPolicy, type WorkspacePolicies } from './decide.js';
import type { MaskItem, PolicyItem, RowFilterItem } from './policies.js';

/**
 * Bytes of prepared policies per replica: a workspace may hold any number of policies. Estimated
 * from their JSON when read; beyond it the least recently read workspaces go, and a workspace
 * larger than the whole budget is read for each statement.
 */
export const ENGINE_POLICY_CACHE_BYTES = 16 * 1024 * 1024;
/** An entry unused this long goes (the version check keeps a used one right). */
const IDLE_MS = 10 * 60_000;

interface Entry { workspaceId: string; policies: WorkspacePolicies; bytes: number }

export class EnginePolicies {
  private readonly cache: TtlCache<string, Entry>;
  constructor(private readonly db: Db, now: () => number, maxBytes = ENGINE_POLICY_CACHE_BYTES) {
    this.cache = new TtlCache(10_000, IDLE_MS, now, { max: maxBytes, sizeOf: (slug, e) => 256 + 2 * slug.length + e.bytes });
  }
  /** Bytes held, as estimated (for tests and metrics). */
  get bytes(): number { return this.cache.byteSize; }

  /** The enabled policies of `workspace` (its slug), at its current policy version. */
  async load(workspace: string): Promise<WorkspacePolicies> {
    const ws = await this.db.selectFrom('workspaces as w').leftJoin('policy_services as p', 'p.workspace_id', 'w.id')
      .select(['w.id', sql<string>`coalesce(p.policy_version, 0)`.as('version')]).where('w.slug', '=', workspace).executeTakeFirst();
    if (!ws) return NO_POLICIES;
    const version = Number(ws.version);
    const hit = this.cache.get(workspace);
    if (hit && hit.workspaceId === ws.id && hit.policies.version === version) {
      this.cache.set(workspace, hit); // most recently used goes last
      return hit.policies;
    }
    const rows = await this.db.selectFrom('policies')
      .select(['name', 'resources', 'allow_items', 'deny_items', 'mask_items', 'row_filter_items'])
      .where('workspace_id', '=', ws.id).where('is_enabled', '=', true).orderBy('id').execute();
    const stored: StoredPolicy[] = rows.map((r) => ({
      name: r.name, resources: r.resources as Record<string, string[]>, allow: r.allow_items as PolicyItem[], deny: r.deny_items as PolicyItem[],
      masks: r.mask_items as MaskItem[], row_filters: r.row_filter_items as RowFilterItem[],
    }));
    const policies = preparePolicies(stored, version);
    // Compiled matchers and the rule objects take about three times the JSON they come from.
    this.cache.set(workspace, { workspaceId: ws.id, policies, bytes: 3 * JSON.stringify(stored).length });
    return policies;
  }
}
