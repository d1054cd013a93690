// The engines worker on the `engines` queue, started by `svc serve` when the resolved provisioner
// is cluster or local_container. Queue semantics carry the task-run rules:
//   lease  -> the job lock (lockDuration = workflow.working_timeout_s) beside the engine's
//             lease_until, renewed while the transition runs
//   reaper -> the stalled check every workflow.reaper_interval_secs, plus a sweep job that queues
//             engines whose transition lost its worker (lease free or expired)
import type { Services } from '../services.js';
import { QUEUES } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { runEngineJob, sweepEngines, leaseMs } from '../engines/transition.js';
import type { EngineProvisioner } from '../engines/provisioner.js';
import { reconcileEngines } from '../engines/reconcile.js';

export interface EngineWorker { close(): Promise<void> }

export async function startEngineWorker(services: Services, provisioner: EngineProvisioner): Promise<EngineWorker> {
  const log = services.logging.module('svc::jobs::engines');
  const reaperMs = Math.max(1, services.config.workflow.reaper_interval_secs) * 1000;
  const worker = startWorker(services, QUEUES.engines, async (job) => {
    if (job.name === 'sweep') return { swept: await sweepEngines(services), ...(await reconcileEngines(services, provisioner)) };
    return runEngineJob(services, provisioner, job.data);
  }, {
    log, concurrency: 4, lockDuration: leaseMs(services), stalledInterval: reaperMs, maxStalledCount: 10,
    describe: (job) => ({ job: job.id, engine: job.data.engineId }), failedMessage: 'engine job failed',
  });
  await services.queues.schedule(QUEUES.engines, 'sweep', reaperMs, { name: 'sweep', data: { engineId: '' }, opts: QUEUES.engines.scheduledJobOptions });
  log.info({ provisioner: provisioner.kind }, 'engine worker started');
  return {
    async close() {
      await worker.close();
      await provisioner.close?.();
    },
  };
}
