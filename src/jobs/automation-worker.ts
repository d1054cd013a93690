// Workers of alerts and reports (docs/alerts.md): the `automation` queue carries the schedule tick
// and one `evaluate` job per claimed slot or manual run; `automation-deliveries` one job per
// notification and recipient, retried with exponential back-off (the queue's attempts and backoff).
// The tick's job scheduler exists only while automation.enabled: with it off, alerts and reports
// can still be run by hand and deliveries still go out, but nothing fires on its own.
import type { Worker } from 'bullmq';
import type { Services } from '../services.js';
import { QUEUES, type AutomationJob, type DeliveryJob } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { processAutomationTick } from '../automation/ticker.js';
import { evaluate } from '../automation/evaluate.js';
import { attemptDelivery } from '../automation/delivery.js';

export const TICK_JOB = 'automation-tick';

export interface AutomationWorker { automation: Worker<AutomationJob>; deliveries: Worker<DeliveryJob>; close(): Promise<void> }

export async function startAutomationWorker(services: Services): Promise<AutomationWorker> {
  const log = services.logging.module('svc::automation');
  const cfg = services.config.automation;

  const automation = startWorker(services, QUEUES.automation, async (job) => {
    if (job.name === TICK_JOB) return processAutomationTick(services);
    if (job.name === 'evaluate') {
      const ev = await evaluate(services, String(job.data.automationId), { scheduledFor: new Date(String(job.data.slot)), manual: job.data.manual === true, evaluationId: job.data.evaluationId });
      // no evaluation is a failed job, never a completed one with nothing to show
      if (!ev) throw new Error(`alert or report ${String(job.data.automationId)} does not exist (deleted before it ran)`);
      return { evaluation: ev.id, outcome: ev.outcome };
    }
    throw new Error(`unknown automation job ${job.name}`);
  }, { log, concurrency: 4 });

  const deliveries = startWorker(services, QUEUES.deliveries, async (job) => {
    const final = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const r = await attemptDelivery(services, job.data.deliveryId, final);
    // A retry is BullMQ's: failing the job schedules the next attempt after the back-off.
    if (r.retry) throw new Error(r.error ?? 'not delivered');
    return { status: r.status, http_status: r.httpStatus };
  }, { log, concurrency: 8, failedMessage: 'delivery attempt failed' });

  if (cfg.enabled) {
    const everyMs = Math.max(1, cfg.tick_interval_secs) * 1000;
    await services.queues.schedule(QUEUES.automation, TICK_JOB, everyMs, { name: TICK_JOB, opts: QUEUES.automation.scheduledJobOptions });
    log.info({ every_ms: everyMs }, 'alert and report ticker started');
  } else {
    await services.queues.unschedule(QUEUES.automation, TICK_JOB);
    log.info('alert and report ticker off (automation.enabled = false): schedules do not fire');
  }
  return { automation, deliveries, async close() { await Promise.all([automation.close(), deliveries.close()]); } };
}

