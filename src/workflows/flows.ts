// Flow storage: the current revision in `flows`, every revision's source in `flow_revisions`.
// Saving a flow that reads workspace secrets needs `workflow:use_secrets` (checked by the caller,
// who knows the person); saving is a governance change.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { notFound, badRequest, isUniqueViolation } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import { parseFlow, FlowValidationError, type FlowDef, type ParsedFlow } from './flow.js';
import { TtlCache } from '../util/ttl-cache.js';
import { SingleFlight } from '../util/single-flight.js';
import { validateTriggers } from './trigger-validation.js';
import { lengthProblems } from './flow-bounds.js';
import type { Actor } from '../access/actor.js';
import type { CacheInvalidation } from '../util/invalidation.js';

/** What a flow change needs: the database, and the caches to invalidate once it committed (current-flows.ts). */
export interface FlowChangeDeps { db: Db; invalidator: CacheInvalidation }

/** The invalidation key of a flow (kind `flow`, src/workflows/current-flows.ts). */
export const flowCacheKey = (k: FlowKey) => `${k.workspaceId}\u0000${k.namespace}\u0000${k.flowId}`;
/** The workspace id of a flowCacheKey. */
export const flowCacheWorkspace = (key: string) => key.slice(0, key.indexOf('\u0000'));

export interface FlowKey { workspaceId: string; namespace: string; flowId: string }
export interface FlowRecord { namespace: string; flow_id: string; revision: number; source: string; definition: FlowDef; uses_secrets: boolean; updated_at: Date; deleted: boolean }

/** parseFlow plus what only a save checks: string lengths (flow-bounds.ts) and triggers. */
export function validateSource(source: string): ParsedFlow {
  try {
    const parsed = parseFlow(source);
    // lengths first: a trigger's problem quotes its cron and time zone
    const long = lengthProblems(parsed.def);
    const problems = long.length ? long : validateTriggers(parsed.def);
    if (problems.length) throw new FlowValidationError(problems);
    return parsed;
  } catch (err) {
    if (err instanceof FlowValidationError) throw Object.assign(badRequest(`invalid flow: ${err.message}`), { problems: err.problems });
    throw err;
  }
}

export async function getFlow(db: Db, key: FlowKey, opts: { includeDeleted?: boolean } = {}): Promise<FlowRecord> {
  let q = db.selectFrom('flows').selectAll()
    .where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId);
  if (!opts.includeDeleted) q = q.where('deleted', '=', false);
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(`flow does not exist: ${key.namespace}.${key.flowId}`);
  return { ...row, definition: row.definition as FlowDef };
}

/** Runs counted per flow in the list, at most (the count reads that many index entries, then says "at least"). */
export const MAX_COUNTED_RUNS = 10_000;

/**
 * Flows of a workspace with what a list shows about their runs: the last execution (id, state,
 * when) and how many executions there are (up to MAX_COUNTED_RUNS), both from the executions'
 * (workspace, namespace, flow, created_at) index.
 */
export async function listFlows(db: Db, workspaceId: string, filter: { namespace?: string; limit: number; offset: number }) {
  let q = db.selectFrom('flows as f')
    .leftJoinLateral((eb) => eb.selectFrom('executions as e').select(['e.id', 'e.state', 'e.created_at'])
      .whereRef('e.workspace_id', '=', 'f.workspace_id').whereRef('e.namespace', '=', 'f.namespace').whereRef('e.flow_id', '=', 'f.flow_id')
      .orderBy('e.created_at', 'desc').limit(1).as('last'), (j) => j.onTrue())
    .select(['f.namespace', 'f.flow_id', 'f.revision', 'f.updated_at', 'f.definition', 'last.id as last_execution_id', 'last.state as last_state', 'last.created_at as last_execution_at'])
    .select(sql<string>`(SELECT count(*) FROM (SELECT 1 FROM executions x WHERE x.workspace_id = f.workspace_id AND x.namespace = f.namespace AND x.flow_id = f.flow_id LIMIT ${MAX_COUNTED_RUNS}) n)`.as('runs'))
    .where('f.workspace_id', '=', workspaceId).where('f.deleted', '=', false)
    .orderBy('f.namespace').orderBy('f.flow_id').limit(filter.limit).offset(filter.offset);
  if (filter.namespace) q = q.where((eb) => eb.or([eb('f.namespace', '=', filter.namespace!), eb('f.namespace', 'like', `${filter.namespace!.replace(/[%_\\]/g, '\\$&')}.%`)]));
  return q.execute();
}

