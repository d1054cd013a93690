// Executions: created by the API, a trigger or a webhook (validated, recorded, enqueued); advanced
// only by workers. With workflow.worker_enabled false an execution is created and nothing moves it.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { ExecutionState, ExecutionsTable } from '../db/workflow-types.js';
import type { Selectable } from 'kysely';
import { createdSnapshot, startCreated } from './orchestrator.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { FlowValidationError, resolveInputs } from './flow.js';

export const TERMINAL_EXECUTION: ExecutionState[] = ['SUCCESS', 'FAILED', 'KILLED'];

export interface CreateExecution {
  workspaceId: string;
  namespace: string;
  flowId: string;
  inputs: Record<string, unknown>;
  /** how it started: {type: 'api', user} | {type: 'schedule', id, date} | {type: 'flow', ...} | {type: 'webhook', id} */
  trigger: Record<string, unknown>;
}

export async function createExecution(services: Services, req: CreateExecution) {
  const flow = await services.flows.get({ workspaceId: req.workspaceId, namespace: req.namespace, flowId: req.flowId });
  let inputs: Record<string, unknown>;
  try {
    inputs = resolveInputs(flow.inputs, req.inputs);
  } catch (err) {
    if (err instanceof FlowValidationError) throw badRequest(`invalid inputs: ${err.message}`);
    throw err;
  }
  const id = randomUUID();
  const created_at = services.clock.now();
  const e = { id, workspace_id: req.workspaceId, namespace: req.namespace, flow_id: req.flowId, flow_revision: flow.revision, inputs, trigger: req.trigger, created_at };
  // With a workflow worker in this process the first step is taken here; the answer is the
  // execution as created all the same (the state a start job's caller saw).
  if (await startCreated(services, e)) {
    return { ...e, state: 'CREATED', outputs: {}, error: null, kill_requested_at: null, files_pruned_at: null, version: '0', started_at: null, ended_at: null } as Selectable<ExecutionsTable>;
  }
  const row = await services.db.insertInto('executions').values({
    ...e, state: 'CREATED', inputs: JSON.stringify(inputs), trigger: JSON.stringify(req.trigger),
  }).returningAll().executeTakeFirstOrThrow();
  await enqueueAdvance(services, id, 'start', row);
  return row;
}

/** A start job carries the execution as created when it is small, so the first step need not read it. */
const CARRY_MAX_BYTES = 16_384;

/** Asks a worker to (re)evaluate an execution. Jobs of one execution are deduplicated while waiting. */
export async function enqueueAdvance(services: Services, executionId: string, reason: 'start' | 'advance' | 'kill', created?: Selectable<ExecutionsTable>): Promise<void> {
  const carried = created && JSON.stringify(created.inputs).length <= CARRY_MAX_BYTES ? createdSnapshot(created) : undefined;
  await services.workflowQueue.advance(executionId, reason, carried);
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
  await enqueueAdvance(services, id, 'kill');
  return res.state;
}
