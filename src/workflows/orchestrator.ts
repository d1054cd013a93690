// The orchestrator: walks an execution's task tree against its task runs and decides what happens
// next (create and queue leaf task runs, settle flowable tasks, end the execution). It runs under
// a row lock on the execution, so concurrent completions of parallel branches are serialised;
// leaf jobs are queued after the commit (an enqueue lost to a crash is recovered by the reaper).
//
// Paths name a task's place: `0`, `0/1`, a foreach iteration `2[3]/0`, an if branch `1/then/0`.
import { randomUUID } from 'node:crypto';
import type { Services } from '../services.js';
import type { Db } from '../db/index.js';
import type { ExecutionState, TaskRunState } from '../db/workflow-types.js';
import { FLOWABLE, type FlowDef, type TaskDef } from './flow.js';
import { render, truthy } from './template.js';
import { templateContext, templateFunctions, type RunView } from './context.js';
import type { FlowDefinitions } from './flows.js';
import { QUEUE } from '../jobs/queues.js';

type Status = 'done' | 'running' | 'failed' | 'killed';
const TERMINAL_RUN: TaskRunState[] = ['SUCCESS', 'FAILED', 'KILLED', 'SKIPPED'];

interface Run extends RunView { id: string; parent_id: string | null; state: TaskRunState; error: string | null; attempt: number }

export interface LeafDispatch { taskRunId: string; executionId: string; attempt: number; delayMs?: number }

export async function dispatchLeaves(services: Services, leaves: LeafDispatch[]): Promise<void> {
  if (leaves.length === 0) return;
  const jobs = leaves.map((l) => ({
    name: 'run',
    data: { taskRunId: l.taskRunId, executionId: l.executionId },
    opts: { jobId: `${l.taskRunId}-${l.attempt + 1}`, delay: l.delayMs, removeOnComplete: { count: 1000 }, removeOnFail: { count: 5000 } },
  }));
  const q = services.queues.get(QUEUE.taskRuns);
  if (jobs.length === 1) await q.add(jobs[0].name, jobs[0].data, jobs[0].opts);
  else await q.addBulk(jobs);
}

/** Advances an execution in its own transaction, then queues what it decided. */
export async function advance(services: Services, defs: FlowDefinitions, executionId: string): Promise<{ ended: ExecutionState | null }> {
  const leaves: LeafDispatch[] = [];
  const ended = await services.db.transaction().execute((tx) => advanceWithin(services, defs, tx, executionId, leaves));
  await afterAdvance(services, executionId, ended, leaves);
  return { ended };
}

/** After the commit: queue the new leaf task runs and announce an ended execution. */
export async function afterAdvance(services: Services, executionId: string, ended: ExecutionState | null, leaves: LeafDispatch[]): Promise<void> {
  await dispatchLeaves(services, leaves);
  if (ended) {
    services.metrics.executionsEnded.inc({ state: ended });
    // Flow triggers of other flows react to this end (the trigger worker is idempotent per end).
    await services.queues.get(QUEUE.triggers).add('execution-ended', { executionId }, {
      jobId: `${executionId}-ended`, attempts: 5, backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { count: 1000 }, removeOnFail: { count: 1000 },
    });
  }
}

/**
 * The orchestration step inside a caller's transaction (a task run's completion commits its
 * outcome and the next step together). Pushes leaves to queue after the commit; returns the
 * final state when the execution ended.
 */
export async function advanceWithin(services: Services, defs: FlowDefinitions, tx: Db, executionId: string, leaves: LeafDispatch[]): Promise<ExecutionState | null> {
  // Lock first, then read the task runs in a second statement: under READ COMMITTED a statement
  // that waited for the lock still sees its own older snapshot, and would miss the outcome the
  // lock holder just committed (two parallel completions would each think the other still runs).
  const exec = await tx.selectFrom('executions').selectAll().where('id', '=', executionId).forUpdate().executeTakeFirst();
  if (!exec || exec.ended_at) return null;
  const def = await defs.get({ workspaceId: exec.workspace_id, namespace: exec.namespace, flowId: exec.flow_id }, exec.flow_revision);
  const rows = await tx.selectFrom('task_runs').select(['id', 'parent_id', 'task_id', 'path', 'state', 'outputs', 'iteration', 'error', 'attempt'])
    .where('execution_id', '=', executionId).execute();
  const byPath = new Map<string, Run>(rows.map((r) => [r.path, { ...r, outputs: r.outputs ?? {} } as Run]));
  const now = services.clock.now();
  const killing = exec.kill_requested_at !== null;
  const w = new Walk(services, tx, def, exec, byPath, leaves, killing, now);
  if (exec.state === 'CREATED') {
    await tx.updateTable('executions').set({ state: 'RUNNING', started_at: now }).where('id', '=', exec.id).execute();
  }
  const status = await w.list(def.tasks, '', null, 'sequential', 1, undefined);
  if (status === 'running') return null;
  const state: ExecutionState = status === 'done' ? 'SUCCESS' : status === 'failed' ? 'FAILED' : 'KILLED';
  const outputs: Record<string, unknown> = {};
  for (const r of byPath.values()) {
    const t = w.taskAt(r.path);
    if (t?.type === 'output' && r.state === 'SUCCESS' && !r.path.includes('[')) outputs[r.task_id] = r.outputs;
  }
  const failed = [...byPath.values()].find((r) => r.state === 'FAILED' && !FLOWABLE.has(w.taskAt(r.path)?.type ?? ''));
  await tx.updateTable('executions').set({
    state, ended_at: now, outputs: JSON.stringify(outputs),
    error: state === 'FAILED' ? (failed ? `task ${failed.task_id} failed: ${failed.error ?? 'failed'}` : 'failed') : null,
  }).where('id', '=', exec.id).execute();
  return state;
}

class Walk {
  private readonly byTaskPath = new Map<string, TaskDef>();

  constructor(
    private readonly services: Services, private readonly tx: Db, private readonly def: FlowDef,
    private readonly exec: { id: string; workspace_id: string; namespace: string; flow_id: string; flow_revision: number; inputs: Record<string, unknown>; created_at: Date },
    private readonly byPath: Map<string, Run>, private readonly leaves: LeafDispatch[],
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
        outputs: {}, iteration: iteration ?? null, error: null, attempt: 0,
      };
      await this.tx.insertInto('task_runs').values({
        id: run.id, execution_id: this.exec.id, parent_id: parentId, task_id: task.id, path, state: run.state,
        iteration: iteration ? JSON.stringify(iteration) : null, outputs: '{}', created_at: this.now,
        started_at: flowable ? this.now : null, dispatched_at: flowable ? null : this.now,
      }).execute();
      this.byPath.set(path, run);
      if (!flowable) { this.leaves.push({ taskRunId: run.id, executionId: this.exec.id, attempt: 0 }); return 'running'; }
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
          await this.tx.updateTable('task_runs').set({ outputs: JSON.stringify(run.outputs) }).where('id', '=', run.id).execute();
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
          await this.tx.updateTable('task_runs').set({ outputs: JSON.stringify(run.outputs) }).where('id', '=', run.id).execute();
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
    if (extra.error) run.error = extra.error;
    await this.tx.updateTable('task_runs').set({ state, ended_at: this.now, error: extra.error ?? run.error, lease_token: null, lease_until: null })
      .where('id', '=', run.id).execute();
  }
}

function mapState(s: TaskRunState): Status {
  return s === 'SUCCESS' || s === 'SKIPPED' ? 'done' : s === 'FAILED' ? 'failed' : s === 'KILLED' ? 'killed' : 'running';
}

