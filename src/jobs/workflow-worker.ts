// The workflow worker pool: BullMQ workers on the `executions` queue (the orchestrator), the
// `task-runs` queue (leaf task runs that are claimed with a lease) and the `instant-runs` queue
// (log, output and fail runs, never claimed). Queue semantics carry the spec's rules:
//   claim tick    -> a free slot waits at most tick_interval_secs (drainDelay) and wakes at once
//                    when a job arrives; at most `batch` claimed task runs run at once (concurrency)
//   lease         -> the job lock, lockDuration = working_timeout_s, renewed while the worker lives
//   reaper        -> the stalled-job check every reaper_interval_secs hands back a run whose lock
//                    expired; plus a sweep that re-queues work whose enqueue was lost to a crash
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import { QUEUES, type ExecutionJob, type InstantRunsBatch, type TaskRunJobData } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { advance, dispatchLeaves, failAndAnnounce, killRunning, revive, startInline, stepContext, type LeafDispatch, type Snapshot } from '../workflows/orchestrator.js';
import { CHAIN_MAX, leaseRenewMs, runTaskRunJob, type TaskRunJob } from '../workflows/task-run.js';
import { createContainerRunner } from '../runners/index.js';
import { enqueueAdvance } from '../workflows/executions.js';

export interface WorkflowWorker { workerId: string; close(): Promise<void> }

/** Instant task runs (log, output, fail) a worker runs at once: they wait on nothing but their step's commit. */
export const INSTANT_CONCURRENCY = 64;

export async function startWorkflowWorker(services: Services): Promise<WorkflowWorker> {
  const cfg = services.config.workflow;
  const log = services.logging.module('svc::jobs::worker');
  const workerId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const ctx = stepContext(services.db);
  // a kill requested here or on another replica stops this worker's attempts of the execution at once
  services.invalidator.on('kill', (ids) => killRunning(ctx, ids));
  const runner = await createContainerRunner(services.config, { log: services.logging.module('svc::runners'), clock: services.clock });
  const orchestrator = startWorker(services, QUEUES.executions, async (job) => {
    if (job.name === 'sweep') return sweep(services);
    return advance(services, ctx, job.data.executionId, job.data.created ? revive(job.data.created as Snapshot) : undefined);
  }, { log, concurrency: Math.max(4, cfg.batch), drainDelay: Math.max(1, cfg.tick_interval_secs), stalledInterval: Math.max(1, cfg.reaper_interval_secs) * 1000, maxStalledCount: 5 });

  const leafOptions = {
    log,
    drainDelay: Math.max(1, cfg.tick_interval_secs),
    lockDuration: Math.max(1, cfg.working_timeout_s) * 1000,
    stalledInterval: Math.max(1, cfg.reaper_interval_secs) * 1000,
    maxStalledCount: 10,
  };
  // A run's step may keep the next instant run of its execution for this job to run at once.
  const runOne = (run: TaskRunJob) => runTaskRunJob(services, ctx, runner, workerId, run, CHAIN_MAX);
  const taskRuns = startWorker(services, QUEUES.taskRuns, (job) => runOne(job.data), { ...leafOptions, concurrency: Math.max(1, cfg.batch) });
  // Instant runs hold no lease and no container and end in microseconds: many at once let their
  // outcomes share the orchestrator's group commits (docs/workflows.md "Instant task runs").
  const instantRuns = startWorker(services, QUEUES.instantRuns, (job) => ('runs' in job.data ? runBatch(job.data, runOne) : runOne(job.data)),
    { ...leafOptions, concurrency: Math.max(INSTANT_CONCURRENCY, cfg.batch) });
  await services.queues.schedule(QUEUES.executions, 'sweep', Math.max(1, cfg.reaper_interval_secs) * 1000, { name: 'sweep', data: { executionId: '' }, opts: QUEUES.executions.scheduledJobOptions });
  // Executions created in this process now take their first step as they are created.
  startInline(services, ctx);
  log.info({ workerId, batch: cfg.batch, runner: runner?.kind ?? 'none' }, 'workflow worker started');
  return {
    workerId,
    async close() {
      startInline(services, undefined);
      await Promise.all([orchestrator.close(), taskRuns.close(), instantRuns.close()]);
    },
  };
}

/**
 * Runs the attempts of a `runs` job side by side, each as its own job would. When some fail, the
 * job fails with the first reason once all have ended: the others are recorded, and a failed one's
 * run stays QUEUED for the sweep, as a failed job of its own would (a retry of the whole job finds
 * the recorded ones done). Answers how many attempts ended how.
 */
export async function runBatch(batch: InstantRunsBatch, runOne: (run: TaskRunJobData) => Promise<string>): Promise<Record<string, number>> {
  const settled = await Promise.allSettled(batch.runs.map(runOne));
  const counts: Record<string, number> = {};
  for (const r of settled) if (r.status === 'fulfilled') counts[r.value] = (counts[r.value] ?? 0) + 1;
  const failed = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) throw new Error(`${failed.length} of ${batch.runs.length} runs failed: ${(failed[0].reason as Error)?.message ?? String(failed[0].reason)}`);
  return counts;
}

