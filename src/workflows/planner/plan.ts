// The planner: given a flow definition, an execution's snapshot and the outcome of the task-run
// attempt that prompted the step (if any), decides what the step changes: task runs to create
// and queue, runs to settle, the execution's new state. Pure apart from `render` (templates of
// if conditions and foreach values), which the caller binds; no database, no queue, no clock.
//
// Paths name a task's place: `0`, `0/1`, a foreach iteration `2[3]/0`, an if branch `1/then/0`.
import { randomUUID } from 'node:crypto';
import type { ExecutionState } from '../../db/workflow-types.js';
import { FLOWABLE, INSTANT, type FlowDef, type TaskDef } from '../flow.js';
import { inOrder } from './children.js';
import { settledUnder } from '../context.js';
import { FLOWABLE_TASKS, type Walker } from './tasks/index.js';
import { DEFAULT_PLAN_LIMITS, TERMINAL_RUN, mapState, type PlanLimits, type Iteration, type Outcome, type Plan, type Render, type Run, type Snapshot, type Status } from './types.js';

/** Whether planning needs the flow definition: not for an ended execution, nor for a run that will retry. */
export function needsDefinition(snap: Snapshot, outcome: Outcome | undefined): boolean {
  return !snap.exec.ended_at && outcome?.state !== 'RETRYING';
}

/**
 * The changes of one step. `def` is the flow revision of the execution (undefined only when
 * needsDefinition() says so); `now` stamps what starts or ends in the step.
 */
export async function plan(def: FlowDef | undefined, snap: Snapshot, outcome: Outcome | undefined, render: Render, now: Date, limits: PlanLimits = DEFAULT_PLAN_LIMITS): Promise<Plan> {
  const byPath = new Map<string, Run>(snap.runs.map((r) => [r.path, r.id === outcome?.runId ? {
    ...r, state: outcome.state, outputs: outcome.outputs, error: outcome.error, attempt: outcome.attempt, ended_at: outcome.state === 'RETRYING' ? null : outcome.endedAt,
  } : { ...r }]));
  const p: Plan = { runs: [], inserts: [], changed: new Set(), exec: {}, leaves: [], settled: [], ended: null, now };
  const { exec } = snap;
  // A run that will retry changes nothing else; an ended execution only records late outcomes.
  if (!needsDefinition(snap, outcome)) { p.runs = [...byPath.values()]; return p; }
  if (!def) throw new Error(`planning execution ${exec.id} needs its flow definition`);
  const w = new Walk(exec.id, byPath, p, exec.kill_requested_at !== null, now, render, limits);
  if (exec.state === 'CREATED') Object.assign(p.exec, { state: 'RUNNING', started_at: now });
  const status = await w.sequence(def.tasks, '', null, undefined);
  if (status !== 'running') {
    const state: ExecutionState = status === 'done' ? 'SUCCESS' : status === 'failed' ? 'FAILED' : 'KILLED';
    const outputs: Record<string, unknown> = {};
    for (const r of byPath.values()) {
      const t = w.taskAt(r.path);
      if (t?.type === 'output' && r.state === 'SUCCESS' && !r.path.includes('[')) outputs[r.task_id] = r.outputs;
    }
    const failed = [...byPath.values()].find((r) => r.state === 'FAILED' && !FLOWABLE.has(w.taskAt(r.path)?.type ?? ''));
    Object.assign(p.exec, {
      state, ended_at: now, outputs,
      error: state === 'FAILED' ? (failed ? `task ${failed.task_id} failed: ${failed.error ?? 'failed'}` : 'failed') : null,
    });
    p.ended = state;
  }
  p.runs = [...byPath.values()];
  // Runs of iterations settled in this step leave the snapshot as they leave the next read.
  if (p.settled.length > 0) p.runs = p.runs.filter((r) => !p.settled.some((s) => r.path.startsWith(s)));
  return p;
}

/** One walk over the task tree against the runs, recording into the plan. */
class Walk implements Walker {
  private readonly byTaskPath = new Map<string, TaskDef>();
  private readonly created = new Set<Run>();

