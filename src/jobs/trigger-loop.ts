// The trigger loop (workflow.scheduler_enabled): the worker of the `triggers` queue and its
// `trigger-tick` job scheduler. What a tick and an `execution-ended` job do is decided in
// src/workflows/triggers.ts; this module only runs them.
import type { Worker } from 'bullmq';
import type { Services } from '../services.js';
import { QUEUES, type TriggerJob } from './queues.js';
import { startWorker } from './worker.js';
import { processExecutionEnded, processTriggerTick } from '../workflows/triggers.js';

export interface TriggerLoop { worker: Worker<TriggerJob>; close(): Promise<void> }

export async function startTriggerLoop(services: Services): Promise<TriggerLoop> {
  const log = services.logging.module('svc::workflows::triggers');
  const cfg = services.config.workflow;
  const queue = services.queues.get(QUEUES.triggers);
  const everyMs = Math.max(1, cfg.trigger_interval_secs) * 1000;
  await queue.upsertJobScheduler('trigger-tick', { every: everyMs }, { name: 'trigger-tick', opts: QUEUES.triggers.scheduledJobOptions });
  const worker = startWorker(services, QUEUES.triggers, async (job) => {
    switch (job.name) {
      case 'trigger-tick': return processTriggerTick(services);
      case 'execution-ended': return processExecutionEnded(services, String(job.data.executionId ?? ''));
      default: throw new Error(`unknown trigger job ${job.name}`);
    }
  }, { log, concurrency: 4, failedMessage: 'trigger job failed', describe: (job) => ({ job: job.name, id: job.id }) });
  log.info({ every_ms: everyMs }, 'trigger loop started');
  return { worker, async close() { await worker.close(); } };
}