/** `instant-runs` jobs the sweep looks into at most per state (waiting, prioritized, running, delayed) for `runs` jobs. */
const SWEEP_INSTANT_JOBS_MAX = 250;
/** Rows of each kind the sweep looks at per run (the next sweep takes the rest). */
const SWEEP_BATCH = 100;
/** Times the sweep queues a failed start, or a queued run's failed job, again before it fails the execution (a job that fails whatever the moment). */
export const SWEEP_REQUEUES_MAX = 5;
/** A job that is still going to run (or running): the sweep leaves its work alone. */
const LIVE = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'paused']);

/** `unstartable` / `unrunnable`: executions failed because their start, or a queued run's job, failed more than SWEEP_REQUEUES_MAX times over. */
export interface SweepResult { starts: number; kills: number; leaves: number; handedBack: number; unstartable: number; unrunnable: number }

/**
 * Ends or re-queues, exactly once, work whose job is gone, failed or finished without recording
 * an outcome (docs/workflows.md "Recovery"): a crash between commit and enqueue, a job whose
 * attempts ran out while PostgreSQL was down, Redis restarted empty.
 *   CREATED executions       their start job is queued again; one whose start failed more than
 *                            SWEEP_REQUEUES_MAX times over is failed instead (a start failing whatever the moment)
 *   KILLING executions       their kill step is queued again (it ends what has not started)
 *   QUEUED / RETRYING runs   their attempt's job is queued again; one whose job failed more than
 *                            SWEEP_REQUEUES_MAX times over fails with its execution
 *   RUNNING runs             handed back (a new attempt) when their job failed, or when it is gone
 *                            and the lease was not renewed for two renewal periods (no worker holds it)
 * A failed or finished job of that id is removed first, so the new one is not taken for a duplicate.
 */
