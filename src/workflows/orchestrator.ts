// The orchestrator: walks an execution's task tree against its task runs and decides what happens
// next (create and queue leaf task runs, settle flowable tasks, end the execution).
//
// Each step is optimistic: it reads the execution and its task runs in one statement, plans in
// memory, and applies the plan (with the outcome of the task run that prompted it, when there is
// one) in one statement that first locks the execution row and checks its version. A concurrent
// step (a parallel branch ending at the same moment, a kill request) moves the version, and the
// loser reads again and replans; nothing is written twice and nothing is lost. Two round trips per
// step, one commit. Leaf jobs are queued after the commit; an enqueue lost to a crash is
// recovered by the sweep.
//
// Paths name a task's place: `0`, `0/1`, a foreach iteration `2[3]/0`, an if branch `1/then/0`.
import { randomUUID } from 'node:crypto';
import type { Services } from '../services.js';
import { queryPrepared, type Db } from '../db/index.js';
import type { ExecutionState, TaskRunState } from '../db/workflow-types.js';
import { FLOWABLE, INSTANT, type FlowDef, type TaskDef } from './flow.js';
import { render, truthy } from './template.js';
import { templateContext, templateFunctions, type ExecutionView, type RunView } from './context.js';
import { FlowDefinitions } from './flows.js';
import { storableText } from './storable.js';
import { sql } from 'kysely';
import { TtlCache } from '../util/ttl-cache.js';

type Status = 'done' | 'running' | 'failed' | 'killed';
const TERMINAL_RUN: TaskRunState[] = ['SUCCESS', 'FAILED', 'KILLED', 'SKIPPED'];

export interface Run extends RunView { id: string; parent_id: string | null; state: TaskRunState; error: string | null; attempt: number; ended_at: Date | null }

/** An execution and its task runs as one statement read them. */
export interface Snapshot {
  exec: ExecutionView & { state: ExecutionState; version: string; kill_requested_at: Date | null; ended_at: Date | null };
  runs: Run[];
}

/** A leaf task run to queue; `instant` says its type is in INSTANT (the worker then skips the claim). */
export interface LeafDispatch { taskRunId: string; executionId: string; attempt: number; instant?: boolean; delayMs?: number }

/**
 * The outcome of one task-run attempt, recorded by the step that follows it. `guard` is the lease
 * token of a claimed run, or, for an in-process run claimed and finished at once, the attempt
 * count it must still have (then the step claims it too).
 */
export interface Outcome {
  runId: string;
  guard: { lease: string } | { prevAttempt: number };
  /** the task run's state: RETRYING or terminal */
  state: TaskRunState;
  /** the attempt's own state (FAILED for a run that will retry) */
  attemptState: TaskRunState;
  attempt: number;
  outputs: Record<string, unknown>;
  error: string | null;
  startedAt: Date;
  endedAt: Date;
  worker: string;
  reason: string | null;
  log: { lines: number; bytes: number; withheld: number; rows: Array<{ at: Date; level: string; line: string }> };
}

/** Queues leaf task runs (through the WorkflowQueue port). */
export async function dispatchLeaves(services: Services, leaves: LeafDispatch[]): Promise<void> {
  if (leaves.length === 0) return;
  await services.workflowQueue.dispatch(leaves);
}

const READ = `
  SELECT e.id, e.workspace_id, e.namespace, e.flow_id, e.flow_revision, e.inputs, e.created_at, e.state, e.version,
    e.kill_requested_at, e.ended_at,
    (SELECT json_agg(r) FROM (SELECT id, parent_id, task_id, path, state, outputs, iteration, error, attempt, ended_at
       FROM task_runs WHERE execution_id = e.id) r) AS runs
  FROM executions e WHERE e.id = $1`;

