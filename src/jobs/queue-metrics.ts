// Queue depth in /metrics: one gauge, `svc_queue_jobs{queue, state}`, read from Redis when
// Prometheus scrapes (collect()), for every queue in QUEUE and the states waiting, active, delayed,
// prioritized, failed and completed. Job latency (svc_queue_job_wait_seconds) and failures
// (svc_queue_job_failures_total) are observed by the workers themselves (src/metrics.ts).
// A scrape never waits on an unreachable Redis for long: after COLLECT_TIMEOUT_MS the gauge keeps
// its previous values and svc_queue_metrics_up reads 0.
import { Gauge } from 'prom-client';
import type { Services } from '../services.js';
import { QUEUE } from '../queue/queues.js';

export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;
const COLLECT_TIMEOUT_MS = 1_000;
const JOBS = 'svc_queue_jobs';
const UP = 'svc_queue_metrics_up';

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms); timer.unref(); }),
  ]);
}

/** Registers the queue gauges on services.metrics.registry; calling it again does nothing. */
export function registerQueueMetrics(services: Services): void {
  const registry = services.metrics.registry;
  if (registry.getSingleMetric(JOBS)) return;
  // One Redis read per scrape, shared by both gauges (the registry collects them concurrently).
  let inFlight: Promise<Array<readonly [string, Record<string, number>]> | null> | null = null;
  const log = services.logging.module('svc::jobs');
  const read = () => (inFlight ??= withTimeout(Promise.all(Object.values(QUEUE).map(async (name) => [name, await services.queues.get(name).getJobCounts(...QUEUE_STATES)] as const)), COLLECT_TIMEOUT_MS)
    .catch((err: Error) => {
      // debug: every scrape while Redis is down would repeat it; svc_queue_metrics_up says it
      log.debug({ err: err.message }, 'queue depths not read: the gauges keep their previous values');
      return null;
    })
    .finally(() => { setImmediate(() => { inFlight = null; }); }));
  new Gauge({
    name: JOBS,
    help: 'jobs per BullMQ queue and state (waiting, active, delayed, prioritized, failed, completed)',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      const counts = await read();
      if (!counts) return; // keep the previous values
      for (const [queue, c] of counts) for (const state of QUEUE_STATES) this.set({ queue, state }, c[state] ?? 0);
    },
  });
  new Gauge({
    name: UP,
    help: '1 when the last scrape read the queue depths from Redis, 0 when Redis did not answer in time',
    registers: [registry],
    async collect() { this.set((await read()) ? 1 : 0); },
  });
}
