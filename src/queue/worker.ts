// One way to start a BullMQ worker on a declared queue (src/queue/queues.ts): the wait-time
// histogram and failure counter (svc_queue_job_wait_seconds, svc_queue_job_failures_total), the
// failed / stalled / error listeners with their log lines, and the teardown, wired once here
// instead of in every worker.
import { createRequire } from 'node:module';
import type { Job, Worker, WorkerOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Services } from '../services.js';
import type { QueueDef } from './queues.js';

// bullmq is loaded when a worker starts: flow validation and one-shot commands never need it.
const require = createRequire(import.meta.url);
let WorkerClass: typeof Worker | undefined;

export interface StartWorkerOptions<P = unknown> extends Pick<WorkerOptions, 'concurrency' | 'drainDelay' | 'lockDuration' | 'stalledInterval' | 'maxStalledCount'> {
  /** BullMQ key prefix; default services.queues.prefix. */
  prefix?: string;
  /** Logger of the worker's lines; default the module `svc::jobs`. */
  log?: Logger;
  /** Message of the line logged when a job fails (default 'job failed'). */
  failedMessage?: string;
  /** Fields of a failed job's log line besides queue and err (default {job: job.id}). */
  describe?: (job: Job<P>) => Record<string, unknown>;
  /** Called after a failure is counted and logged (an audit batch counts its dropped events). */
  onFailed?: (job: Job<P> | undefined, err: Error) => void;
}

/** Seconds from a job being queued (or due, when delayed) to a worker taking it. */
function waitSeconds(job: Job): number {
  return Math.max(0, Date.now() - (job.timestamp + (job.opts.delay ?? 0))) / 1000;
}

/**
 * Starts a worker on `def` running `processor` for each job. services.close() closes it (waiting
 * for the jobs in progress); a caller may close it earlier (close() is idempotent).
 */
export function startWorker<P>(services: Services, def: QueueDef<P>, processor: (job: Job<P>) => Promise<unknown>, opts: StartWorkerOptions<P> = {}): Worker<P> {
  const { prefix, log: logger, failedMessage, describe, onFailed, ...workerOpts } = opts;
  const log = logger ?? services.logging.module('svc::jobs');
  const queue = def.name;
  WorkerClass ??= (require('bullmq') as typeof import('bullmq')).Worker;
  const worker = new WorkerClass<P>(queue, async (job) => {
    services.metrics.jobWaitSeconds.observe({ queue }, waitSeconds(job));
    return processor(job);
  }, { connection: services.queues.connection(), prefix: prefix ?? services.queues.prefix, ...workerOpts });
  worker.on('failed', (job, err) => {
    services.metrics.jobFailures.inc({ queue });
    log.warn({ queue, ...(job ? (describe?.(job) ?? { job: job.id }) : {}), err: err.message }, failedMessage ?? 'job failed');
    onFailed?.(job, err);
  });
  worker.on('stalled', (jobId) => log.warn({ queue, job: jobId }, 'lease expired: job handed back'));
  worker.on('error', (err) => log.warn({ queue, err: err.message }, 'worker error'));
  // With Redis away a graceful close never ends: it waits for the jobs in progress to be recorded
  // and for its connections' QUIT, both queued until Redis returns. Closed then without waiting
  // (the jobs it held are handed back by the stalled check once Redis is back).
  const close = worker.close.bind(worker);
  worker.close = (force = false) => close(force || !services.queues.available());
  services.onClose(() => worker.close());
  return worker;
}