/**
 * Creates or updates a flow from its YAML source; the id and namespace in the source must match
 * the key when one is given (an update). Returns the stored record and whether it changed.
 */
export async function saveFlow(deps: FlowChangeDeps, actor: Actor, workspaceId: string, workspaceSlug: string, source: string, expect?: { namespace: string; flowId: string }): Promise<{ flow: FlowRecord; created: boolean; changed: boolean }> {
  const parsed = validateSource(source);
  const { def } = parsed;
  if (expect && (def.namespace !== expect.namespace || def.id !== expect.flowId)) {
    throw badRequest(`the source declares ${def.namespace}.${def.id}, not ${expect.namespace}.${expect.flowId}; a flow's id and namespace cannot change`);
  }
  // Two first saves of the same flow at once both find no row to lock and both insert: the loser
  // gets a unique violation and runs again, now seeing (and locking) the winner's row, so it ends
  // as an update or as "unchanged" instead of an error.
  let res: Awaited<ReturnType<typeof saveOnce>>;
  try {
    res = await saveOnce(deps.db, actor, workspaceId, workspaceSlug, source, parsed, expect);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    res = await saveOnce(deps.db, actor, workspaceId, workspaceSlug, source, parsed, expect);
  }
  if (res.changed) await deps.invalidator.invalidate('flow', [flowCacheKey({ workspaceId, namespace: def.namespace, flowId: def.id })]);
  return res;
}

function saveOnce(db: Db, actor: Actor, workspaceId: string, workspaceSlug: string, source: string, parsed: ParsedFlow, expect?: { namespace: string; flowId: string }): Promise<{ flow: FlowRecord; created: boolean; changed: boolean }> {
  const { def } = parsed;
  return db.transaction().execute(async (tx) => {
    const current = await tx.selectFrom('flows').selectAll()
      .where('workspace_id', '=', workspaceId).where('namespace', '=', def.namespace).where('flow_id', '=', def.id)
      .forUpdate().executeTakeFirst();
    if (expect && (!current || current.deleted)) throw notFound(`flow does not exist: ${expect.namespace}.${expect.flowId}`);
    if (current && !current.deleted && current.source === source) {
      return { flow: { ...current, definition: current.definition as FlowDef }, created: false, changed: false };
    }
    const revision = (current?.revision ?? 0) + 1;
    const now = new Date();
    const values = { source, definition: JSON.stringify(def), uses_secrets: parsed.usesSecrets, revision, deleted: false, updated_at: now, updated_by: actor.id };
    const row = current
      ? await tx.updateTable('flows').set(values).where('workspace_id', '=', workspaceId).where('namespace', '=', def.namespace).where('flow_id', '=', def.id).returningAll().executeTakeFirstOrThrow()
      : await tx.insertInto('flows').values({ workspace_id: workspaceId, namespace: def.namespace, flow_id: def.id, ...values }).returningAll().executeTakeFirstOrThrow();
    await tx.insertInto('flow_revisions').values({ workspace_id: workspaceId, namespace: def.namespace, flow_id: def.id, revision, source, created_by: actor.id }).execute();
    await recordGovernance(tx, { action: current && !current.deleted ? 'flow.update' : 'flow.create', actorId: actor.id, actor: actor.email, target: `flow:${def.namespace}.${def.id}`, workspace: workspaceSlug, details: { revision, uses_secrets: parsed.usesSecrets } });
    return { flow: { ...row, definition: row.definition as FlowDef }, created: !current || current.deleted, changed: true };
  });
}