/** Reads an execution and its task runs in one statement (one snapshot); undefined when it is gone. */
export async function readSnapshot(db: Db, executionId: string): Promise<Snapshot | undefined> {
  const [row] = await queryPrepared<Snapshot['exec'] & { runs: Array<Omit<Run, 'ended_at'> & { ended_at: string | null }> | null }>(db, 'svc_step_read', READ, [executionId]);
  if (!row) return undefined;
  const { runs, ...exec } = row;
  return { exec, runs: (runs ?? []).map((r) => ({ ...r, outputs: r.outputs ?? {}, ended_at: r.ended_at ? new Date(r.ended_at) : null })) };
}

/**
 * What a worker keeps between steps: parsed flow revisions, and the snapshot each of its own steps
 * left behind, so that the next step of the same execution (often the next task, on this worker)
 * starts from it instead of reading. A snapshot that went stale costs nothing but a retry: the
 * apply finds the version moved, and the step reads again.
 */
export interface StepContext { defs: FlowDefinitions; snapshots: TtlCache<string, Snapshot> }

const SNAPSHOT_RUNS_MAX = 200;

export function stepContext(db: Db): StepContext {
  return { defs: new FlowDefinitions(db), snapshots: new TtlCache(256, 60_000) };
}

/** The snapshot of an execution as created (version 0, no task runs), as JSON for a start job. */
export function createdSnapshot(e: Snapshot['exec']): Snapshot {
  const { id, workspace_id, namespace, flow_id, flow_revision, inputs, created_at, state, version, kill_requested_at, ended_at } = e;
  return { exec: { id, workspace_id, namespace, flow_id, flow_revision, inputs, created_at, state, version, kill_requested_at, ended_at }, runs: [] };
}

/** A snapshot that travelled as JSON (its dates as strings). */
export function revive(s: Snapshot): Snapshot {
  const date = (d: Date | string | null) => (d === null ? null : new Date(d));
  return { exec: { ...s.exec, created_at: date(s.exec.created_at)!, kill_requested_at: date(s.exec.kill_requested_at), ended_at: date(s.exec.ended_at) }, runs: s.runs };
}

/**
 * Re-evaluates an execution (start, kill, recovery), then queues what it decided. `first` is a
 * snapshot the job carried (a start job carries the execution as created); if it went stale, the
 * apply finds the version moved and the step reads.
 */
export async function advance(services: Services, ctx: StepContext, executionId: string, first?: Snapshot): Promise<{ ended: ExecutionState | null }> {
  const r = await step(services, ctx, executionId, undefined, first);
  return { ended: r.ended };
}

/**
 * One orchestration step, with the outcome of a task-run attempt when one prompted it. Returns
 * whether the outcome was recorded (false: the run was handed to someone else, or is gone) and the
 * final state when the execution ended. `first` is a snapshot the caller already read.
 */
export async function step(services: Services, ctx: StepContext, executionId: string, outcome?: Outcome, first?: Snapshot): Promise<{ recorded: boolean; ended: ExecutionState | null }> {
  let snap = first ?? ctx.snapshots.get(executionId);
  ctx.snapshots.delete(executionId);
  let fresh = false;
  for (let round = 1; ; round++) {
    if (!snap) { snap = await readSnapshot(services.db, executionId); fresh = true; }
    if (!snap) return { recorded: false, ended: null };
    const plan = await planStep(services, ctx.defs, snap, outcome);
    if (!outcome && isEmpty(plan)) {
      // "Nothing to do" is only true of a fresh read: a kept snapshot may predate a kill.
      if (fresh) return { recorded: false, ended: null };
      snap = undefined;
      continue;
    }
    let res: { locked: boolean; claimed: boolean };
    try {
      res = await applyStep(services.db, snap, plan, outcome);
    } catch (err) {
      // PostgreSQL refused what the step writes: retrying would refuse it again, and leaving the
      // job failed would leave the execution RUNNING. Fail it instead, with the reason.
      if (!refusedValue(err)) throw err;
      return failUnstorable(services, executionId, outcome, err as Error);
    }
    if (res.locked && (!outcome || res.claimed)) {
      if (!plan.ended && plan.runs.length <= SNAPSHOT_RUNS_MAX) {
        ctx.snapshots.set(executionId, { exec: { ...snap.exec, version: String(BigInt(snap.exec.version) + 1n), state: plan.exec.state ?? snap.exec.state }, runs: plan.runs });
      }
      await afterAdvance(services, executionId, plan.ended, plan.leaves);
      return { recorded: !!outcome, ended: plan.ended };
    }
    if (res.locked) return { recorded: false, ended: null };
    // The version moved under us: read again and replan. Every round some step wins, so this ends;
    // past a few rounds, spread the contenders out a little.
    snap = undefined;
    if (round > 5) await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, round * 2)));
  }
}

