// One task-run attempt on a worker: claim (lease), render, run the task type with kill polling and
// its timeout, then record the outcome once (guarded by the lease token) in the orchestration step
// that advances the execution, and schedule a retry. Instant types (log, output, fail) skip the
// claim: their step claims and records them at once, guarded by the attempt count.
// A run whose worker died is handed back by the reaper (BullMQ's stalled check once the lock, our
// lease, stayed unrenewed for workflow.working_timeout_s) and claimed again as a new attempt.
import { randomUUID } from 'node:crypto';
import type { Services } from '../services.js';
import type { ContainerRunner } from '../runners/types.js';
import type { TaskRunState } from '../db/workflow-types.js';
import { INSTANT, parseDuration, type FlowDef, type TaskDef } from './flow.js';
import { maskSecrets, render } from './template.js';
import { iterationPrefix, settledUnder, templateContext, templateFunctions, type ExecutionView, type RunView } from './context.js';
import { TaskLog } from './logs.js';
import { NotStorable, storable, storableText } from './storable.js';
import { handlerFor, timeoutFor, TaskFailure } from './tasks.js';
import { advance, dispatchLeaves, readSnapshot, step, type LeafDispatch, type Outcome, type Run, type Snapshot, type StepContext } from './orchestrator.js';
import { readSettledRuns } from './execution-store.js';
import { sql } from 'kysely';
import { dependencyPorts, unreachableDependency } from '../errors.js';

/** `attempt` is the attempt the job runs; `instant` whether the type is INSTANT (absent: unknown). */
export interface TaskRunJob { taskRunId: string; executionId: string; attempt?: number; instant?: boolean }

/** The task definition at an orchestrator path (`0`, `2[3]/0`, `1/then/0`). */
export function taskAtPath(def: FlowDef, path: string): TaskDef | undefined {
  let list: TaskDef[] | undefined = def.tasks;
  let task: TaskDef | undefined;
  for (const seg of path.split('/')) {
    if (seg === 'then' || seg === 'else') { list = (task as unknown as Record<string, TaskDef[]>)?.[seg]; continue; }
    const m = /^(\d+)(?:\[\d+\])?$/.exec(seg);
    if (!m || !list) return undefined;
    task = list[Number(m[1])];
    list = (task as unknown as { tasks?: TaskDef[] })?.tasks;
  }
  return task;
}

/** How often a running attempt renews its lease (the sweep takes a lease unrenewed for two periods as lost). */
export const leaseRenewMs = (workingTimeoutS: number) => Math.min(30_000, (workingTimeoutS * 1000) / 3);

/** The signal of an attempt nothing can abort. */
const NEVER_ABORTED = new AbortController().signal;

class Aborted extends Error { constructor(readonly kind: 'killed' | 'timeout', message: string) { super(message); } }

interface Claimed {
  id: string; execution_id: string; path: string; iteration: unknown; attempt: number; prev_state: string; prev_attempt: number; killed: boolean;
  workspace_id: string; namespace: string; flow_id: string; flow_revision: number; inputs: Record<string, unknown>; created_at: Date;
}

/** One attempt to run: the run, its execution, the task, and how it was claimed. */
interface Attempt {
  exec: ExecutionView; def: FlowDef; taskDef: TaskDef | undefined;
  run: { id: string; path: string; iteration: unknown; attempt: number };
  guard: Outcome['guard']; reason: string | null; startedAt: Date;
  /** task runs already read (an instant run's snapshot, without settled runs), for templates */
  runs?: Run[];
}

/**
 * Instant task runs one job runs in a row at most (the first, then the next ones its steps kept):
 * a sequence of log and output tasks moves on without a round of Redis per task, and a long one
 * goes back through the queue now and then, so one job does not hold a worker slot without end.
 */
export const CHAIN_MAX = 100;

/**
 * Runs a task-run job's attempt and, with `chain` above 1 (the workflow worker passes CHAIN_MAX),
 * the instant runs its steps keep (orchestrator.ts step, `keepNext`), one after another in this
 * job, `chain` runs in all at most; the last of those queues its next leaf. Answers how the job's
 * own attempt ended. A crash in between leaves a run QUEUED without a job, as a crash between a
 * step's commit and its enqueue does: the sweep queues it again.
 */
