// Executions: created by the API, a trigger or a webhook (validated, recorded, enqueued); advanced
// only by workers. With workflow.worker_enabled false an execution is created and nothing moves it.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { ExecutionState, ExecutionsTable } from '../db/workflow-types.js';
import type { Selectable } from 'kysely';
import { createdSnapshot, forgetStarted, startCreated } from './orchestrator.js';
import { badRequest, conflict, DependencyUnavailable, notFound } from '../errors.js';
import { within } from '../util/deadline.js';
import type { NewExecution } from './execution-store.js';
import { FlowValidationError, resolveInputs } from './flow.js';

export const TERMINAL_EXECUTION: ExecutionState[] = ['SUCCESS', 'FAILED', 'KILLED'];

export interface CreateExecution {
  workspaceId: string;
  namespace: string;
  flowId: string;
  inputs: Record<string, unknown>;
  /** how it started: {type: 'api', user} | {type: 'schedule', id, date} | {type: 'flow', ...} | {type: 'webhook', id} */
  trigger: Record<string, unknown>;
  /**
   * A request waits for its start to be queued at most START_QUEUE_WAIT_MS: when the queue (Redis)
   * cannot take it, the execution is taken back and the request answers 503, so the answer stays
   * true. Triggers (no request) wait for Redis instead, and the sweep starts what they recorded.
   */
  request?: boolean;
  /** The client's Idempotency-Key: the same key for the same flow of the same workspace answers the same execution (24 h). */
  idempotencyKey?: string;
}

