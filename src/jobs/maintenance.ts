// Housekeeping as BullMQ jobs on the `maintenance` queue: job schedulers for periodic work (each
// fires once per period across all replicas), processors in every `svc serve` process.
//   audit-retention            hourly: audit rows older than audit.retention_days
//   access-log-retention       hourly: Data API access-log rows older than data_api.access_log_retention_days
//   task-log-retention         hourly: task log lines older than workflow.log_retention_days
//   execution-file-retention   hourly: files of executions that ended more than workflow.storage_retention_days ago
//   kept-container-retention   hourly: containers/pods kept with taskRunner.delete false, after
//                              workflow.kept_container_retention_days (only with a container runner)
//   session-cleanup            hourly: sessions past their absolute lifetime
//   idempotency-key-retention  hourly: Idempotency-Keys of execution starts past their 24 h
// A retention of 0 (or, for audit, negative) keeps the rows for ever: its scheduler is removed and
// the server logs that it declined to schedule the pruning.
//
// With opts.audit (the default), the loop also runs the `audit` queue (src/jobs/audit-queue.ts).
import { createRequire } from 'node:module';
import type { Queue, Worker } from 'bullmq';
import type { Services } from '../services.js';
import { QUEUE, QUEUES } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { pruneAccessLog, pruneAuditEvents, pruneTaskLogs } from '../audit/retention.js';
import { createAuditHandOver, startAuditWorker, type AuditQueueHandOver } from './audit-queue.js';
import { deleteExecutionFiles } from '../workflows/files.js';
import { pruneIdempotencyKeys } from '../workflows/executions.js';
import { createContainerRunner, keptContainerCutoff, type ContainerRunner } from '../runners/index.js';
import { registerQueueMetrics } from './queue-metrics.js';

// bullmq (about 270 modules with its own dependencies) is loaded when the loop starts, which `svc
// serve` does after it listens: an import here loaded it before.
const require = createRequire(import.meta.url);

export const MAINTENANCE_QUEUE = QUEUE.maintenance;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

export type MaintenanceJob =
  | 'audit-retention' | 'access-log-retention' | 'task-log-retention' | 'execution-file-retention'
  | 'kept-container-retention' | 'session-cleanup' | 'idempotency-key-retention';

export interface MaintenanceLoop {
  queue: Queue;
  worker: Worker;
  /** Worker of the `audit` queue (null with opts.audit false). */
  auditWorker: Worker | null;
  close(): Promise<void>;
}

export interface MaintenanceOptions {
  /** BullMQ key prefix; default services.queues.prefix. */
  prefix?: string;
  /** Period of the retention schedulers (default one hour). */
  everyMs?: number;
  /** Runner for kept-container removal; default: created from workflow.container_runner when not `none`. */
  runner?: ContainerRunner | null;
  /** Hand audit batches to the `audit` queue and run its worker (default true). */
  audit?: boolean;
}

export interface MaintenanceDeps { runner: () => Promise<ContainerRunner | null> }

/** Runs one maintenance job now (the processor of the `maintenance` queue; tests call it directly). */
export async function runMaintenanceJob(services: Services, name: string, deps: MaintenanceDeps): Promise<Record<string, unknown>> {
  const log = services.logging.module('svc::jobs::maintenance');
  const cfg = services.config;
  switch (name) {
    case 'audit-retention': {
      const pruned = await pruneAuditEvents(services.db, services.clock, cfg.audit.retention_days);
      log.info({ pruned }, 'audit retention ran');
      return { pruned };
    }
    case 'access-log-retention': {
      const pruned = await pruneAccessLog(services.db, services.clock, cfg.data_api.access_log_retention_days);
      log.info({ pruned }, 'Data API access-log retention ran');
      return { pruned };
    }
    case 'task-log-retention': {
      const pruned = await pruneTaskLogs(services.db, services.clock, cfg.workflow.log_retention_days);
      log.info({ pruned }, 'task log retention ran');
      return { pruned };
    }
    case 'execution-file-retention': {
      const r = await pruneExecutionFiles(services, cfg.workflow.storage_retention_days);
      log.info(r, 'execution file retention ran');
      return { ...r };
    }
    case 'kept-container-retention': {
      const cutoff = keptContainerCutoff(cfg, services.clock.now());
      const runner = cutoff ? await deps.runner() : null;
      if (!cutoff || !runner) return { removed: 0 };
      const removed = await runner.removeKept(cutoff);
      log.info({ removed, runner: runner.kind, older_than: cutoff.toISOString() }, 'kept container retention ran');
      return { removed };
    }
    case 'session-cleanup':
      return { pruned: await services.sessions.pruneExpired() };
    case 'idempotency-key-retention':
      return { pruned: await pruneIdempotencyKeys(services.db, services.clock.now()) };
    default:
      throw new Error(`unknown maintenance job ${name}`);
  }
}

/**
 * Deletes the files of executions that ended more than `days` ago (their object-store prefix) and
 * marks them with files_pruned_at, `batch` executions at a time until none is left.
 */