export async function deleteFlow(deps: FlowChangeDeps, actor: Actor, key: FlowKey, workspaceSlug: string): Promise<void> {
  await deps.db.transaction().execute(async (tx) => {
    const current = await tx.selectFrom('flows').select(['revision', 'source', 'deleted'])
      .where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId)
      .forUpdate().executeTakeFirst();
    if (!current || current.deleted) throw notFound(`flow does not exist: ${key.namespace}.${key.flowId}`);
    const revision = current.revision + 1;
    await tx.updateTable('flows').set({ deleted: true, revision, updated_at: new Date(), updated_by: actor.id })
      .where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId).execute();
    await tx.insertInto('flow_revisions').values({ workspace_id: key.workspaceId, namespace: key.namespace, flow_id: key.flowId, revision, source: current.source, deleted: true, created_by: actor.id }).execute();
    await tx.deleteFrom('trigger_states').where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId).execute();
    await recordGovernance(tx, { action: 'flow.delete', actorId: actor.id, actor: actor.email, target: `flow:${key.namespace}.${key.flowId}`, workspace: workspaceSlug, details: { revision } });
  });
  await deps.invalidator.invalidate('flow', [flowCacheKey(key)]);
}

export async function listRevisions(db: Db, key: FlowKey) {
  return db.selectFrom('flow_revisions').select(['revision', 'deleted', 'created_at', 'created_by'])
    .where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId)
    .orderBy('revision', 'desc').execute();
}

/** One revision with its source (a deleted flow's last revision repeats the source it had). */
export async function getRevision(db: Db, key: FlowKey, revision: number) {
  const row = await db.selectFrom('flow_revisions').select(['revision', 'source', 'deleted', 'created_at'])
    .where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId).where('revision', '=', revision)
    .executeTakeFirst();
  if (!row) throw notFound(`flow revision does not exist: ${key.namespace}.${key.flowId} revision ${revision}`);
  return row;
}

/**
 * Bytes of parsed definitions a FlowDefinitions keeps (estimated at set time from the definition's
 * JSON, once per revision and hour). Beyond it the oldest go; a definition larger than the whole
 * budget is not kept, and each step of its executions reads and parses it again.
 */
export const DEFINITION_CACHE_BYTES = 16 * 1024 * 1024;
const definitionBytes = (k: string, def: FlowDef) => 256 + 2 * k.length + 3 * JSON.stringify(def).length;

/** Parsed definitions of exact revisions; a revision never changes, so the cache never goes stale. */
export class FlowDefinitions {
  private readonly cache: TtlCache<string, FlowDef>;
  private readonly loading = new SingleFlight<string, FlowDef>();
  constructor(private readonly db: Db, maxBytes = DEFINITION_CACHE_BYTES) {
    this.cache = new TtlCache(2_000, 3_600_000, Date.now, { max: maxBytes, sizeOf: definitionBytes });
  }
  /** Bytes held, as estimated (for tests and metrics). */
  get bytes(): number { return this.cache.byteSize; }

  async get(key: FlowKey, revision: number): Promise<FlowDef> {
    const k = `${key.workspaceId}/${key.namespace}/${key.flowId}@${revision}`;
    const hit = this.cache.get(k);
    if (hit) return hit;
    // a revision never changes: nothing to forget, concurrent misses share one read and parse
    return this.loading.run(k, async () => {
      const row = await this.db.selectFrom('flow_revisions').select('source')
        .where('workspace_id', '=', key.workspaceId).where('namespace', '=', key.namespace).where('flow_id', '=', key.flowId).where('revision', '=', revision)
        .executeTakeFirst();
      if (!row) throw notFound(`flow revision does not exist: ${key.namespace}.${key.flowId} revision ${revision}`);
      const def = parseFlow(row.source).def;
      this.cache.set(k, def);
      return def;
    });
  }
}
