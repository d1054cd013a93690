// The planner's vocabulary: an execution and its task runs as one read saw them (Snapshot), the
// outcome of a task-run attempt, and what a step changes (Changes). No I/O here or in the
// planner: the step loop (../orchestrator.ts) reads, plans, and applies through the store
// (../execution-store.ts).
import type { ExecutionState, TaskRunState } from '../../db/workflow-types.js';
import type { ExecutionView, RunView } from '../context.js';

export type Status = 'done' | 'running' | 'failed' | 'killed';
export const TERMINAL_RUN: TaskRunState[] = ['SUCCESS', 'FAILED', 'KILLED', 'SKIPPED'];

export interface Run extends RunView {
  id: string; parent_id: string | null; state: TaskRunState; error: string | null; attempt: number; ended_at: Date | null;
  /**
   * of a foreach run: every iteration below it has started, so one below it without runs in the
   * snapshot is settled (planner/tasks/foreach.ts)
   */
  settled_iterations?: number;
}

/** An execution and its task runs as one statement read them. */
export interface Snapshot {
  exec: ExecutionView & { state: ExecutionState; version: string; kill_requested_at: Date | null; ended_at: Date | null };
  runs: Run[];
}

/** A leaf task run to queue; `instant` says its type is in INSTANT (the worker then skips the claim). */
/** A task-run attempt to queue; `requeued`: times the sweep queued it again after its job failed for good. */
export interface LeafDispatch { taskRunId: string; executionId: string; attempt: number; instant?: boolean; delayMs?: number; requeued?: number }

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

/** What a step writes: new task runs, changed task runs, the execution's new fields, jobs to queue. */
export interface Plan {
  /** every task run as it will be once the plan is applied */
  runs: Run[];
  inserts: Run[];
  /** task runs that existed before the step and changed in it */
  changed: Set<Run>;
  exec: { state?: ExecutionState; started_at?: Date; ended_at?: Date; outputs?: Record<string, unknown>; error?: string | null };
  leaves: LeafDispatch[];
  /** iterations (`path[k]/`) settled in this step: their runs leave the snapshot */
  settled: string[];
  ended: ExecutionState | null;
  now: Date;
}

export const isEmpty = (p: Plan) => p.inserts.length === 0 && p.changed.size === 0 && Object.keys(p.exec).length === 0;

/** Where a template is rendered: the run of the flowable task, its path and iteration, every run so far. */
export interface RenderScope {
  runId: string; path: string; iteration: Iteration | null; runs: Run[];
  /** an iteration (`path[k]`) whose settled runs the template may see but `runs` lacks: the caller reads them */
  settledUnder?: string;
}
export type Iteration = { value: unknown; index: number };
/** Renders a template value in a scope (the step loop binds it to the execution, its flow and the template functions). */
export type Render = (value: unknown, scope: RenderScope) => Promise<unknown>;

/** Caps from workflow.foreach_max_items and foreach_max_concurrency (docs/workflows.md). */
export interface PlanLimits { foreachMaxItems: number; foreachMaxConcurrency: number }
export const DEFAULT_PLAN_LIMITS: PlanLimits = { foreachMaxItems: 1000, foreachMaxConcurrency: 64 };

export function mapState(s: TaskRunState): Status {
  return s === 'SUCCESS' || s === 'SKIPPED' ? 'done' : s === 'FAILED' ? 'failed' : s === 'KILLED' ? 'killed' : 'running';
}