/** A data exception (class 22), an integrity violation (23) or a program limit (54): the value, not the moment. */
const refusedValue = (err: unknown) => /^(22|23|54)/.test(String((err as { code?: unknown }).code ?? ''));

/**
 * Ends an execution whose step PostgreSQL refused: the run of the outcome fails with the reason,
 * runs not started are killed, running ones are asked to stop (the kill request), and the
 * execution fails. Later outcomes of those runs are recorded as for any ended execution.
 */
async function failUnstorable(services: Services, executionId: string, outcome: Outcome | undefined, err: Error): Promise<{ recorded: boolean; ended: ExecutionState | null }> {
  const reason = `the step could not be stored: PostgreSQL refused it (${storableText(err.message).slice(0, 200)})`;
  services.logging.module('svc::workflows::orchestrator').error({ executionId, taskRunId: outcome?.runId, code: (err as { code?: string }).code, err: err.message }, 'step refused by PostgreSQL: failing the execution');
  const now = services.clock.now();
  const { rows } = await sql<{ id: string }>`
    WITH r AS (
      UPDATE task_runs SET state = CASE WHEN id = ${outcome?.runId ?? null}::uuid THEN 'FAILED' ELSE 'KILLED' END,
        error = CASE WHEN id = ${outcome?.runId ?? null}::uuid THEN ${reason} ELSE 'killed: the execution failed' END,
        attempt = CASE WHEN id = ${outcome?.runId ?? null}::uuid THEN ${outcome?.attempt ?? 0}::int ELSE attempt END,
        ended_at = ${now}::timestamptz, lease_token = NULL, lease_until = NULL
      WHERE execution_id = ${executionId} AND ended_at IS NULL
        AND (id = ${outcome?.runId ?? null}::uuid OR lease_token IS NULL)
      RETURNING id)
    UPDATE executions SET state = 'FAILED', ended_at = ${now}::timestamptz, error = ${reason}, version = version + 1,
      kill_requested_at = COALESCE(kill_requested_at, ${now}::timestamptz)
    WHERE id = ${executionId} AND ended_at IS NULL RETURNING id`.execute(services.db);
  if (rows.length === 0) return { recorded: false, ended: null };
  await afterAdvance(services, executionId, 'FAILED', []);
  return { recorded: !!outcome, ended: 'FAILED' };
}

/** After the commit: queue the new leaf task runs and announce an ended execution. */
async function afterAdvance(services: Services, executionId: string, ended: ExecutionState | null, leaves: LeafDispatch[]): Promise<void> {
  await dispatchLeaves(services, leaves);
  if (ended) {
    services.metrics.executionsEnded.inc({ state: ended });
    // Flow triggers of other flows react to this end (the trigger worker is idempotent per end).
    await services.workflowQueue.ended(executionId);
  }
}

/** What a step writes: new task runs, changed task runs, the execution's new fields, jobs to queue. */
interface Plan {
  /** every task run as it will be once the plan is applied */
  runs: Run[];
  inserts: Run[];
  /** task runs that existed before the step and changed in it */
  changed: Set<Run>;
  exec: { state?: ExecutionState; started_at?: Date; ended_at?: Date; outputs?: Record<string, unknown>; error?: string | null };
  leaves: LeafDispatch[];
  ended: ExecutionState | null;
  now: Date;
}

const isEmpty = (p: Plan) => p.inserts.length === 0 && p.changed.size === 0 && Object.keys(p.exec).length === 0;

