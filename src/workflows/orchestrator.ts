// The step loop of the orchestrator: reads an execution's snapshot, has the planner
// (./planner/) decide what happens next (create and queue leaf task runs, settle flowable tasks,
// end the execution), applies that through the executions store (./execution-store.ts), then
// queues what it decided through the WorkflowQueue port.
//
// Each step is optimistic: it reads the execution and its task runs in one statement, plans in
// memory, and applies the plan (with the outcome of the task run that prompted it, when there is
// one) in one statement that first locks the execution row and checks its version. A concurrent
// step (a parallel branch ending at the same moment, a kill request) moves the version, and the
// loser reads again and replans; nothing is written twice and nothing is lost. Two round trips per
// step, one commit. Leaf jobs are queued after the commit; an enqueue lost to a crash is
// recovered by the sweep.
import type { Services } from '../services.js';
import type { Db } from '../db/index.js';
import type { ExecutionState } from '../db/workflow-types.js';
import { render as renderTemplate } from './template.js';
import { templateContext, templateFunctions } from './context.js';
import { FlowDefinitions } from './flows.js';
import { storableText } from './storable.js';
import { TtlCache } from '../util/ttl-cache.js';
import { snapshotBytes } from './snapshot-bytes.js';
import { applyOutcomes, applyStep, failExecution, insertStarted, outcomeOnly, readSettledRuns, readSnapshot, type Applying, type NewExecution, type Started } from './execution-store.js';
import { sameTurn } from '../util/same-turn.js';
import { inTurn, type Turns } from '../util/in-turn.js';
import { needsDefinition, plan } from './planner/plan.js';
import { isEmpty, type LeafDispatch, type Outcome, type Plan, type Render, type Snapshot } from './planner/types.js';

export type { Run, Snapshot, LeafDispatch, Outcome } from './planner/types.js';
export { readSnapshot } from './execution-store.js';

/** Queues leaf task runs (through the WorkflowQueue port). */
export async function dispatchLeaves(services: Services, leaves: LeafDispatch[]): Promise<void> {
  if (leaves.length === 0) return;
  await services.workflowQueue.dispatch(leaves);
}

/**
 * What a worker keeps between steps: parsed flow revisions, and the snapshot each of its own steps
 * left behind, so that the next step of the same execution (often the next task, on this worker)
 * starts from it instead of reading. A snapshot that went stale costs nothing but a retry: the
 * apply finds the version moved, and the step reads again. `creates` inserts the executions created
 * in the same turn of the event loop with their first steps in one statement (startCreated);
 * `outcomes` applies the outcome-only steps that reach it in the same turn in one statement.
 */
export interface StepContext {
  defs: FlowDefinitions; snapshots: TtlCache<string, Snapshot>;
  creates: (items: Started[]) => Promise<void>; outcomes: (items: Applying[]) => Promise<void>;
  /** steps waiting per execution in this process (step runs them in turn) */
  turns: Turns<string>;
  /** how to stop the attempts running here, per execution: a kill calls them at once (killRunning) */
  running: Map<string, Set<() => void>>;
}

/** Stops the attempts of these executions running in this process (a kill was requested). */
export function killRunning(ctx: StepContext, executionIds: string[]): void {
  for (const id of executionIds) for (const stop of ctx.running.get(id) ?? []) stop();
}

const SNAPSHOT_RUNS_MAX = 200;
/**
 * Bytes of kept snapshots per worker (estimated, snapshot-bytes.ts): runs carry their outputs, so
 * 256 snapshots of 200 runs could otherwise hold gigabytes. Beyond it the oldest go; a snapshot
 * larger than the whole budget is not kept, and the next step of that execution reads it.
 */
export const SNAPSHOT_CACHE_BYTES = 32 * 1024 * 1024;
/** At most this many executions in one insert, or outcomes in one apply (bounds the statement's size). */
const CREATE_BATCH_MAX = 100;
const OUTCOME_BATCH_MAX = 50;

/** Byte budgets of a step context's caches (tests pass small ones). */
export interface StepCacheBytes { snapshots?: number; definitions?: number }

