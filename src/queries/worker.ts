// The `queries` job worker: runs QUEUED queries (engine.concurrency at once per replica), and two
// schedulers: the sweep that fails queries whose replica stopped, and result retention.
// The lease and reaper rules of task runs: the job lock lasts workflow.working_timeout_s, at most
// 30 s (BullMQ's default; it is renewed every half while the worker lives, so a query's lease
// never needs more), and BullMQ's stalled check runs every workflow.reaper_interval_secs.
// maxStalledCount 0: a query whose worker died is not run twice (it may have changed data); its
// job fails at the first stalled check after the lock expired and the query is recorded FAILED.
import type { Worker } from 'bullmq';
import type { Services } from '../services.js';
import { QUEUES, type QueryJob } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { queryService } from './index.js';

export const SWEEP_EVERY_MS = 60_000;
export const RETENTION_EVERY_MS = 3_600_000;

export async function startQueryWorker(services: Services, opts: { sweepEveryMs?: number; retentionEveryMs?: number } = {}): Promise<Worker<QueryJob>> {
  const log = services.logging.module('svc::queries::worker');
  const queries = queryService(services);
  const def = QUEUES.queries;
  const wf = services.config.workflow;
  const worker = startWorker<QueryJob>(services, def, async (job) => {
    if (job.name === 'sweep') return { failed: await queries.sweep() };
    if (job.name === 'retention') {
      const r = await queries.pruneResults();
      log.info(r, 'query result retention ran');
      return r;
    }
    return { state: await queries.runQueued(job.data.queryId!) };
  }, {
    concurrency: services.config.engine.concurrency, log, failedMessage: 'query job failed',
    lockDuration: Math.min(Math.max(1, wf.working_timeout_s), 30) * 1000, stalledInterval: Math.max(1, wf.reaper_interval_secs) * 1000, maxStalledCount: 0,
    describe: (job) => ({ job: job.id, name: job.name }),
    onFailed: (job) => {
      if (job?.name !== 'run' || !job.data.queryId) return;
      queries.failLost(job.data.queryId, 'the worker running this query stopped before it ended')
        .catch((e: Error) => log.error({ query: job.data.queryId, err: e.message }, 'recording a lost query as FAILED failed: the sweep retries'));
    },
  });
  const scheduled = { name: 'sweep', opts: def.scheduledJobOptions };
  await services.queues.schedule(def, 'sweep', opts.sweepEveryMs ?? SWEEP_EVERY_MS, scheduled);
  if (services.config.engine.results_retention_days > 0) {
    await services.queues.schedule(def, 'retention', opts.retentionEveryMs ?? RETENTION_EVERY_MS, { ...scheduled, name: 'retention' });
  } else {
    await services.queues.unschedule(def, 'retention');
    log.info('query result retention off (engine.results_retention_days = 0): results are kept for ever');
  }
  log.info({ concurrency: services.config.engine.concurrency }, 'query worker started');
  return worker;
}