/** Plans a step in memory: the walk over the task tree, with the outcome applied to its run. */
async function planStep(services: Services, defs: FlowDefinitions, snap: Snapshot, outcome?: Outcome): Promise<Plan> {
  const now = services.clock.now();
  const byPath = new Map<string, Run>(snap.runs.map((r) => [r.path, r.id === outcome?.runId ? {
    ...r, state: outcome.state, outputs: outcome.outputs, error: outcome.error, attempt: outcome.attempt, ended_at: outcome.state === 'RETRYING' ? null : outcome.endedAt,
  } : { ...r }]));
  const plan: Plan = { runs: [], inserts: [], changed: new Set(), exec: {}, leaves: [], ended: null, now };
  const { exec } = snap;
  // A run that will retry changes nothing else; an ended execution only records late outcomes.
  if (exec.ended_at || outcome?.state === 'RETRYING') { plan.runs = [...byPath.values()]; return plan; }
  const def = await defs.get({ workspaceId: exec.workspace_id, namespace: exec.namespace, flowId: exec.flow_id }, exec.flow_revision);
  const w = new Walk(services, def, exec, byPath, plan, exec.kill_requested_at !== null, now);
  if (exec.state === 'CREATED') Object.assign(plan.exec, { state: 'RUNNING', started_at: now });
  const status = await w.list(def.tasks, '', null, 'sequential', 1, undefined);
  if (status !== 'running') {
    const state: ExecutionState = status === 'done' ? 'SUCCESS' : status === 'failed' ? 'FAILED' : 'KILLED';
    const outputs: Record<string, unknown> = {};
    for (const r of byPath.values()) {
      const t = w.taskAt(r.path);
      if (t?.type === 'output' && r.state === 'SUCCESS' && !r.path.includes('[')) outputs[r.task_id] = r.outputs;
    }
    const failed = [...byPath.values()].find((r) => r.state === 'FAILED' && !FLOWABLE.has(w.taskAt(r.path)?.type ?? ''));
    Object.assign(plan.exec, {
      state, ended_at: now, outputs,
      error: state === 'FAILED' ? (failed ? `task ${failed.task_id} failed: ${failed.error ?? 'failed'}` : 'failed') : null,
    });
    plan.ended = state;
  }
  plan.runs = [...byPath.values()];
  return plan;
}

/**
 * Applies a plan in one statement of fixed text (prepared once per connection). `lk` locks the
 * execution if its version is still the one the plan was made from (a lock that waited re-checks
 * the version on the row it got); `tr` locks the task run of the outcome, if there is one, while
 * its guard holds: its lease token ($4) or, for an instant run, its open state and attempt count
 * ($5). Every write runs only when both did. The execution is always locked first, so steps never
 * deadlock with each other.
 *   $1 execution  $2 version  $3 outcome's run  $6 outcome  $7 its last log lines
 *   $8 execution fields  $9 new task runs  $10 changed task runs
 */