export async function sweep(services: Services): Promise<SweepResult> {
  const cfg = services.config.workflow;
  const log = services.logging.module('svc::jobs::worker');
  const now = services.clock.now();
  // Only the moment between a commit and its enqueue needs sparing: job ids make a second add a no-op.
  const cutoff = new Date(now.getTime() - sweepAfterMs(cfg.reaper_interval_secs));
  const db = services.db;
  const executions = services.queues.get(QUEUES.executions);
  const instant = services.queues.get(QUEUES.instantRuns);
  const leafQueues: Queue[] = [services.queues.get(QUEUES.taskRuns), instant];
  /** The job of that id on these queues, with its state, or undefined when there is none. */
  const jobOf = async (id: string, queues: Array<Queue>) => {
    for (const q of queues) {
      const job = await q.getJob(id);
      if (job) return { job, state: await job.getState() };
    }
    return undefined;
  };
  /** How many times the work will have been queued again by the sweep, when `found` failed for good (0 when it is lost otherwise). */
  const requeuesOf = (found: Awaited<ReturnType<typeof jobOf>>) => (found?.state === 'failed' ? ((found.job.data as ExecutionJob | TaskRunJobData).requeued ?? 0) + 1 : 0);
  /** Whether work whose job is `found` needs its job again; a dead job is removed first. */
  const lost = async (found: Awaited<ReturnType<typeof jobOf>>) => {
    if (found && LIVE.has(found.state)) return false;
    if (found) await found.job.remove().catch((err: Error) => log.warn({ job: found.job.id, err: err.message }, 'sweep: removing a dead job failed'));
    return true;
  };

  // oldest first: what waits longest is the likeliest lost, and the next sweep takes the rest
  const created = await db.selectFrom('executions').select('id').where('state', '=', 'CREATED').where('created_at', '<', cutoff).orderBy('created_at').limit(SWEEP_BATCH).execute();
  let starts = 0;
  let unstartable = 0;
  for (const e of created) {
    const found = await jobOf(`${e.id}-start`, [executions as Queue]);
    // a start that failed for a reason no retry mends fails every time: queued again at most
    // SWEEP_REQUEUES_MAX times, then the execution fails (an outage lets the sweep run only once it is over)
    const requeued = requeuesOf(found);
    if (!(await lost(found))) continue;
    if (requeued > SWEEP_REQUEUES_MAX) {
      log.error({ executionId: e.id, err: found?.job.failedReason }, 'sweep: an execution whose start failed every time is failed');
      if (await failAndAnnounce(services, e.id, `it could not be started: its start failed ${requeued} times (the server log names the error)`)) unstartable++;
      continue;
    }
    await enqueueAdvance(services, e.id, 'start', undefined, requeued);
    starts++;
  }
  // A kill whose step was never queued (Redis away when it was asked) ends what has not started.
  const killing = await db.selectFrom('executions').select('id').where('state', '=', 'KILLING').where('ended_at', 'is', null)
    .where('kill_requested_at', '<', cutoff).orderBy('kill_requested_at').limit(SWEEP_BATCH).execute();
  for (const e of killing) await enqueueAdvance(services, e.id, 'kill');

  // QUEUED runs, and RETRYING ones whose last attempt ended before the cutoff (their job is delayed).
  const waiting = await db.selectFrom('task_runs as t').select(['t.id', 't.execution_id', 't.attempt', 't.state', 't.task_id'])
    .where('t.ended_at', 'is', null)
    .where((eb) => eb.or([
      eb.and([eb('t.state', '=', 'QUEUED'), eb('t.dispatched_at', '<', cutoff)]),
      eb.and([eb('t.state', '=', 'RETRYING'), eb.exists(eb.selectFrom('task_run_attempts as a').select('a.attempt')
        .whereRef('a.task_run_id', '=', 't.id').whereRef('a.attempt', '=', 't.attempt').where('a.ended_at', '<', cutoff))]),
    ]))
    .orderBy('t.created_at').limit(SWEEP_BATCH).execute();
  let leaves: LeafDispatch[] = [];
  let unrunnable = 0;
  for (const r of waiting) {
    const found = await jobOf(`${r.id}-${r.attempt + 1}`, leafQueues);
    // as for starts: a job that fails whatever the moment is queued again SWEEP_REQUEUES_MAX times
    // (a run lost from a failed `runs` batch has no job of its own to count on: its first is free)
    const requeued = requeuesOf(found);
    if (!(await lost(found))) continue;
    if (requeued > SWEEP_REQUEUES_MAX) {
      log.error({ executionId: r.execution_id, taskRunId: r.id, err: found?.job.failedReason }, 'sweep: a task run whose job failed every time fails its execution');
      const reason = `task ${r.task_id} could not be run: its job failed ${requeued} times (the server log names the error)`;
      if (await failAndAnnounce(services, r.execution_id, reason, { runId: r.id, attempt: r.attempt })) unrunnable++;
      continue;
    }
    // re-queued without the instant hint: the task-runs worker reads the run to learn its type
    leaves.push({ taskRunId: r.id, executionId: r.execution_id, attempt: r.attempt, ...(requeued ? { requeued } : {}) });
  }
  if (leaves.some((l) => waiting.find((w) => w.id === l.taskRunId)?.state === 'QUEUED')) {
    // an attempt queued with others has no job of its own: it is lost only if no `runs` job holds it
    // (past the first SWEEP_INSTANT_JOBS_MAX jobs, a run queued again meets its guard: it runs once)
    const batches = await instant.getJobs(['wait', 'prioritized', 'active', 'delayed'], 0, SWEEP_INSTANT_JOBS_MAX - 1);
    // (a job that ended between the listing and its read comes back undefined)
    const held = new Set(batches.flatMap((j) => (j?.data && 'runs' in j.data ? j.data.runs.map((r) => `${r.taskRunId}-${r.attempt}`) : [])));
    leaves = leaves.filter((l) => !held.has(`${l.taskRunId}-${l.attempt + 1}`));
  }

  // RUNNING runs whose lease was not renewed lately (a live attempt renews it every renewal period).
  const renewMs = leaseRenewMs(cfg.working_timeout_s);
  const stale = new Date(now.getTime() + cfg.working_timeout_s * 1000 - 2 * renewMs - cfg.kill_poll_ms);
  const running = await db.selectFrom('task_runs').select(['id', 'execution_id', 'attempt', 'lease_until'])
    .where('state', '=', 'RUNNING').where('ended_at', 'is', null).where('started_at', '<', cutoff)
    // the stalest leases first: live attempts keep theirs fresh and sort last
    .orderBy(sql`lease_until ASC NULLS FIRST`).limit(SWEEP_BATCH).execute();
  let handedBack = 0;
  for (const r of running) {
    const found = await jobOf(`${r.id}-${r.attempt}`, leafQueues);
    // a failed job ran its processor to the end (or lost its worker past maxStalledCount): nobody holds the run
    const dead = found?.state === 'failed' || ((!found || found.state === 'completed') && (!r.lease_until || r.lease_until < stale));
    if (!dead || !(await lost(found))) continue;
    // the next attempt's job claims it: the claim sees it RUNNING and records the lost attempt
    const next = await jobOf(`${r.id}-${r.attempt + 1}`, leafQueues);
    if (!(await lost(next))) continue;
    leaves.push({ taskRunId: r.id, executionId: r.execution_id, attempt: r.attempt });
    handedBack++;
  }
  await dispatchLeaves(services, leaves);
  if (starts + killing.length + leaves.length > 0) {
    log.warn({ starts, kills: killing.length, leaves: leaves.length - handedBack, handedBack }, 'sweep: queued again work whose job was lost or failed');
  }
  return { starts, kills: killing.length, leaves: leaves.length - handedBack, handedBack, unstartable, unrunnable };
}

/** How old unqueued work must be before the sweep queues it: one reaper interval, between 2 and 30 s. */
export const sweepAfterMs = (reaperIntervalSecs: number) => Math.min(30_000, Math.max(2_000, reaperIntervalSecs * 1000));