/** How long a request waits for Redis to take its start before answering 503. */
export const START_QUEUE_WAIT_MS = 3_000;
/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** An Idempotency-Key: printable ASCII, at most 255 characters (as the header's drafts and payment APIs use). */
export const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

type ExecutionRow = Selectable<ExecutionsTable>;

/** The queue (Redis) cannot take the start now: logged with its name, answered 503. */
const queueUnavailable = (what: string) => new DependencyUnavailable('Redis', `the job queue did not take ${what} within ${START_QUEUE_WAIT_MS} ms`);

export async function createExecution(services: Services, req: CreateExecution): Promise<ExecutionRow> {
  const flow = await services.flows.get({ workspaceId: req.workspaceId, namespace: req.namespace, flowId: req.flowId });
  let inputs: Record<string, unknown>;
  try {
    inputs = resolveInputs(flow.inputs, req.inputs);
  } catch (err) {
    if (err instanceof FlowValidationError) throw badRequest(`invalid inputs: ${err.message}`);
    throw err;
  }
  const key = req.idempotencyKey;
  if (key !== undefined) {
    if (!IDEMPOTENCY_KEY_RE.test(key)) throw badRequest('Idempotency-Key must be 1 to 255 printable ASCII characters');
    const earlier = await idempotentExecution(services, req, key);
    if (earlier) return earlier;
  }
  // Redis known to be down: answer at once, before recording anything.
  if (req.request && !services.workflowQueue.available()) throw queueUnavailable('the start');
  const id = randomUUID();
  const created_at = services.clock.now();
  const e = { id, workspace_id: req.workspaceId, namespace: req.namespace, flow_id: req.flowId, flow_revision: flow.revision, inputs, trigger: req.trigger, created_at };
  const bound = req.request ? <T>(p: Promise<T>) => within(p, START_QUEUE_WAIT_MS, () => queueUnavailable('the start')) : undefined;
  try {
    // With a workflow worker in this process the first step is taken here; the answer is the
    // execution as created all the same (the state a start job's caller saw). A keyed start is
    // recorded with its key in one transaction instead, so that two requests with one key make one.
    if (key === undefined && await startCreated(services, e, bound)) {
      return { ...e, state: 'CREATED', outputs: {}, error: null, kill_requested_at: null, files_pruned_at: null, version: '0', started_at: null, ended_at: null } as ExecutionRow;
    }
    const row = key === undefined ? await insertCreated(services, e) : await insertKeyed(services, e, key);
    if (row.id !== id) return row; // a concurrent request with the same key created it
    const queued = enqueueAdvance(services, id, 'start', row);
    await (bound ? bound(queued) : queued);
    return row;
  } catch (err) {
    if (err instanceof DependencyUnavailable && bound) await takeBack(services, id);
    throw err;
  }
}

function insertCreated(services: Services, e: NewExecution) {
  return services.db.insertInto('executions').values({ ...e, state: 'CREATED', inputs: JSON.stringify(e.inputs), trigger: JSON.stringify(e.trigger) })
    .returningAll().executeTakeFirstOrThrow();
}

/**
 * Records the execution and its key in one transaction. When another request took the key first
 * (the primary key refuses the second), answers that request's execution instead.
 */
async function insertKeyed(services: Services, e: NewExecution, key: string): Promise<ExecutionRow> {
  const made = await services.db.transaction().execute(async (tx) => {
    const row = await tx.insertInto('executions').values({ ...e, state: 'CREATED', inputs: JSON.stringify(e.inputs), trigger: JSON.stringify(e.trigger) })
      .returningAll().executeTakeFirstOrThrow();
    // a key older than its 24 h may be given again: the old one gives way
    await tx.deleteFrom('execution_idempotency').where('workspace_id', '=', e.workspace_id).where('namespace', '=', e.namespace).where('flow_id', '=', e.flow_id)
      .where('key', '=', key).where('created_at', '<', new Date(e.created_at.getTime() - IDEMPOTENCY_TTL_MS)).execute();
    const took = await tx.insertInto('execution_idempotency')
      .values({ workspace_id: e.workspace_id, namespace: e.namespace, flow_id: e.flow_id, key, execution_id: e.id, created_at: e.created_at })
      .onConflict((oc) => oc.doNothing()).returning('execution_id').executeTakeFirst();
    if (!took) throw new KeyTaken();
    return row;
  }).catch((err: unknown) => { if (err instanceof KeyTaken) return undefined; throw err; });
  if (made) return made;
  const earlier = await idempotentExecution(services, { workspaceId: e.workspace_id, namespace: e.namespace, flowId: e.flow_id }, key);
  if (!earlier) throw conflict('a start with this Idempotency-Key is being recorded by another request; retry');
  return earlier;
}

class KeyTaken extends Error {}

/** The execution an Idempotency-Key made in the last 24 h, if any. */
async function idempotentExecution(services: Services, req: Pick<CreateExecution, 'workspaceId' | 'namespace' | 'flowId'>, key: string): Promise<ExecutionRow | undefined> {
  return services.db.selectFrom('execution_idempotency as k').innerJoin('executions as e', 'e.id', 'k.execution_id').selectAll('e')
    .where('k.workspace_id', '=', req.workspaceId).where('k.namespace', '=', req.namespace).where('k.flow_id', '=', req.flowId).where('k.key', '=', key)
    .where('k.created_at', '>=', new Date(services.clock.now().getTime() - IDEMPOTENCY_TTL_MS))
    .executeTakeFirst();
}

/**
 * Takes back an execution whose start the queue did not take in time: the request answers 503, so
 * nothing of it may run (its key goes with it). A start job Redis took after all finds no
 * execution and does nothing. When PostgreSQL refuses the delete too, the execution stays
 * CREATED and the sweep starts it.
 */
async function takeBack(services: Services, id: string): Promise<void> {
  forgetStarted(services, id);
  await services.db.deleteFrom('executions').where('id', '=', id).execute().catch((err: Error) => {
    services.logging.module('svc::workflows').warn({ executionId: id, err: err.message }, 'taking back an execution whose start was not queued failed: the sweep starts it');
  });
}

/** Deletes Idempotency-Keys past their 24 h (the maintenance loop, hourly). */
export async function pruneIdempotencyKeys(db: Services['db'], now: Date): Promise<number> {
  const r = await db.deleteFrom('execution_idempotency').where('created_at', '<', new Date(now.getTime() - IDEMPOTENCY_TTL_MS)).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** A start job carries the execution as created when it is small, so the first step need not read it. */
const CARRY_MAX_BYTES = 16_384;

/** Asks a worker to (re)evaluate an execution. Jobs of one execution are deduplicated while waiting. */
export async function enqueueAdvance(services: Services, executionId: string, reason: 'start' | 'advance' | 'kill', created?: Selectable<ExecutionsTable>, requeued?: number): Promise<void> {
  const carried = created && JSON.stringify(created.inputs).length <= CARRY_MAX_BYTES ? createdSnapshot(created) : undefined;
  await services.workflowQueue.advance(executionId, reason, carried, requeued);
}

export async function getExecution(services: Services, workspaceId: string, id: string) {
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw notFound(`execution does not exist: ${id}`);
  const exec = await services.db.selectFrom('executions').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
  if (!exec) throw notFound(`execution does not exist: ${id}`);
  const runs = await services.db.selectFrom('task_runs').selectAll().where('execution_id', '=', id).orderBy('created_at').orderBy('path').execute();
  return { exec, runs };
}

/** Task-run attempts an execution keeps at most in one answer (retries of a large foreach). */
export const MAX_ATTEMPTS_LISTED = 10_000;

/**
 * The finished attempts of an execution's task runs (a row is written when an attempt ends; the
 * attempt under way is the task run's own `attempt`), oldest first per task run.
 */
export async function listAttempts(services: Services, executionId: string) {
  return services.db.selectFrom('task_run_attempts as a').innerJoin('task_runs as t', 't.id', 'a.task_run_id')
    .select(['a.task_run_id', 'a.attempt', 'a.state', 'a.reason', 'a.log_lines', 'a.started_at', 'a.ended_at'])
    .where('t.execution_id', '=', executionId)
    .orderBy('a.task_run_id').orderBy('a.attempt').limit(MAX_ATTEMPTS_LISTED).execute();
}

/** A page cursor: the last row's creation time (microseconds since the epoch, as PostgreSQL keeps it) and id. */
export const EXEC_CURSOR_RE = /^\d{1,20}_[0-9a-f-]{36}$/;
export const execCursor = (e: { created_at: Date; id: string; created_us?: string }) => `${e.created_us ?? String(e.created_at.getTime() * 1000)}_${e.id}`;

export async function listExecutions(services: Services, workspaceId: string, f: { namespace?: string; flowId?: string; state?: ExecutionState; limit: number; before?: string; after?: string; cursor?: string }) {
  let q = services.db.selectFrom('executions').selectAll()
    .select(sql<string>`(extract(epoch from created_at) * 1000000)::bigint::text`.as('created_us'))
    .where('workspace_id', '=', workspaceId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(f.limit);
  if (f.after) q = q.where('created_at', '>=', new Date(f.after));
  if (f.cursor) {
    const [us, id] = f.cursor.split('_');
    // Rows strictly after the cursor's in the order shown (created_at, then id, both descending).
    q = q.where(sql<boolean>`(created_at, id) < (TIMESTAMPTZ 'epoch' + ${us}::bigint * INTERVAL '1 microsecond', ${id}::uuid)`);
  }
  if (f.namespace) q = q.where('namespace', '=', f.namespace);
  if (f.flowId) q = q.where('flow_id', '=', f.flowId);
  if (f.state) q = q.where('state', '=', f.state);
  if (f.before) q = q.where('created_at', '<', new Date(f.before));
  return q.execute();
}

/** Executions created since `since`, counted by state per hour or day (the range is at most 92 days). */
export async function executionStats(db: Services['db'], workspaceId: string, since: Date, bucket: 'hour' | 'day', now: Date) {
  const from = new Date(Math.max(since.getTime(), now.getTime() - 92 * 86_400_000));
  const rows = await db.selectFrom('executions')
    .select([sql<Date>`date_trunc(${bucket}, created_at, 'UTC')`.as('at'), 'state', (eb) => eb.fn.countAll<string>().as('count')])
    .where('workspace_id', '=', workspaceId).where('created_at', '>=', from)
    .groupBy([sql`1`, 'state']).orderBy(sql`1`).limit(10_000).execute();
  return rows.map((r) => ({ at: new Date(r.at).toISOString(), state: r.state, count: Number(r.count) }));
}

/** Requests a kill: queued work is cancelled by the orchestrator, running task runs stop within kill_poll_ms. */
export async function requestKill(services: Services, workspaceId: string, id: string) {
  const res = await services.db.updateTable('executions')
    .set({
      kill_requested_at: services.clock.now(), state: sql<ExecutionState>`CASE WHEN state IN ('CREATED', 'RUNNING') THEN 'KILLING' ELSE state END`,
      // a step planned before the kill must not apply: it replans and cancels what has not started
      version: sql<string>`version + 1`,
    })
    .where('workspace_id', '=', workspaceId).where('id', '=', id)
    .returning(['state', 'ended_at']).executeTakeFirst();
  if (!res) throw notFound(`execution does not exist: ${id}`);
  if (res.ended_at) throw conflict(`execution ${id} already ended (${res.state})`);
  // The kill is recorded: running tasks see it at their next poll. The step that cancels queued
  // work is asked for within a bounded wait; when Redis cannot take it, the sweep asks again.
  const queued = services.workflowQueue.available() ? enqueueAdvance(services, id, 'kill') : Promise.reject(new Error('the job queue is not connected'));
  await within(queued, START_QUEUE_WAIT_MS, () => queueUnavailable('the kill step')).catch((err: Error) => {
    services.logging.module('svc::workflows').warn({ executionId: id, dependency: 'Redis', err: err.message }, 'kill recorded but its step not queued: the sweep queues it');
  });
  // running attempts here and on the other replicas stop at once (the poll stays the fallback)
  await services.invalidator.invalidate('kill', [id]);
  return res.state;
}