const APPLY = `
  WITH lk AS MATERIALIZED (SELECT id FROM executions WHERE id = $1 AND version = $2::bigint FOR UPDATE),
  tr AS MATERIALIZED (
    SELECT id FROM task_runs WHERE id = $3::uuid AND EXISTS (SELECT 1 FROM lk)
      AND CASE WHEN $4::text IS NOT NULL THEN lease_token = $4::text
               ELSE ended_at IS NULL AND state IN ('QUEUED', 'RETRYING') AND attempt = $5::int END
    FOR UPDATE),
  go AS MATERIALIZED (SELECT 1 FROM lk WHERE $3::uuid IS NULL OR EXISTS (SELECT 1 FROM tr)),
  o AS MATERIALIZED (SELECT * FROM jsonb_to_record($6::jsonb) AS o(state text, attempt_state text, outputs jsonb, error text, attempt int,
    started_at timestamptz, ended_at timestamptz, run_ended_at timestamptz, worker text, reason text, log_lines int, log_bytes bigint, withheld int)),
  oc AS (UPDATE task_runs t SET state = o.state, outputs = o.outputs, error = o.error, attempt = o.attempt,
      started_at = COALESCE(t.started_at, o.started_at), ended_at = o.run_ended_at, lease_token = NULL, lease_until = NULL
    FROM tr, o WHERE t.id = tr.id RETURNING t.id),
  att AS (INSERT INTO task_run_attempts (task_run_id, attempt, state, worker, reason, started_at, ended_at, log_lines, log_bytes, withheld)
    SELECT oc.id, o.attempt, o.attempt_state, o.worker, o.reason, o.started_at, o.ended_at, o.log_lines, o.log_bytes, o.withheld FROM oc, o
    ON CONFLICT (task_run_id, attempt) DO NOTHING),
  lg AS (INSERT INTO task_logs (execution_id, task_run_id, attempt, at, level, line)
    SELECT $1, oc.id, o.attempt, l.at, l.level, l.line FROM oc, o, jsonb_to_recordset($7::jsonb) AS l(at timestamptz, level text, line text)),
  ex AS (UPDATE executions e SET version = e.version + 1, state = COALESCE(p.state, e.state), started_at = COALESCE(e.started_at, p.started_at),
      ended_at = COALESCE(p.ended_at, e.ended_at), outputs = COALESCE(p.outputs, e.outputs), error = CASE WHEN p.ended_at IS NULL THEN e.error ELSE p.error END
    FROM go, jsonb_to_record($8::jsonb) AS p(state text, started_at timestamptz, ended_at timestamptz, outputs jsonb, error text) WHERE e.id = $1),
  ins AS (INSERT INTO task_runs (id, execution_id, parent_id, task_id, path, state, iteration, outputs, error, created_at, started_at, dispatched_at, ended_at)
    SELECT n.id, $1, n.parent_id, n.task_id, n.path, n.state, n.iteration, COALESCE(n.outputs, '{}'::jsonb), n.error, n.created_at, n.started_at, n.dispatched_at, n.ended_at
    FROM go, jsonb_to_recordset($9::jsonb) AS n(id uuid, parent_id uuid, task_id text, path text, state text, iteration jsonb, outputs jsonb, error text,
      created_at timestamptz, started_at timestamptz, dispatched_at timestamptz, ended_at timestamptz)),
  upd AS (UPDATE task_runs t SET state = u.state, outputs = COALESCE(u.outputs, '{}'::jsonb), error = u.error, ended_at = u.ended_at,
      lease_token = CASE WHEN u.ended_at IS NULL THEN t.lease_token END, lease_until = CASE WHEN u.ended_at IS NULL THEN t.lease_until END
    FROM go, jsonb_to_recordset($10::jsonb) AS u(id uuid, state text, outputs jsonb, error text, ended_at timestamptz) WHERE t.id = u.id)
  SELECT EXISTS (SELECT 1 FROM lk) AS locked, EXISTS (SELECT 1 FROM go) AS claimed`;

async function applyStep(db: Db, snap: Snapshot, plan: Plan, outcome?: Outcome): Promise<{ locked: boolean; claimed: boolean }> {
  const now = plan.now;
  const o = outcome && {
    state: outcome.state, attempt_state: outcome.attemptState, outputs: outcome.outputs, error: outcome.error, attempt: outcome.attempt,
    started_at: outcome.startedAt, ended_at: outcome.endedAt, run_ended_at: outcome.state === 'RETRYING' ? null : outcome.endedAt,
    worker: outcome.worker, reason: outcome.reason, log_lines: outcome.log.lines, log_bytes: outcome.log.bytes, withheld: outcome.log.withheld,
  };
  const inserts = plan.inserts.map((r) => ({
    id: r.id, parent_id: r.parent_id, task_id: r.task_id, path: r.path, state: r.state, iteration: r.iteration, outputs: r.outputs, error: r.error,
    // new runs are queued leaves or flowable tasks, which start at once
    created_at: now, started_at: r.state === 'QUEUED' ? null : now, dispatched_at: r.state === 'QUEUED' ? now : null, ended_at: r.ended_at,
  }));
  const changed = [...plan.changed].filter((r) => r.id !== outcome?.runId)
    .map((r) => ({ id: r.id, state: r.state, outputs: r.outputs, error: r.error, ended_at: r.ended_at }));
  const [res] = await queryPrepared<{ locked: boolean; claimed: boolean }>(db, 'svc_step_apply', APPLY, [
    snap.exec.id, snap.exec.version, outcome?.runId ?? null,
    outcome && 'lease' in outcome.guard ? outcome.guard.lease : null, outcome && 'prevAttempt' in outcome.guard ? outcome.guard.prevAttempt : null,
    JSON.stringify(o ?? {}), JSON.stringify(outcome?.log.rows ?? []), JSON.stringify(plan.exec), JSON.stringify(inserts), JSON.stringify(changed),
  ]);
  return res;
}

