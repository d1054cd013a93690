// The `audit` queue: AuditSink batches are handed over as jobs (one job per batch, job id = the
// batch's UUID) and a worker writes each batch in one INSERT, so an API process that dies loses
// nothing it already handed over. When Redis does not take a batch, the sink writes it directly
// (counted in svc_audit_events_direct_total). startMaintenance (maintenance.ts) starts both sides.
import { createRequire } from 'node:module';
import type { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Counter } from 'prom-client';
import type { Services } from '../services.js';
import { QUEUES, jobOptions } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { authzBatchStored, insertAuthzEvents, type AuditBatch, type AuditHandOver } from '../audit/sink.js';

// bullmq is loaded when the hand-over is made (the maintenance loop, after serve listens).
const require = createRequire(import.meta.url);

const HAND_OVER_TIMEOUT_MS = 3_000;
const SETTLE_MS = 2_000;

export interface AuditQueueHandOver extends AuditHandOver { queue: Queue; close(): Promise<void> }

function directCounter(services: Services): Counter {
  const name = 'svc_audit_events_direct_total';
  return (services.metrics.registry.getSingleMetric(name) as Counter | undefined)
    ?? new Counter({ name, help: 'authorization audit events written directly because the audit queue (Redis) did not take their batch', registers: [services.metrics.registry] });
}

/**
 * The sink's hand-over to the `audit` queue, on its own Redis connection that fails at once while
 * Redis is unreachable (no offline queue), so the sink falls back to a direct INSERT instead of
 * waiting. `settleMs` bounds how long flush() waits for the batches to be written; startup waits
 * at most `readyTimeoutMs` for the connection (batches handed over before it is up are written
 * directly).
 */
export async function createAuditHandOver(services: Services, opts: { prefix?: string; settleMs?: number; readyTimeoutMs?: number } = {}): Promise<AuditQueueHandOver> {
  const log = services.logging.module('svc::audit');
  const conn = new Redis(services.config.redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  // debug: the shared Redis connection reports the same outage, and a failed add is logged by the sink
  conn.on('error', (err) => log.debug({ err: err.message }, 'audit hand-over connection error: batches are written directly meanwhile'));
  await new Promise<void>((resolve) => {
    if (conn.status === 'ready') return resolve();
    const t = setTimeout(resolve, opts.readyTimeoutMs ?? 5_000);
    t.unref();
    conn.once('ready', () => { clearTimeout(t); resolve(); });
  });
  const { Queue: QueueClass } = require('bullmq') as typeof import('bullmq');
  const queue: Queue<AuditBatch> = new QueueClass<AuditBatch>(QUEUES.audit.name, { connection: conn, prefix: opts.prefix ?? services.queues.prefix });
  queue.on('error', (err) => log.debug({ err: err.message }, 'audit queue error: batches are written directly meanwhile'));
  const counter = directCounter(services);
  const settleMs = opts.settleMs ?? SETTLE_MS;
  return {
    queue,
    async add(batch) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          queue.add('batch', batch, jobOptions(QUEUES.audit, { jobId: batch.id })),
          new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`the audit queue did not answer within ${HAND_OVER_TIMEOUT_MS} ms`)), HAND_OVER_TIMEOUT_MS); }),
        ]);
      } finally { clearTimeout(timer); }
    },
    async settle(ids) {
      const deadline = Date.now() + settleMs;
      let open = ids;
      while (open.length > 0 && Date.now() < deadline) {
        const states = await Promise.all(open.map((id) => queue.getJobState(id).catch((err: Error) => {
          log.debug({ job: id, err: err.message }, 'audit batch state not read: flush() stops waiting for it');
          return 'unknown';
        })));
        open = open.filter((_, i) => ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'].includes(states[i]));
        if (open.length > 0) await new Promise((r) => setTimeout(r, 20));
      }
    },
    fellBack(n) { counter.inc(n); },
    async close() {
      await queue.close().catch((err: Error) => log.warn({ err: err.message }, 'shutdown: closing the audit hand-over queue failed'));
      await conn.quit().catch(() => conn.disconnect());
    },
  };
}

/**
 * The worker writing queued audit batches, one INSERT per batch. A batch is written once per
 * delivery; when a delivery is a repeat (the worker died after COMMIT and before BullMQ recorded
 * the completion, or a retry after an error), the batch is skipped if its first and last events
 * are already stored.
 */
export function startAuditWorker(services: Services, opts: { prefix?: string } = {}): Worker<AuditBatch> {
  const log = services.logging.module('svc::audit');
  // concurrency 1: batches are written in order within a process
  return startWorker(services, QUEUES.audit, async (job) => {
    const events = job.data.events ?? [];
    if (job.attemptsStarted > 1 && await authzBatchStored(services.db, events)) return { written: 0, repeated: true };
    await insertAuthzEvents(services.db, events);
    services.metrics.auditWritten.inc(events.length);
    return { written: events.length };
  }, {
    prefix: opts.prefix, log, concurrency: 1, failedMessage: 'audit batch could not be written', describe: (job) => ({ job: job.id }),
    onFailed: (job, _err) => { if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) services.metrics.auditDropped.inc(job.data.events?.length ?? 0); },
  });
}
