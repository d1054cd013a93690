// Housekeeping as BullMQ jobs: one queue, job schedulers for periodic work (each fires once per
// period across all replicas), processors in every `svc serve` process.
//   audit-retention   hourly: audit rows older than audit.retention_days (skipped when <= 0)
//   session-cleanup   hourly: sessions past their absolute lifetime
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Services } from '../services.js';
import { pruneAuditEvents } from '../audit/retention.js';

export const MAINTENANCE_QUEUE = 'maintenance';
const HOUR_MS = 3_600_000;

export interface MaintenanceLoop { queue: Queue; worker: Worker; close(): Promise<void> }

export function queuePrefix(): string {
  return process.env.SVC_QUEUE_PREFIX_FOR_TESTS ?? 'svc';
}

export async function startMaintenance(services: Services, opts: { prefix?: string; everyMs?: number } = {}): Promise<MaintenanceLoop> {
  const log = services.logging.module('svc::jobs');
  const connection = services.redis().duplicate() as unknown as ConnectionOptions;
  const prefix = opts.prefix ?? queuePrefix();
  const every = opts.everyMs ?? HOUR_MS;
  const queue = new Queue(MAINTENANCE_QUEUE, { connection, prefix });
  const days = services.config.audit.retention_days;
  if (days > 0) {
    await queue.upsertJobScheduler('audit-retention', { every }, { name: 'audit-retention', opts: { removeOnComplete: 100, removeOnFail: 100 } });
  } else {
    await queue.removeJobScheduler('audit-retention');
    log.info({ retention_days: days }, 'declined to schedule audit pruning: audit.retention_days is 0 or negative, audit rows are kept for ever');
  }
  await queue.upsertJobScheduler('session-cleanup', { every }, { name: 'session-cleanup', opts: { removeOnComplete: 100, removeOnFail: 100 } });

  const worker = new Worker(MAINTENANCE_QUEUE, async (job) => {
    switch (job.name) {
      case 'audit-retention': {
        const pruned = await pruneAuditEvents(services.db, services.clock, services.config.audit.retention_days);
        log.info({ pruned }, 'audit retention ran');
        return { pruned };
      }
      case 'session-cleanup':
        return { pruned: await services.sessions.pruneExpired() };
      default:
        throw new Error(`unknown maintenance job ${job.name}`);
    }
  }, { connection: services.redis().duplicate() as unknown as ConnectionOptions, prefix, concurrency: 1 });
  worker.on('failed', (job, err) => log.warn({ job: job?.name, err: err.message }, 'maintenance job failed'));
  return {
    queue, worker,
    async close() { await worker.close(); await queue.close(); },
  };
}