class Walk {
  private readonly byTaskPath = new Map<string, TaskDef>();

  private readonly created = new Set<Run>();

  constructor(
    private readonly services: Services, private readonly def: FlowDef, private readonly exec: ExecutionView,
    private readonly byPath: Map<string, Run>, private readonly plan: Plan,
    private readonly killing: boolean, private readonly now: Date,
  ) {}

  taskAt(path: string): TaskDef | undefined { return this.byTaskPath.get(path); }

  async list(tasks: TaskDef[], base: string, parentId: string | null, mode: 'sequential' | 'parallel', concurrency: number, iteration: { value: unknown; index: number } | undefined): Promise<Status> {
    const join = (i: number) => (base === '' ? String(i) : `${base}/${i}`);
    if (mode === 'sequential') {
      for (let i = 0; i < tasks.length; i++) {
        const s = await this.task(tasks[i], join(i), parentId, iteration);
        if (s !== 'done') return s;
      }
      return 'done';
    }
    let running = 0; let failed = false; let killed = false; let pending = 0;
    for (let i = 0; i < tasks.length; i++) {
      const path = join(i);
      if (!this.byPath.has(path) && (running >= concurrency || failed || killed || this.killing)) { pending++; this.byTaskPath.set(path, tasks[i]); continue; }
      const s = await this.task(tasks[i], path, parentId, iteration);
      if (s === 'running') running++;
      else if (s === 'failed') failed = true;
      else if (s === 'killed') killed = true;
    }
    if (running > 0) return 'running';
    if (killed || this.killing) return pending > 0 || killed ? 'killed' : failed ? 'failed' : 'done';
    if (failed) return 'failed';
    return pending > 0 ? 'running' : 'done';
  }

  private async task(task: TaskDef, path: string, parentId: string | null, iteration: { value: unknown; index: number } | undefined): Promise<Status> {
    this.byTaskPath.set(path, task);
    if (task.disabled) return 'done';
    let run = this.byPath.get(path);
    const flowable = FLOWABLE.has(task.type);
    if (!run) {
      if (this.killing) return 'killed';
      run = {
        id: randomUUID(), parent_id: parentId, task_id: task.id, path, state: flowable ? 'RUNNING' : 'QUEUED',
        outputs: {}, iteration: iteration ?? null, error: null, attempt: 0, ended_at: null,
      };
      this.plan.inserts.push(run);
      this.created.add(run);
      this.byPath.set(path, run);
      if (!flowable) { this.plan.leaves.push({ taskRunId: run.id, executionId: this.exec.id, attempt: 0, instant: INSTANT.has(task.type) }); return 'running'; }
    }
    if (!flowable) return this.leafStatus(run);
    if (TERMINAL_RUN.includes(run.state)) return mapState(run.state);

    let status: Status;
    try {
      status = await this.flowable(task, run, path, iteration);
    } catch (err) {
      await this.settle(run, 'FAILED', { error: (err as Error).message });
      return 'failed';
    }
    if (status !== 'running') await this.settle(run, status === 'done' ? 'SUCCESS' : status === 'failed' ? 'FAILED' : 'KILLED', {});
    return status;
  }