export function stepContext(db: Db, bytes: StepCacheBytes = {}): StepContext {
  return {
    defs: new FlowDefinitions(db, bytes.definitions),
    snapshots: new TtlCache(256, 60_000, Date.now, { max: bytes.snapshots ?? SNAPSHOT_CACHE_BYTES, sizeOf: snapshotBytes }),
    creates: sameTurn((items) => insertStarted(db, items), CREATE_BATCH_MAX),
    outcomes: sameTurn((items) => applyOutcomes(db, items), OUTCOME_BATCH_MAX),
    turns: new Map(),
    running: new Map(),
  };
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
 * The step contexts of the workflow workers running in this process (src/jobs/workflow-worker.ts
 * registers its own while it runs). With one, createExecution starts an execution in the step
 * that creates it (startCreated) instead of queueing a start job for a worker.
 */
const inlineStarts = new WeakMap<Services, StepContext>();

export function startInline(services: Services, ctx: StepContext | undefined): void {
  if (ctx) inlineStarts.set(services, ctx);
  else inlineStarts.delete(services);
}

/** Drops what this process keeps of an execution that was taken back (deleted after its start could not be queued). */
export function forgetStarted(services: Services, executionId: string): void {
  inlineStarts.get(services)?.snapshots.delete(executionId);
}

/**
 * Creates an execution and takes its first step in one statement, then queues the leaves the step
 * decided: what a start job's step would do, without the job, its round trips through Redis and
 * the separate INSERT (issue 11). Only when a workflow worker runs in this process, so that with
 * workflow.worker_enabled false an execution is created and nothing advances it (SPEC 3). False
 * when it did not start it: no worker here, or the step could not be planned or stored (the
 * caller then creates it as before and a worker's start job meets the same error, as it did).
 */
export async function startCreated(services: Services, e: NewExecution, bound?: <T>(p: Promise<T>) => Promise<T>): Promise<boolean> {
  const ctx = inlineStarts.get(services);
  if (!ctx) return false;
  // the trigger (a webhook's body) stays out of the snapshot this worker keeps, as in createdSnapshot()
  const { trigger: _trigger, ...exec } = e;
  const created: Snapshot = { exec: { ...exec, state: 'CREATED', version: '0', kill_requested_at: null, ended_at: null }, runs: [] };
  let plan: Plan;
  try {
    plan = await planStep(services, ctx.defs, created);
    const item: Started = { e, plan };
    await ctx.creates([item]);
    if (item.error) throw item.error;
  } catch (err) {
    services.logging.module('svc::workflows::orchestrator').debug({ executionId: e.id, err: (err as Error).message }, 'first step not taken in the create path: a start job takes it');
    return false;
  }
  if (!plan.ended && plan.runs.length <= SNAPSHOT_RUNS_MAX) {
    ctx.snapshots.set(e.id, { exec: { ...created.exec, version: '1', state: plan.exec.state ?? 'RUNNING' }, runs: plan.runs });
  }
  // `bound` (a request's): queueing what the step decided may not wait past it; its error reaches the caller
  const queued = afterAdvance(services, e, plan.ended, plan.leaves);
  await (bound ? bound(queued) : queued);
  return true;
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

/** What a step answers: whether the outcome was recorded, the final state, and a leaf it kept. */
export interface StepResult { recorded: boolean; ended: ExecutionState | null; next?: LeafDispatch }

/**
 * One orchestration step, with the outcome of a task-run attempt when one prompted it. Returns
 * whether the outcome was recorded (false: the run was handed to someone else, or is gone) and the
 * final state when the execution ended. `first` is a snapshot the caller already read.
 * With `keepNext`, a step that queues exactly one leaf, an instant one due now (the next task of a
 * sequence of log, output and fail tasks), does not queue it but answers it as `next` for the
 * caller to run at once (task-run.ts): no add, fetch and finish through Redis between two tasks
 * (docs/workflows.md "Instant task runs").
 */
export function step(services: Services, ctx: StepContext, executionId: string, outcome?: Outcome, first?: Snapshot, keepNext = false): Promise<StepResult> {
  // One execution's steps in this process run one after another: siblings ending together (the
  // branches of a parallel) would otherwise all plan from one version, and all but one would find
  // it moved and read again, round after round. In turn, each starts from the snapshot the one
  // before it left. Other executions' steps, and other processes', still run beside it.
  return inTurn(ctx.turns, executionId, () => stepNow(services, ctx, executionId, outcome, first, keepNext));
}

async function stepNow(services: Services, ctx: StepContext, executionId: string, outcome: Outcome | undefined, first: Snapshot | undefined, keepNext: boolean): Promise<StepResult> {
  // The step before this one (inTurn) may have left a later snapshot than the caller's.
  const kept = ctx.snapshots.get(executionId);
  let snap = first && (!kept || BigInt(kept.exec.version) <= BigInt(first.exec.version)) ? first : kept;
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
      if (outcomeOnly(plan, outcome)) {
        const item: Applying = { snap, plan, outcome };
        await ctx.outcomes([item]);
        if (item.error) throw item.error;
        res = item.res!;
      } else {
        res = await applyStep(services.db, snap, plan, outcome);
      }
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
      const [only] = plan.leaves;
      const next = keepNext && plan.leaves.length === 1 && only.instant === true && !only.delayMs ? only : undefined;
      await afterAdvance(services, snap.exec, plan.ended, next ? [] : plan.leaves);
      return { recorded: !!outcome, ended: plan.ended, next };
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
  if (!(await failAndAnnounce(services, executionId, reason, outcome))) return { recorded: false, ended: null };
  return { recorded: !!outcome, ended: 'FAILED' };
}

/**
 * Fails an execution with `reason` (the run of `outcome`, if any, failed with it; failExecution)
 * and announces the end; false when it had ended already. Also the sweep's, for an execution
 * whose start, or a run's job, failed again and again.
 */
export async function failAndAnnounce(services: Services, executionId: string, reason: string, outcome?: Pick<Outcome, 'runId' | 'attempt'>): Promise<boolean> {
  if (!(await failExecution(services.db, executionId, outcome, reason, services.clock.now()))) return false;
  await afterAdvance(services, { id: executionId }, 'FAILED', []);
  return true;
}

/**
 * After the commit: queue the new leaf task runs and announce an ended execution to the flow
 * triggers of its workspace, when it has any (an end whose workspace is not at hand is announced).
 */
async function afterAdvance(services: Services, exec: { id: string; workspace_id?: string }, ended: ExecutionState | null, leaves: LeafDispatch[]): Promise<void> {
  await dispatchLeaves(services, leaves);
  if (ended) {
    services.metrics.executionsEnded.inc({ state: ended });
    // Flow triggers of other flows react to this end (the trigger worker is idempotent per end).
    // When the answer cannot be read, announce: an unheard end cannot be told again later.
    const listened = exec.workspace_id === undefined || await services.flows.hasFlowTriggers(exec.workspace_id).catch((err: Error) => {
      services.logging.module('svc::workflows::orchestrator').warn({ executionId: exec.id, err: err.message }, 'could not read whether a flow trigger listens: announcing the end');
      return true;
    });
    if (listened) await services.workflowQueue.ended(exec.id);
  }
}

/** Plans a step: the pure planner, with templates rendered in this execution's context. */
async function planStep(services: Services, defs: FlowDefinitions, snap: Snapshot, outcome?: Outcome): Promise<Plan> {
  const { exec } = snap;
  const def = !needsDefinition(snap, outcome) ? undefined
    : await defs.get({ workspaceId: exec.workspace_id, namespace: exec.namespace, flowId: exec.flow_id }, exec.flow_revision);
  const render: Render = async (value, scope) => {
    const runs = scope.settledUnder ? [...scope.runs, ...await readSettledRuns(services.db, exec.id, scope.settledUnder)] : scope.runs;
    return renderTemplate(value, templateContext(exec, def!, runs, { id: scope.runId, path: scope.path, iteration: scope.iteration }), templateFunctions(services, exec));
  };
  const { foreach_max_items: foreachMaxItems, foreach_max_concurrency: foreachMaxConcurrency } = services.config.workflow;
  return plan(def, snap, outcome, render, services.clock.now(), { foreachMaxItems, foreachMaxConcurrency });
}