export async function runTaskRunJob(services: Services, ctx: StepContext, runner: ContainerRunner | null, workerId: string, job: TaskRunJob, chain = 1): Promise<string> {
  let r = await runOnce(services, ctx, runner, workerId, job, chain > 1);
  const first = r.result;
  for (let n = 2; r.next; n++) {
    const leaf = r.next;
    try {
      r = await runOnce(services, ctx, runner, workerId, { taskRunId: leaf.taskRunId, executionId: leaf.executionId, attempt: leaf.attempt + 1, instant: leaf.instant }, n < chain);
    } catch (err) {
      // The job's own attempt is recorded: the kept run gets a job of its own, with its retries
      // (its attempt guard makes a second run of it a duplicate).
      services.logging.module('svc::workflows::task-run').warn({ taskRun: leaf.taskRunId, err: (err as Error).message }, 'a kept instant run failed: queued instead');
      await dispatchLeaves(services, [leaf]);
      break;
    }
  }
  return first;
}

interface Ran { result: string; next?: LeafDispatch }

async function runOnce(services: Services, ctx: StepContext, runner: ContainerRunner | null, workerId: string, job: TaskRunJob, keepNext: boolean): Promise<Ran> {
  // An instant run (log, output, fail) needs no lease: the task, then one step that claims it,
  // records its outcome and advances the execution, from the snapshot this worker's last step of
  // the execution left (or one read). A job queued without the hint (recovery) reads to learn the type.
  if (job.instant !== false) {
    let snap = ctx.snapshots.get(job.executionId);
    let verdict = snap && await instantVerdict(ctx, snap, job);
    // Only a fresh read may conclude the run is not ours to run now.
    if (verdict?.kind !== 'run') {
      snap = await readSnapshot(services.db, job.executionId);
      verdict = snap ? await instantVerdict(ctx, snap, job) : { kind: 'duplicate' };
    }
    if (verdict.kind === 'duplicate') return { result: 'duplicate' };
    if (verdict.kind === 'run') {
      const { run, def, taskDef } = verdict;
      // A kill requested before it started: the step cancels every run not started.
      if (snap!.exec.kill_requested_at) { await step(services, ctx, job.executionId, undefined, snap); return { result: 'killed' }; }
      return runAttempt(services, ctx, runner, workerId, snap, keepNext, {
        exec: snap!.exec, def, taskDef, run: { ...run, attempt: run.attempt + 1 }, guard: { prevAttempt: run.attempt },
        reason: run.state === 'RETRYING' ? 'retry' : null, startedAt: services.clock.now(), runs: snap!.runs,
      });
    }
  }
  const claimed = await claim(services, job.taskRunId);
  if (!claimed) return { result: 'duplicate' };
  if (claimed.killed) { await advance(services, ctx, job.executionId); return { result: 'killed' }; }
  const now = services.clock.now();
  const handedBack = claimed.prev_state === 'RUNNING';
  if (handedBack) {
    await services.db.insertInto('task_run_attempts').values({ task_run_id: claimed.id, attempt: claimed.prev_attempt, state: 'LOST', worker: null, reason: null, started_at: now, ended_at: now })
      .onConflict((oc) => oc.columns(['task_run_id', 'attempt']).doNothing()).execute();
  }
  const exec = { id: claimed.execution_id, workspace_id: claimed.workspace_id, namespace: claimed.namespace, flow_id: claimed.flow_id, flow_revision: claimed.flow_revision, inputs: claimed.inputs, created_at: claimed.created_at };
  const def = await ctx.defs.get({ workspaceId: exec.workspace_id, namespace: exec.namespace, flowId: exec.flow_id }, exec.flow_revision);
  return runAttempt(services, ctx, runner, workerId, undefined, keepNext, {
    exec, def, taskDef: taskAtPath(def, claimed.path), run: claimed, guard: { lease: claimed.lease_token },
    reason: handedBack ? 'handed back: the previous worker\'s lease expired' : claimed.prev_state === 'RETRYING' ? 'retry' : null, startedAt: now,
  });
}

type Verdict = { kind: 'run'; run: Run; def: FlowDef; taskDef: TaskDef | undefined } | { kind: 'duplicate' } | { kind: 'claim' };

