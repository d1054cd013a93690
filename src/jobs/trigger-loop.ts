// The trigger loop (workflow.scheduler_enabled): the worker of the `triggers` queue and its
// `trigger-tick` job scheduler. What a tick and an `execution-ended` job do is decided in
// src/workflows/triggers.ts; this module only runs them.
import type { Worker } from 'bullmq';
import type { Services } from '../services.js';
import { QUEUES, type TriggerJob } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { processExecutionEnded, processTriggerTick } from '../workflows/triggers.js';

export interface TriggerLoop { worker: Worker<TriggerJob>; close(): Promise<void> }

export async function startTriggerLoop(services: Services): Promise<TriggerLoop> {
  const log = services.logging.module('svc::workflows::triggers');
  const cfg = services.config.workflow;
  const everyMs = Math.max(1, cfg.trigger_interval_secs) * 1000;
  await services.queues.schedule(QUEUES.triggers, 'trigger-tick', everyMs, { name: 'trigger-tick', opts: QUEUES.triggers.scheduledJobOptions });
  const worker = startWorker(services, QUEUES.triggers, async (job) => {
    switch (job.name) {
      case 'trigger-tick': return processTriggerTick(services);
      case 'execution-ended': {
        // one execution ({executionId}) or several that ended together ({executionIds}); each is
        // idempotent, so a retried job re-evaluates the ones it had done and starts nothing twice
        if (!Array.isArray(job.data.executionIds)) return processExecutionEnded(services, String(job.data.executionId ?? ''));
        const results = [];
        for (const id of job.data.executionIds.slice(0, 1_000)) results.push(await processExecutionEnded(services, String(id)));
        return { fired: results.flatMap((r) => r.fired), skipped: results.reduce((n, r) => n + r.skipped, 0) };
      }
      default: throw new Error(`unknown trigger job ${job.name}`);
    }
  }, { log, concurrency: 4, failedMessage: 'trigger job failed', describe: (job) => ({ job: job.name, id: job.id }) });
  log.info({ every_ms: everyMs }, 'trigger loop started');
  return { worker, async close() { await worker.close(); } };
}
