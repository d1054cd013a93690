// The WorkflowQueue port (src/workflows/ports.ts) on BullMQ: the `executions`, `task-runs` and
// `triggers` queues of src/jobs/queues.ts, with their declared retention.
import type { WorkflowQueue } from '../workflows/ports.js';
import { QUEUES, jobOptions, type Queues } from './queues.js';

export function bullWorkflowQueue(queues: Queues): WorkflowQueue {
  return {
    async advance(executionId, reason, created) {
      await queues.get(QUEUES.executions).add(reason, { executionId, created }, jobOptions(QUEUES.executions, { jobId: reason === 'start' ? `${executionId}-start` : undefined }));
    },
    async dispatch(leaves) {
      if (leaves.length === 0) return;
      const jobs = leaves.map((l) => ({
        name: 'run',
        data: { taskRunId: l.taskRunId, executionId: l.executionId, attempt: l.attempt + 1, instant: l.instant },
        opts: jobOptions(QUEUES.taskRuns, { jobId: `${l.taskRunId}-${l.attempt + 1}`, delay: l.delayMs }),
      }));
      const q = queues.get(QUEUES.taskRuns);
      if (jobs.length === 1) await q.add(jobs[0].name, jobs[0].data, jobs[0].opts);
      else await q.addBulk(jobs);
    },
    async ended(executionId) {
      // jobId: one announcement per execution, however many steps see it end
      await queues.get(QUEUES.triggers).add('execution-ended', { executionId }, jobOptions(QUEUES.triggers, { jobId: `${executionId}-ended` }));
    },
  };
}