/** Whether a snapshot shows the job's run waiting for this attempt, as an instant task. */
async function instantVerdict(ctx: StepContext, snap: Snapshot, job: TaskRunJob): Promise<Verdict> {
  const run = snap.runs.find((r) => r.id === job.taskRunId);
  if (!run || run.ended_at) return { kind: 'duplicate' };
  if (run.state !== 'QUEUED' && run.state !== 'RETRYING') return job.instant ? { kind: 'duplicate' } : { kind: 'claim' };
  if (job.attempt !== undefined && run.attempt !== job.attempt - 1) return { kind: 'duplicate' };
  const def = await ctx.defs.get({ workspaceId: snap.exec.workspace_id, namespace: snap.exec.namespace, flowId: snap.exec.flow_id }, snap.exec.flow_revision);
  const taskDef = taskAtPath(def, run.path);
  return taskDef && !INSTANT.has(taskDef.type) ? { kind: 'claim' } : { kind: 'run', run, def, taskDef };
}

/** Claims a run for a new attempt (the lease) in one statement or, when a kill was requested, ends it. */
async function claim(services: Services, taskRunId: string): Promise<(Claimed & { lease_token: string }) | undefined> {
  const cfg = services.config.workflow;
  const token = randomUUID();
  const now = services.clock.now();
  const { rows } = await sql<Claimed>`
    WITH prev AS (
      SELECT id, state AS prev_state, attempt AS prev_attempt FROM task_runs
      WHERE id = ${taskRunId} AND ended_at IS NULL AND state IN ('QUEUED', 'RUNNING', 'RETRYING') FOR UPDATE
    )
    UPDATE task_runs t SET
      state = CASE WHEN e.kill_requested_at IS NULL THEN 'RUNNING' ELSE 'KILLED' END,
      attempt = CASE WHEN e.kill_requested_at IS NULL THEN t.attempt + 1 ELSE t.attempt END,
      lease_token = CASE WHEN e.kill_requested_at IS NULL THEN ${token} END,
      lease_until = CASE WHEN e.kill_requested_at IS NULL THEN ${new Date(now.getTime() + cfg.working_timeout_s * 1000)}::timestamptz END,
      started_at = COALESCE(t.started_at, ${now}::timestamptz),
      ended_at = CASE WHEN e.kill_requested_at IS NULL THEN NULL ELSE ${now}::timestamptz END,
      error = CASE WHEN e.kill_requested_at IS NULL THEN t.error ELSE 'killed before it started' END
    FROM prev, executions e
    WHERE t.id = prev.id AND e.id = t.execution_id
    RETURNING t.id, t.execution_id, t.path, t.iteration, t.attempt, prev.prev_state, prev.prev_attempt, e.kill_requested_at IS NOT NULL AS killed,
      e.workspace_id, e.namespace, e.flow_id, e.flow_revision, e.inputs, e.created_at`.execute(services.db);
  return rows[0] ? { ...rows[0], lease_token: token } : undefined;
}

/** Pauses between tries of recording an outcome while PostgreSQL is away (about two minutes in all). */
const RECORD_BACKOFF_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000, 60_000];

/**
 * Records an attempt's outcome in its step, trying again while PostgreSQL cannot be reached: the
 * task ran, so its outcome is kept in memory and written once the database is back, instead of
 * the job failing and the task running again. Past the pauses the error goes to the job (BullMQ's
 * attempts, then the sweep, hand the run back).
 */
async function recordOutcome(services: Services, ctx: StepContext, executionId: string, outcome: Outcome, snap: Snapshot | undefined, keepNext: boolean): ReturnType<typeof step> {
  for (let i = 0; ; i++) {
    try {
      // a retry after an outage goes the plain way: the next leaf through the queue
      return await step(services, ctx, executionId, outcome, i === 0 ? snap : undefined, i === 0 && keepNext);
    } catch (err) {
      const dependency = unreachableDependency(err);
      if (!dependency || i >= RECORD_BACKOFF_MS.length) throw err;
      services.logging.module('svc::workflows::task-run').warn({ taskRun: outcome.runId, dependency, err: (err as Error).message, retryInMs: RECORD_BACKOFF_MS[i] },
        'recording the outcome failed: tried again when the dependency is back');
      await new Promise((r) => setTimeout(r, RECORD_BACKOFF_MS[i]));
    }
  }
}

