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
import type { Services } from '../services.js';
import { QUEUES, type InstantRunsBatch, type TaskRunJobData } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { advance, dispatchLeaves, revive, startInline, stepContext, type Snapshot } from '../workflows/orchestrator.js';
import { CHAIN_MAX, runTaskRunJob, type TaskRunJob } from '../workflows/task-run.js';
import { createContainerRunner } from '../runners/index.js';
import { enqueueAdvance } from '../workflows/executions.js';

export interface WorkflowWorker { workerId: string; close(): Promise<void> }

const SWEEP_AFTER_MS = 30_000;
/** Instant task runs (log, output, fail) a worker runs at once: they wait on nothing but their step's commit. */
export const INSTANT_CONCURRENCY = 64;

export async function startWorkflowWorker(services: Services): Promise<WorkflowWorker> {
  const cfg = services.config.workflow;
  const log = services.logging.module('svc::jobs::worker');
  const workerId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const ctx = stepContext(services.db);
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
  await services.queues.get(QUEUES.executions).upsertJobScheduler('sweep', { every: Math.max(1, cfg.reaper_interval_secs) * 1000 }, { name: 'sweep', data: { executionId: '' }, opts: QUEUES.executions.scheduledJobOptions });
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

/** Re-queues work whose enqueue was lost (a crash between commit and add): idempotent by job id. */
export async function sweep(services: Services): Promise<{ starts: number; leaves: number }> {
  const cutoff = new Date(services.clock.now().getTime() - SWEEP_AFTER_MS);
  const created = await services.db.selectFrom('executions').select('id').where('state', '=', 'CREATED').where('created_at', '<', cutoff).limit(100).execute();
  for (const e of created) await enqueueAdvance(services, e.id, 'start');
  const queued = await services.db.selectFrom('task_runs').select(['id', 'execution_id', 'attempt'])
    .where('state', '=', 'QUEUED').where('dispatched_at', '<', cutoff).limit(100).execute();
  const instant = services.queues.get(QUEUES.instantRuns);
  const queues = [services.queues.get(QUEUES.taskRuns), instant];
  let lost = [];
  for (const r of queued) {
    const id = `${r.id}-${r.attempt + 1}`;
    // re-queued without the instant hint: the task-runs worker reads the run to learn its type
    if (!(await Promise.all(queues.map((q) => q.getJob(id)))).some(Boolean)) lost.push({ taskRunId: r.id, executionId: r.execution_id, attempt: r.attempt });
  }
  if (lost.length > 0) {
    // an attempt queued with others has no job of its own: it is lost only if no `runs` job holds it
    // (past the first SWEEP_INSTANT_JOBS_MAX jobs, a run queued again meets its guard: it runs once)
    const batches = await instant.getJobs(['wait', 'prioritized', 'active', 'delayed'], 0, SWEEP_INSTANT_JOBS_MAX - 1);
    // (a job that ended between the listing and its read comes back undefined)
    const held = new Set(batches.flatMap((j) => (j?.data && 'runs' in j.data ? j.data.runs.map((r) => `${r.taskRunId}-${r.attempt}`) : [])));
    lost = lost.filter((l) => !held.has(`${l.taskRunId}-${l.attempt + 1}`));
  }
  await dispatchLeaves(services, lost);
  return { starts: created.length, leaves: lost.length };
}
