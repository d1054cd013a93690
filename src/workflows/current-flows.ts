// The current revision of each flow and its inputs, which is all that starting an execution needs
// of it, kept so that a start does not read the flow first; and whether a workspace has any flow
// with a flow trigger, which is all that ending one needs (no flow trigger: no end to announce).
// Saving or deleting a flow invalidates its entries here and, over Redis, on the other replicas
// (src/util/invalidation.ts); the TTLs bound how long a replica that missed the message can start
// the previous revision, or leave a new flow trigger unheard.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';
import { TtlCache } from '../util/ttl-cache.js';
import { SingleFlight } from '../util/single-flight.js';
import type { FlowDef } from './flow.js';
import { flowCacheKey, flowCacheWorkspace, getFlow, type FlowKey } from './flows.js';

export interface CurrentFlow { revision: number; inputs: FlowDef['inputs'] }

const TTL_MS = 60_000;
const MAX_ENTRIES = 5_000;
const MAX_BYTES = 8 * 1024 * 1024;
/** Short: a replica that missed an invalidation hears a new flow trigger within this. */
const TRIGGERS_TTL_MS = 5_000;
const MAX_WORKSPACES = 10_000;

export class CurrentFlows {
  private readonly cache = new TtlCache<string, CurrentFlow>(MAX_ENTRIES, TTL_MS, Date.now, {
    max: MAX_BYTES, sizeOf: (k, v) => 2 * (k.length + JSON.stringify(v.inputs).length) + 64,
  });
  /** workspace id -> whether one of its flows has a flow trigger (36-character keys, one boolean: bounded by count) */
  private readonly flowTriggers: TtlCache<string, boolean>;
  private readonly loading = new SingleFlight<string, CurrentFlow>();
  /** moves on every invalidation: a read that started before one must not fill the cache */
  private epoch = 0;

  constructor(private readonly db: Db, clock: Clock) {
    this.flowTriggers = new TtlCache(MAX_WORKSPACES, TRIGGERS_TTL_MS, () => clock.now().getTime());
  }

  /** The flow's current revision and inputs; a missing or deleted flow is a 404 as getFlow says. */
  async get(key: FlowKey): Promise<CurrentFlow> {
    const k = flowCacheKey(key);
    const hit = this.cache.get(k);
    if (hit) return hit;
    return this.loading.run(k, async () => {
      const epoch = this.epoch;
      const row = await getFlow(this.db, key);
      const flow = { revision: row.revision, inputs: row.definition.inputs };
      if (epoch === this.epoch) this.cache.set(k, flow);
      return flow;
    });
  }

  /**
   * Whether a flow of the workspace (not deleted) declares a flow trigger, enabled or not: when none
   * does, an ended execution of it has no one to tell (triggers.ts processExecutionEnded).
   */
  async hasFlowTriggers(workspaceId: string): Promise<boolean> {
    const hit = this.flowTriggers.get(workspaceId);
    if (hit !== undefined) return hit;
    const epoch = this.epoch;
    const row = await this.db.selectFrom('flows').select(sql<number>`1`.as('one'))
      .where('workspace_id', '=', workspaceId).where('deleted', '=', false)
      .where(sql<boolean>`definition @> '{"triggers":[{"type":"flow"}]}'::jsonb`).limit(1).executeTakeFirst();
    if (epoch === this.epoch) this.flowTriggers.set(workspaceId, !!row);
    return !!row;
  }

  forget(keys: string[]): void {
    this.epoch++;
    for (const k of keys) {
      this.cache.delete(k);
      this.loading.forget(k);
      this.flowTriggers.delete(flowCacheWorkspace(k));
    }
  }
}