  constructor(
    private readonly executionId: string, private readonly byPath: Map<string, Run>, private readonly plan: Plan,
    readonly killing: boolean, private readonly now: Date, private readonly renderer: Render, readonly limits: PlanLimits,
  ) {
    this.snapshotPaths = [...byPath.keys()];
    this.settledBefore = [...byPath.values()].filter((r) => (r.settled_iterations ?? 0) > 0).map((r) => ({ path: r.path, settled_iterations: r.settled_iterations }));
  }

  private readonly snapshotPaths: string[];

  /** foreach path -> indexes of its iterations with runs in the snapshot (built on first use) */
  private present?: Map<string, number[]>;
  /** foreach runs that had settled iterations before this step: those runs are not in the snapshot */
  private readonly settledBefore: Array<Pick<Run, 'path' | 'settled_iterations'>>;

  taskAt(path: string): TaskDef | undefined { return this.byTaskPath.get(path); }
  has(path: string): boolean { return this.byPath.has(path); }
  note(path: string, task: TaskDef): void { this.byTaskPath.set(path, task); }
  settled(iteration: string): void { this.plan.settled.push(`${iteration}/`); }

  iterations(path: string): number[] {
    if (!this.present) {
      // Every `[k]` in a run's path names iteration k of the foreach at the path before it.
      const m = new Map<string, Set<number>>();
      for (const p of this.snapshotPaths) {
        for (let i = p.indexOf('['); i >= 0; i = p.indexOf('[', i + 1)) {
          const f = p.slice(0, i);
          let set = m.get(f);
          if (!set) m.set(f, set = new Set());
          set.add(Number(p.slice(i + 1, p.indexOf(']', i))));
        }
      }
      this.present = new Map([...m].map(([f, set]) => [f, [...set].sort((a, b) => a - b)]));
    }
    return this.present.get(path) ?? [];
  }

  sequence(tasks: TaskDef[], base: string, parentId: string | null, iteration: Iteration | undefined): Promise<Status> {
    return inOrder(tasks.length, (i) => this.task(tasks[i], base === '' ? String(i) : `${base}/${i}`, parentId, iteration));
  }

  async task(task: TaskDef, path: string, parentId: string | null, iteration: Iteration | undefined): Promise<Status> {
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
      if (!flowable) { this.plan.leaves.push({ taskRunId: run.id, executionId: this.executionId, attempt: 0, instant: INSTANT.has(task.type) }); return 'running'; }
    }
    if (!flowable) return this.leafStatus(run);
    if (TERMINAL_RUN.includes(run.state)) return mapState(run.state);

    let status: Status;
    try {
      const type = FLOWABLE_TASKS[task.type];
      if (!type) throw new Error(`not a flowable task: ${task.type}`);
      status = await type(this, task as TaskDef & Record<string, unknown>, run, path, iteration);
    } catch (err) {
      this.settle(run, 'FAILED', (err as Error).message);
      return 'failed';
    }
    if (status !== 'running') this.settle(run, status === 'done' ? 'SUCCESS' : status === 'failed' ? 'FAILED' : 'KILLED');
    return status;
  }

  private leafStatus(run: Run): Status {
    if (TERMINAL_RUN.includes(run.state)) return mapState(run.state);
    // Work not yet started is cancelled here; running work stops itself within kill_poll_ms.
    if (this.killing && (run.state === 'QUEUED' || run.state === 'RETRYING' || run.state === 'CREATED')) {
      this.settle(run, 'KILLED', 'killed before it started');
      return 'killed';
    }
    return 'running';
  }

  /** Runs settled in this step are still in byPath; those settled before are read back by the caller (settledUnder). */
  render = (value: unknown, run: Run, path: string, iteration: Iteration | undefined): Promise<unknown> =>
    this.renderer(value, { runId: run.id, path, iteration: iteration ?? null, runs: [...this.byPath.values()], settledUnder: settledUnder(path, this.settledBefore) });

  private settle(run: Run, state: Run['state'], error?: string): void {
    run.state = state;
    run.ended_at = this.now;
    if (error) run.error = error;
    this.changed(run);
  }

  /** A run created in this step is inserted with its final fields; an older one is updated. */
  changed(run: Run): void {
    if (!this.created.has(run)) this.plan.changed.add(run);
  }
}