/** Renders and runs the task with kill polling and its timeout, then records the outcome in one step. */
async function runAttempt(services: Services, ctx: StepContext, runner: ContainerRunner | null, workerId: string, snap: Snapshot | undefined, keepNext: boolean, a: Attempt): Promise<Ran> {
  const cfg = services.config.workflow;
  const { exec, def, taskDef, run } = a;
  const log = new TaskLog(services.db, services.clock, { executionId: exec.id, taskRunId: run.id, attempt: run.attempt }, { maxLines: cfg.log_run_max_lines, maxBytes: cfg.log_run_max_bytes },
    services.logging.module('svc::workflows::logs'));
  if (a.reason?.startsWith('handed back')) log.system('WARN', `attempt ${run.attempt}: ${a.reason}`);

  // Only a timeout or a kill poll (leased runs) can abort an attempt; an instant run without a
  // timeout shares one signal that never fires (an AbortController per attempt showed in profiles).
  const timeoutMs = taskDef ? timeoutFor(services, taskDef) : undefined;
  const controller = timeoutMs !== undefined || 'lease' in a.guard ? new AbortController() : undefined;
  const signal = controller?.signal ?? NEVER_ABORTED;
  const started = Date.now();
  let state: TaskRunState = 'SUCCESS';
  let outputs: Record<string, unknown> = {};
  let error: string | null = null;
  const timers: NodeJS.Timeout[] = [];
  let untrack = () => {};
  try {
    if (!taskDef) throw new TaskFailure(`task at ${run.path} is not in revision ${exec.flow_revision} of the flow`);
    if (timeoutMs !== undefined) {
      timers.push(setTimeout(() => controller!.abort(new Aborted('timeout', `timed out after ${timeoutMs / 1000} s`)), timeoutMs));
    }
    if ('lease' in a.guard) {
      // A kill requested on any replica reaches this attempt at once (killRunning, over the
      // invalidation channel); the poll below is the fallback when that message is lost.
      const stop = () => { if (!signal.aborted) controller!.abort(new Aborted('killed', 'killed')); };
      const mine = ctx.running.get(exec.id) ?? new Set();
      ctx.running.set(exec.id, mine.add(stop));
      untrack = () => { mine.delete(stop); if (mine.size === 0 && ctx.running.get(exec.id) === mine) ctx.running.delete(exec.id); };
      // Kill requests are polled; the lease in the database is renewed alongside (BullMQ renews its lock).
      const token = a.guard.lease;
      let lastRenew = Date.now();
      timers.push(setInterval(() => {
        void (async () => {
          const row = await services.db.selectFrom('executions').select('kill_requested_at').where('id', '=', exec.id).executeTakeFirst();
          if (row?.kill_requested_at && !signal.aborted) controller!.abort(new Aborted('killed', 'killed'));
          if (Date.now() - lastRenew > leaseRenewMs(cfg.working_timeout_s)) {
            lastRenew = Date.now();
            await services.db.updateTable('task_runs').set({ lease_until: new Date(services.clock.now().getTime() + cfg.working_timeout_s * 1000) })
              .where('id', '=', run.id).where('lease_token', '=', token).execute();
          }
        })().catch((err: Error) => {
          // the next tick polls again; BullMQ's own lock renewal keeps the run ours meanwhile
          services.logging.module('svc::workflows::task-run').warn({ taskRun: run.id, err: err.message }, 'kill poll or lease renewal failed; retried on the next tick');
        });
      }, cfg.kill_poll_ms));
    }

    const { retry: _r, timeout: _t, description: _d, ...props } = taskDef as TaskDef & Record<string, unknown>;
    let rendered = props as Record<string, unknown> & { id: string; type: string };
    if (JSON.stringify(props).includes('{{')) {
      // Earlier outputs are read only when a template may use them, and only those it may see
      // (outputsFor): successful runs outside iterations and in this run's own iteration, so the
      // read does not grow with the finished iterations of a foreach.
      const prefix = iterationPrefix(run.path);
      // A snapshot lacks settled runs: those this template may see are read back (context.ts settledUnder).
      const under = a.runs && settledUnder(run.path, a.runs);
      const runs: RunView[] = a.runs ? (under ? [...a.runs, ...await readSettledRuns(services.db, exec.id, under)] : a.runs) : (await services.db.selectFrom('task_runs').select(['id', 'task_id', 'path', 'state', 'outputs', 'iteration'])
        .where('execution_id', '=', exec.id).where('state', '=', 'SUCCESS')
        .where((eb) => eb.or([sql<boolean>`position('[' in path) = 0`, ...(prefix ? [sql<boolean>`starts_with(path, ${prefix})`] : [])]))
        .execute()).map((r) => ({ ...r, outputs: r.outputs ?? {} }));
      const ctx = templateContext(exec, def, runs, { id: run.id, path: run.path, iteration: run.iteration, attempt: run.attempt });
      rendered = (await render(props, ctx, templateFunctions(services, exec, log.masked), { reveal: true })) as typeof rendered;
    }
    const inContainer = taskDef.type === 'script' || taskDef.type.includes('.');
    const ws = inContainer
      ? await services.db.selectFrom('workspaces').select(['workflow_containers', 'workflow_plugins']).where('id', '=', exec.workspace_id).executeTakeFirstOrThrow()
      : { workflow_containers: false, workflow_plugins: false };
    const handler = handlerFor(taskDef.type);
    const running = handler({ services, task: rendered, log, signal, ids: { workspaceId: exec.workspace_id, executionId: exec.id, taskRunId: run.id, attempt: run.attempt }, workspace: ws, runner, timeoutMs });
    // A container task ends when its container is gone (SIGTERM, kill_grace_s, SIGKILL), so the
    // attempt holds its lease until then; in-process tasks end at once on abort.
    outputs = inContainer || !controller ? await running : await Promise.race([running, new Promise<never>((_, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    })]);
    // A kill requested while the task ran ends it KILLED even when the task got to its end before
    // the kill reached it: the kill's answer said running tasks stop.
    if ('lease' in a.guard && !signal.aborted) {
      // (unreadable: the database is away, and the outcome's step waits for it anyway)
      const row = await services.db.selectFrom('executions').select('kill_requested_at').where('id', '=', exec.id).executeTakeFirst().catch(() => undefined);
      if (row?.kill_requested_at) throw new Aborted('killed', 'killed');
    }
  } catch (err) {
    // PostgreSQL, Redis or the object store away (reading templates' inputs, storing files) is no
    // outcome of the task: the job fails and BullMQ's attempts run it again once they are back.
    // (a service the task itself calls is the task's outcome: it fails, and its retry policy decides)
    const dependency = err instanceof Aborted ? undefined : unreachableDependency(err, dependencyPorts({ database: services.config.database.url, redis: services.config.redis.url }));
    if (dependency && dependency !== 'a service it calls') { await log.finish().catch(() => undefined); throw err; }
    if (err instanceof Aborted) { state = err.kind === 'killed' ? 'KILLED' : 'FAILED'; error = err.message; }
    else { state = 'FAILED'; error = (err as Error).message ?? String(err); }
    log.write('ERROR', error);
  } finally {
    for (const t of timers) { clearTimeout(t); clearInterval(t); }
    untrack();
  }
  const rows = await log.finish();
  // Secret values never leave the task: outputs and errors are stored and shown masked, as logs are.
  outputs = maskSecrets(outputs ?? {}, log.masked) as Record<string, unknown>;
  // What a task produced is made storable here: a NUL or a lone surrogate used to fail the step.
  try { outputs = storable(outputs, 'the outputs') as Record<string, unknown>; } catch (e) {
    if (!(e instanceof NotStorable)) throw e;
    outputs = {}; state = 'FAILED'; error = e.message;
  }
  if (error) error = storableText(maskSecrets(error, log.masked) as string);

  const retry = taskDef?.retry;
  const retrying = state === 'FAILED' && retry !== undefined && run.attempt < retry.maxAttempts;
  // The outcome, its attempt record, its last log lines and the next orchestration step commit
  // together; the write is guarded by the lease (or the attempt count) so it happens once.
  const outcome: Outcome = {
    runId: run.id, guard: a.guard, state: retrying ? 'RETRYING' : state, attemptState: state, attempt: run.attempt, outputs, error,
    startedAt: a.startedAt, endedAt: services.clock.now(), worker: workerId, reason: a.reason,
    log: { lines: log.lines, bytes: log.bytes, withheld: log.withheld, rows },
  };
  // A retry goes through the queue (its delay); otherwise the step may keep the next instant leaf.
  const res = await recordOutcome(services, ctx, exec.id, outcome, snap, keepNext && !retrying);
  const type = taskDef?.type.includes('.') ? 'plugin' : taskDef?.type ?? 'unknown';
  services.metrics.taskRunsEnded.inc({ type, state });
  services.metrics.taskRunSeconds.observe({ type }, (Date.now() - started) / 1000);
  if (!res.recorded) return { result: 'superseded' };
  if (retrying) {
    await dispatchLeaves(services, [{ taskRunId: run.id, executionId: exec.id, attempt: run.attempt, instant: INSTANT.has(taskDef!.type), delayMs: parseDuration(retry!.interval ?? 0) ?? 0 }]);
    return { result: 'retrying' };
  }
  return { result: state, next: res.next };
}
