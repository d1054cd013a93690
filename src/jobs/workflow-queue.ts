// The WorkflowQueue port (src/workflows/ports.ts) on BullMQ: the `executions`, `task-runs`,
// `instant-runs` and `triggers` queues of src/queue/queues.ts, with their declared retention.
import type { WorkflowQueue } from '../workflows/ports.js';
import type { JobsOptions } from 'bullmq';
import { QUEUES, jobOptions, type InstantRunsBatch, type Queues, type TaskRunJobData } from '../queue/queues.js';
import { sameTurn } from '../util/same-turn.js';

/** At most this many executions in one `execution-ended` job (bounds the job's size). */
const ENDED_BATCH_MAX = 200;
/** At most this many leaf jobs in one addBulk made of several callers' leaves. */
const DISPATCH_BATCH_MAX = 500;
/** At most this many instant attempts in one `runs` job (bounds the job, and the runs one worker takes at once). */
export const INSTANT_BATCH_MAX = 50;

type RunJob = { name: string; data: TaskRunJobData; opts: JobsOptions };
type LeafJob = RunJob | { name: 'runs'; data: InstantRunsBatch; opts: JobsOptions };

/**
 * The jobs of instant attempts queued together: attempts due now travel in `runs` jobs of up to
 * INSTANT_BATCH_MAX, so a burst costs one add, one fetch and one completion per batch instead of
 * per attempt (docs/workflows.md "Instant task runs"). A delayed attempt (a retry), and one left
 * alone, keep their own job and id.
 */
function instantJobs(jobs: RunJob[]): LeafJob[] {
  const due = jobs.filter((j) => !j.opts.delay);
  const out: LeafJob[] = jobs.filter((j) => j.opts.delay);
  for (let i = 0; i < due.length; i += INSTANT_BATCH_MAX) {
    const chunk = due.slice(i, i + INSTANT_BATCH_MAX);
    if (chunk.length === 1) out.push(chunk[0]);
    else out.push({ name: 'runs', data: { runs: chunk.map((j) => j.data) }, opts: jobOptions(QUEUES.instantRuns) });
  }
  return out;
}

export function bullWorkflowQueue(queues: Queues): WorkflowQueue {
  // Ends announced in the same turn of the event loop (steps of several executions finishing
  // together) share one `execution-ended` job: one add instead of one per execution (issue 11).
  // One end alone is announced exactly as before (its own job id, `executionId`).
  const announce = sameTurn<string>(async (ids) => {
    const q = queues.get(QUEUES.triggers);
    // jobId: one announcement per execution, however many steps see it end
    if (ids.length === 1) await q.add('execution-ended', { executionId: ids[0] }, jobOptions(QUEUES.triggers, { jobId: `${ids[0]}-ended` }));
    else await q.add('execution-ended', { executionIds: ids }, jobOptions(QUEUES.triggers));
  }, ENDED_BATCH_MAX);
  // Leaves queued in the same turn (executions created or stepping together) go in one addBulk:
  // the same jobs, ids and options, one round trip to Redis instead of one per caller.
  // Instant runs (log, output, fail) go to their own queue, whose workers take many at once: they
  // hold no lease and no container, so they need not wait for one of the `batch` slots.
  const queueOf = (d: TaskRunJobData) => (d.instant === true ? QUEUES.instantRuns : QUEUES.taskRuns);
  const queueLeaves = sameTurn<RunJob>(async (jobs) => {
    await Promise.all([QUEUES.instantRuns, QUEUES.taskRuns].map(async (def) => {
      const theirs = jobs.filter((j) => queueOf(j.data) === def);
      const mine = def === QUEUES.instantRuns ? instantJobs(theirs) : theirs;
      const q = queues.get(def);
      if (mine.length === 1) await q.add(mine[0].name, mine[0].data, mine[0].opts);
      else if (mine.length > 1) await q.addBulk(mine);
    }));
  }, DISPATCH_BATCH_MAX);
  return {
    async advance(executionId, reason, created, requeued) {
      await queues.get(QUEUES.executions).add(reason, { executionId, created, ...(requeued ? { requeued } : {}) }, jobOptions(QUEUES.executions, { jobId: reason === 'start' ? `${executionId}-start` : undefined }));
    },
    async dispatch(leaves) {
      if (leaves.length === 0) return;
      await queueLeaves(leaves.map((l) => {
        const data: TaskRunJobData = { taskRunId: l.taskRunId, executionId: l.executionId, attempt: l.attempt + 1, instant: l.instant, ...(l.requeued ? { requeued: l.requeued } : {}) };
        return { name: 'run', data, opts: jobOptions(queueOf(data), { jobId: `${l.taskRunId}-${l.attempt + 1}`, delay: l.delayMs }) };
      }));
    },
    ended(executionId) {
      return announce([executionId]);
    },
    available: () => queues.available(),
  };
}
