// The current revision of each flow and its inputs, which is all that starting an execution needs
// of it, kept so that a start does not read the flow first. Saving or deleting a flow invalidates
// its entry here and, over Redis, on the other replicas (src/util/invalidation.ts); the TTL bounds
// how long a replica that missed the message can start the previous revision.
import type { Db } from '../db/index.js';
import { TtlCache } from '../util/ttl-cache.js';
import type { FlowDef } from './flow.js';
import { flowCacheKey, getFlow, type FlowKey } from './flows.js';

export interface CurrentFlow { revision: number; inputs: FlowDef['inputs'] }

const TTL_MS = 60_000;
const MAX_ENTRIES = 5_000;
const MAX_BYTES = 8 * 1024 * 1024;

export class CurrentFlows {
  private readonly cache = new TtlCache<string, CurrentFlow>(MAX_ENTRIES, TTL_MS, Date.now, {
    max: MAX_BYTES, sizeOf: (k, v) => 2 * (k.length + JSON.stringify(v.inputs).length) + 64,
  });
  /** moves on every invalidation: a read that started before one must not fill the cache */
  private epoch = 0;

  constructor(private readonly db: Db) {}

  /** The flow's current revision and inputs; a missing or deleted flow is a 404 as getFlow says. */
  async get(key: FlowKey): Promise<CurrentFlow> {
    const k = flowCacheKey(key);
    const hit = this.cache.get(k);
    if (hit) return hit;
    const epoch = this.epoch;
    const row = await getFlow(this.db, key);
    const flow = { revision: row.revision, inputs: row.definition.inputs };
    if (epoch === this.epoch) this.cache.set(k, flow);
    return flow;
  }

  forget(keys: string[]): void {
    this.epoch++;
    for (const k of keys) this.cache.delete(k);
  }
}
