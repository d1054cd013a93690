// The workflow worker pool: BullMQ workers on the `executions` queue (the orchestrator) and the
// `task-runs` queue (leaf task runs). Queue semantics carry the spec's rules:
//   claim tick    -> a free slot waits at most tick_interval_secs (drainDelay) and wakes at once
//                    when a job arrives; at most `batch` task runs run at once (concurrency)
//   lease         -> the job lock, lockDuration = working_timeout_s, renewed while the worker lives
//   reaper        -> the stalled-job check every reaper_interval_secs hands back a run whose lock
//                    expired; plus a sweep that re-queues work whose enqueue was lost to a crash
import { Worker, type Job } from 'bullmq';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Services } from '../services.js';
import { QUEUE } from './queues.js';
import { advance, dispatchLeaves, revive, stepContext, type Snapshot } from '../workflows/orchestrator.js';
import { runTaskRunJob, type TaskRunJob } from '../workflows/task-run.js';
import { createContainerRunner } from '../runners/index.js';
import { enqueueAdvance } from '../workflows/executions.js';

export interface WorkflowWorker { workerId: string; close(): Promise<void> }

const SWEEP_AFTER_MS = 30_000;

export async function startWorkflowWorker(services: Services): Promise<WorkflowWorker> {
  const cfg = services.config.workflow;
  const log = services.logging.module('svc::jobs::worker');
  const workerId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const ctx = stepContext(services.db);
  const runner = await createContainerRunner(services.config, { log: services.logging.module('svc::runners'), clock: services.clock });
  const connection = services.queues.connection();
  const prefix = services.queues.prefix;
  const waited = (queue: string, job: Job) => services.metrics.jobWaitSeconds.observe({ queue }, Math.max(0, Date.now() - (job.timestamp + (job.opts.delay ?? 0))) / 1000);

  const orchestrator = new Worker<{ executionId: string; created?: Snapshot }>(QUEUE.executions, async (job) => {
    waited(QUEUE.executions, job);
    if (job.name === 'sweep') return sweep(services);
    return advance(services, ctx, job.data.executionId, job.data.created && revive(job.data.created));
  }, { connection, prefix, concurrency: Math.max(4, cfg.batch), drainDelay: Math.max(1, cfg.tick_interval_secs), stalledInterval: Math.max(1, cfg.reaper_interval_secs) * 1000, maxStalledCount: 5 });

  const taskRuns = new Worker<TaskRunJob>(QUEUE.taskRuns, async (job) => {
    waited(QUEUE.taskRuns, job);
    return runTaskRunJob(services, ctx, runner, workerId, job.data);
  }, {
    connection, prefix,
    concurrency: Math.max(1, cfg.batch),
    drainDelay: Math.max(1, cfg.tick_interval_secs),
    lockDuration: Math.max(1, cfg.working_timeout_s) * 1000,
    stalledInterval: Math.max(1, cfg.reaper_interval_secs) * 1000,
    maxStalledCount: 10,
  });
  for (const [name, w] of [[QUEUE.executions, orchestrator], [QUEUE.taskRuns, taskRuns]] as const) {
    w.on('failed', (job, err) => { services.metrics.jobFailures.inc({ queue: name }); log.warn({ queue: name, job: job?.id, err: err.message }, 'job failed'); });
    w.on('stalled', (jobId) => log.warn({ queue: name, job: jobId }, 'lease expired: job handed back'));
    w.on('error', (err) => log.warn({ queue: name, err: err.message }, 'worker error'));
  }
  await services.queues.get(QUEUE.executions).upsertJobScheduler('sweep', { every: Math.max(1, cfg.reaper_interval_secs) * 1000 }, { name: 'sweep', data: { executionId: '' }, opts: { removeOnComplete: 10, removeOnFail: 10 } });
  log.info({ workerId, batch: cfg.batch, runner: runner?.kind ?? 'none' }, 'workflow worker started');
  return {
    workerId,
    async close() { await Promise.all([orchestrator.close(), taskRuns.close()]); },
  };
}

/** Re-queues work whose enqueue was lost (a crash between commit and add): idempotent by job id. */
async function sweep(services: Services): Promise<{ starts: number; leaves: number }> {
  const cutoff = new Date(services.clock.now().getTime() - SWEEP_AFTER_MS);
  const created = await services.db.selectFrom('executions').select('id').where('state', '=', 'CREATED').where('created_at', '<', cutoff).limit(100).execute();
  for (const e of created) await enqueueAdvance(services, e.id, 'start');
  const queued = await services.db.selectFrom('task_runs').select(['id', 'execution_id', 'attempt'])
    .where('state', '=', 'QUEUED').where('dispatched_at', '<', cutoff).limit(100).execute();
  const q = services.queues.get(QUEUE.taskRuns);
  const lost = [];
  for (const r of queued) {
    const job = await q.getJob(`${r.id}-${r.attempt + 1}`);
    if (!job) lost.push({ taskRunId: r.id, executionId: r.execution_id, attempt: r.attempt });
  }
  await dispatchLeaves(services, lost);
  return { starts: created.length, leaves: lost.length };
}