export async function pruneExecutionFiles(services: Services, days: number, batch = 200): Promise<{ executions: number; objects: number }> {
  if (!(days > 0)) return { executions: 0, objects: 0 };
  const cutoff = new Date(services.clock.now().getTime() - days * DAY_MS);
  let executions = 0; let objects = 0;
  for (;;) {
    const rows = await services.db.selectFrom('executions').select(['id', 'workspace_id'])
      .where('files_pruned_at', 'is', null).where('ended_at', 'is not', null).where('ended_at', '<', cutoff)
      .orderBy('ended_at').limit(batch).execute();
    for (const r of rows) {
      objects += await deleteExecutionFiles(services, r.workspace_id, r.id);
      await services.db.updateTable('executions').set({ files_pruned_at: services.clock.now() }).where('id', '=', r.id).execute();
      executions++;
    }
    if (rows.length < batch) return { executions, objects };
  }
}

interface Schedule { name: MaintenanceJob; enabled: boolean; declined?: () => void }

export async function startMaintenance(services: Services, opts: MaintenanceOptions = {}): Promise<MaintenanceLoop> {
  const log = services.logging.module('svc::jobs');
  const cfg = services.config;
  const prefix = opts.prefix ?? services.queues.prefix;
  const every = opts.everyMs ?? HOUR_MS;
  const sharedQueues = prefix === services.queues.prefix;
  const queue = sharedQueues ? services.queues.get(QUEUE.maintenance) : new (require('bullmq') as typeof import('bullmq')).Queue(QUEUE.maintenance, { connection: services.queues.connection(), prefix });
  registerQueueMetrics(services);

  let runner: Promise<ContainerRunner | null> | undefined;
  const deps: MaintenanceDeps = {
    runner: () => (runner ??= opts.runner !== undefined ? Promise.resolve(opts.runner)
      : cfg.workflow.container_runner === 'none' ? Promise.resolve(null)
      : createContainerRunner(cfg, { log: services.logging.module('svc::runners'), clock: services.clock })),
  };
  const hasRunner = opts.runner !== undefined ? opts.runner !== null : cfg.workflow.container_runner !== 'none';

  const schedules: Schedule[] = [
    { name: 'audit-retention', enabled: cfg.audit.retention_days > 0,
      declined: () => log.info({ retention_days: cfg.audit.retention_days }, 'declined to schedule audit pruning: audit.retention_days is 0 or negative, audit rows are kept for ever') },
    { name: 'access-log-retention', enabled: cfg.data_api.access_log_retention_days > 0,
      declined: () => log.info({ access_log_retention_days: cfg.data_api.access_log_retention_days }, 'declined to schedule Data API access-log pruning: data_api.access_log_retention_days is 0, access-log rows are kept for ever') },
    { name: 'task-log-retention', enabled: cfg.workflow.log_retention_days > 0,
      declined: () => log.info({ log_retention_days: cfg.workflow.log_retention_days }, 'declined to schedule task log pruning: workflow.log_retention_days is 0, task log lines are kept for ever') },
    { name: 'execution-file-retention', enabled: cfg.workflow.storage_retention_days > 0,
      declined: () => log.info({ storage_retention_days: cfg.workflow.storage_retention_days }, 'declined to schedule execution file pruning: workflow.storage_retention_days is 0, execution files are kept for ever') },
    { name: 'kept-container-retention', enabled: hasRunner && cfg.workflow.kept_container_retention_days > 0,
      declined: hasRunner ? () => log.info({ kept_container_retention_days: cfg.workflow.kept_container_retention_days }, 'declined to schedule kept-container removal: workflow.kept_container_retention_days is 0, kept containers stay until removed by hand') : undefined },
    { name: 'session-cleanup', enabled: true },
    { name: 'idempotency-key-retention', enabled: true },
  ];
  for (const s of schedules) {
    if (s.enabled) {
      const template = { name: s.name, opts: QUEUES.maintenance.scheduledJobOptions };
      // on the shared queues the scheduler is remembered and asserted again after a Redis data loss
      if (sharedQueues) await services.queues.schedule(QUEUES.maintenance, s.name, every, template);
      else await queue.upsertJobScheduler(s.name, { every }, template);
    } else {
      if (sharedQueues) await services.queues.unschedule(QUEUES.maintenance, s.name);
      else await queue.removeJobScheduler(s.name);
      s.declined?.();
    }
  }

  const worker = startWorker(services, QUEUES.maintenance, (job) => runMaintenanceJob(services, job.name, deps), {
    prefix, log, concurrency: 1, failedMessage: 'maintenance job failed', describe: (job) => ({ job: job.name }),
  });

  let audit: { worker: Worker; handOver: AuditQueueHandOver } | null = null;
  if (opts.audit !== false) {
    const handOver = await createAuditHandOver(services, { prefix });
    const auditWorker = startAuditWorker(services, { prefix });
    services.audit.attachHandOver(handOver);
    audit = { worker: auditWorker, handOver };
  }

  return {
    queue, worker, auditWorker: audit?.worker ?? null,
    async close() {
      if (audit) {
        // Hand over what is queued in memory while this process's worker still runs, then write
        // directly again (services.close() stops the sink after the queues are gone).
        await services.audit.flush().catch((err: Error) => log.warn({ err: err.message }, 'shutdown: handing over the queued audit events failed; the sink writes them directly'));
        services.audit.attachHandOver(null);
        await audit.worker.close();
        await audit.handOver.close();
      }
      await worker.close();
      if (!sharedQueues) await queue.close();
    },
  };
}