  private async leafStatus(run: Run): Promise<Status> {
    if (TERMINAL_RUN.includes(run.state)) return mapState(run.state);
    // Work not yet started is cancelled here; running work stops itself within kill_poll_ms.
    if (this.killing && (run.state === 'QUEUED' || run.state === 'RETRYING' || run.state === 'CREATED')) {
      await this.settle(run, 'KILLED', { error: 'killed before it started' });
      return 'killed';
    }
    return 'running';
  }

  private async flowable(task: TaskDef, run: Run, path: string, iteration: { value: unknown; index: number } | undefined): Promise<Status> {
    const t = task as TaskDef & Record<string, unknown>;
    switch (task.type) {
      case 'sequential': return this.list(t.tasks as TaskDef[], path, run.id, 'sequential', 1, iteration);
      case 'parallel': return this.list(t.tasks as TaskDef[], path, run.id, 'parallel', (t.concurrency as number | undefined) ?? Number.MAX_SAFE_INTEGER, iteration);
      case 'if': {
        let branch = run.outputs.branch as 'then' | 'else' | undefined;
        if (!branch) {
          const value = await this.render(t.condition, run, path, iteration);
          branch = truthy(value) ? 'then' : 'else';
          run.outputs = { branch, condition: truthy(value) };
          this.changed(run);
        }
        const list = (branch === 'then' ? t.then : t.else) as TaskDef[] | undefined;
        if (!list) return 'done';
        return this.list(list, `${path}/${branch}`, run.id, 'sequential', 1, iteration);
      }
      case 'foreach': {
        let values = run.outputs.values as unknown[] | undefined;
        if (!values) {
          let v = await this.render(t.values, run, path, iteration);
          if (typeof v === 'string') { try { v = JSON.parse(v); } catch { /* reported below */ } }
          if (!Array.isArray(v)) throw new Error(`foreach values must be a list, got ${JSON.stringify(v)?.slice(0, 100)}`);
          values = v;
          run.outputs = { values };
          this.changed(run);
        }
        const concurrency = (t.concurrency as number | undefined) ?? 1;
        let running = 0; let failed = false; let killed = false; let pending = 0;
        for (let k = 0; k < values.length; k++) {
          const base = `${path}[${k}]`;
          const started = this.byPath.has(`${base}/0`);
          if (!started && (running >= concurrency || failed || killed || this.killing)) { pending++; continue; }
          const s = await this.list(t.tasks as TaskDef[], base, run.id, 'sequential', 1, { value: values[k], index: k });
          if (s === 'running') running++;
          else if (s === 'failed') failed = true;
          else if (s === 'killed') killed = true;
        }
        if (running > 0) return 'running';
        if (killed || (this.killing && pending > 0)) return 'killed';
        if (failed) return 'failed';
        return pending > 0 ? 'running' : 'done';
      }
      default: throw new Error(`not a flowable task: ${task.type}`);
    }
  }

  private async render(value: unknown, run: Run, path: string, iteration: { value: unknown; index: number } | undefined): Promise<unknown> {
    const ctx = templateContext(this.exec, this.def, [...this.byPath.values()], { id: run.id, path, iteration: iteration ?? null });
    return render(value, ctx, templateFunctions(this.services, this.exec));
  }

  private async settle(run: Run, state: TaskRunState, extra: { error?: string }): Promise<void> {
    run.state = state;
    run.ended_at = this.now;
    if (extra.error) run.error = extra.error;
    this.changed(run);
  }

  /** A run created in this step is inserted with its final fields; an older one is updated. */
  private changed(run: Run): void {
    if (!this.created.has(run)) this.plan.changed.add(run);
  }
}

function mapState(s: TaskRunState): Status {
  return s === 'SUCCESS' || s === 'SKIPPED' ? 'done' : s === 'FAILED' ? 'failed' : s === 'KILLED' ? 'killed' : 'running';
}

