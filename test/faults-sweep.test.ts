// Issue 26, point 1, rule by rule: the sweep ends or re-queues, exactly once, every execution and
// task run whose job is gone, failed or finished without recording an outcome (real PostgreSQL
// and Redis; jobs are failed the way BullMQ fails them when their attempts run out).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Job } from 'bullmq';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, saveYaml, waitForEnd, type Admin } from './helpers/workflow.js';
import { createExecution } from '../src/workflows/executions.js';
import { advance, stepContext } from '../src/workflows/orchestrator.js';
import { startWorkflowWorker, sweep, SWEEP_REQUEUES_MAX } from '../src/jobs/workflow-worker.js';
import { QUEUE } from '../src/queue/queues.js';

const NS = 'sweep';
let t: TestApp; let admin: Admin;
before(async () => {
  t = await startTestApp({ SVC_WORKFLOW__WORKING_TIMEOUT_S: '60', SVC_WORKFLOW__REAPER_INTERVAL_SECS: '1' });
  admin = await signInAdmin(t);
  await saveYaml(t, admin, `id: nap\nnamespace: ${NS}\ntasks:\n  - id: s\n    type: sleep\n    duration: PT0S\n`);
});
after(async () => { await t.close(); });

const start = async () => (await createExecution(t.services, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'nap', inputs: {}, trigger: { type: 'api', user: 'test' } })).id;

/** Takes the next waiting job of a queue and fails it for good, as BullMQ does when its last attempt throws. */
async function failNext(queue: string): Promise<Job> {
  const { Worker, UnrecoverableError } = await import('bullmq');
  const w = new Worker(queue, null, { connection: t.services.queues.connection(), prefix: t.services.queues.prefix });
  try {
    const job = await w.getNextJob('faults-test');
    assert.ok(job, `a waiting job on ${queue}`);
    // its last attempt: BullMQ fails it for good, with no retry left
    await job.moveToFailed(new UnrecoverableError('connect ECONNREFUSED 127.0.0.1:5432'), 'faults-test');
    assert.equal(await job.getState(), 'failed');
    return job;
  } finally {
    await w.close();
  }
}

const runOf = (executionId: string) => t.services.db.selectFrom('task_runs').selectAll().where('execution_id', '=', executionId).executeTakeFirstOrThrow();
const later = (secs: number) => t.clock.advance(secs * 1000);

test('a start job that failed for good is queued again, once', async () => {
  const id = await start();
  const job = await failNext(QUEUE.executions);
  assert.equal(job.id, `${id}-start`);
  later(60);
  const first = await sweep(t.services);
  assert.equal(first.starts, 1);
  assert.equal(await (await t.services.queues.get(QUEUE.executions).getJob(`${id}-start`))!.getState(), 'waiting');
  assert.equal((await sweep(t.services)).starts, 0, 'its job is waiting now: not queued twice');
  // out of the way of the next tests' sweeps
  await t.services.queues.get(QUEUE.executions).obliterate({ force: true });
  await t.services.db.deleteFrom('executions').where('id', '=', id).execute();
});

test('a start that fails every time is queued again SWEEP_REQUEUES_MAX times, then the execution fails with a reason, once', async () => {
  const id = await start();
  for (let n = 1; n <= SWEEP_REQUEUES_MAX; n++) {
    await failNext(QUEUE.executions);
    later(60);
    const swept = await sweep(t.services);
    assert.deepEqual([swept.starts, swept.unstartable], [1, 0], `queued again, time ${n}`);
    assert.equal((await t.services.queues.get(QUEUE.executions).getJob(`${id}-start`))!.data.requeued, n);
  }
  await failNext(QUEUE.executions);
  later(60);
  const last = await sweep(t.services);
  assert.deepEqual([last.starts, last.unstartable], [0, 1]);
  const e = await t.services.db.selectFrom('executions').select(['state', 'error', 'ended_at']).where('id', '=', id).executeTakeFirstOrThrow();
  assert.equal(e.state, 'FAILED');
  assert.equal(e.error, `it could not be started: its start failed ${SWEEP_REQUEUES_MAX + 1} times (the server log names the error)`);
  assert.ok(e.ended_at);
  assert.equal(await t.services.queues.get(QUEUE.executions).getJob(`${id}-start`), undefined, 'its failed job is removed, nothing queued');
  assert.deepEqual([(await sweep(t.services)).unstartable, (await sweep(t.services)).starts], [0, 0], 'ended: left alone');
  await t.services.queues.get(QUEUE.executions).obliterate({ force: true });
  await t.services.queues.get(QUEUE.triggers).obliterate({ force: true });
  await t.services.db.deleteFrom('executions').where('id', '=', id).execute();
});

test('a QUEUED run whose job fails every time is queued again SWEEP_REQUEUES_MAX times, then it fails with its execution, with a reason, once', async () => {
  const id = await start();
  await t.services.queues.get(QUEUE.executions).obliterate({ force: true });
  await advance(t.services, stepContext(t.services.db), id);
  const run = await runOf(id);
  for (let n = 1; n <= SWEEP_REQUEUES_MAX; n++) {
    await failNext(QUEUE.taskRuns);
    later(60);
    const swept = await sweep(t.services);
    assert.deepEqual([swept.leaves, swept.unrunnable], [1, 0], `queued again, time ${n}`);
    assert.equal((await t.services.queues.get(QUEUE.taskRuns).getJob(`${run.id}-1`))!.data.requeued, n);
  }
  await failNext(QUEUE.taskRuns);
  later(60);
  const last = await sweep(t.services);
  assert.deepEqual([last.leaves, last.unrunnable], [0, 1]);
  const reason = `task s could not be run: its job failed ${SWEEP_REQUEUES_MAX + 1} times (the server log names the error)`;
  const e = await t.services.db.selectFrom('executions').select(['state', 'error']).where('id', '=', id).executeTakeFirstOrThrow();
  assert.deepEqual([e.state, e.error], ['FAILED', reason]);
  const r = await runOf(id);
  assert.deepEqual([r.state, r.error, !!r.ended_at], ['FAILED', reason, true]);
  assert.equal(await t.services.queues.get(QUEUE.taskRuns).getJob(`${run.id}-1`), undefined, 'its failed job is removed, nothing queued');
  const again = await sweep(t.services);
  assert.deepEqual([again.leaves, again.unrunnable], [0, 0], 'ended: left alone');
  await t.services.queues.get(QUEUE.triggers).obliterate({ force: true });
});

test('a QUEUED run whose job failed is queued again; a RUNNING run whose job failed is handed back, once; the execution then ends once', async () => {
  const id = await start();
  await t.services.queues.get(QUEUE.executions).obliterate({ force: true });
  await advance(t.services, stepContext(t.services.db), id);
  const run = await runOf(id);
  assert.equal(run.state, 'QUEUED');

  // QUEUED, its job failed: queued again under the same id
  const failed = await failNext(QUEUE.taskRuns);
  assert.equal(failed.id, `${run.id}-1`);
  later(60);
  assert.equal((await sweep(t.services)).leaves, 1);
  assert.equal(await (await t.services.queues.get(QUEUE.taskRuns).getJob(`${run.id}-1`))!.getState(), 'waiting');
  assert.equal((await sweep(t.services)).leaves, 0, 'not twice');

  // RUNNING (claimed by a worker whose job then failed for good): handed back as attempt 2
  await failNext(QUEUE.taskRuns);
  await t.services.db.updateTable('task_runs').set({ state: 'RUNNING', attempt: 1, lease_token: 'gone', lease_until: new Date(t.clock.now().getTime() + 60_000), started_at: t.clock.now() })
    .where('id', '=', run.id).execute();
  later(60);
  const swept = await sweep(t.services);
  assert.equal(swept.handedBack, 1);
  assert.equal(await (await t.services.queues.get(QUEUE.taskRuns).getJob(`${run.id}-2`))!.getState(), 'waiting');
  assert.equal((await sweep(t.services)).handedBack, 0, 'its next attempt is queued: not handed back twice');

  const worker = await startWorkflowWorker(t.services);
  try {
    assert.equal((await waitForEnd(t.services, id)).state, 'SUCCESS');
  } finally {
    await worker.close();
  }
  const attempts = await t.services.db.selectFrom('task_run_attempts').select(['attempt', 'state']).where('task_run_id', '=', run.id).orderBy('attempt').execute();
  assert.deepEqual(attempts, [{ attempt: 1, state: 'LOST' }, { attempt: 2, state: 'SUCCESS' }]);
});

test('a RUNNING run whose job is gone is left to a worker that still renews its lease, and handed back once the lease goes stale', async () => {
  const id = await start();
  await t.services.queues.get(QUEUE.executions).obliterate({ force: true });
  await advance(t.services, stepContext(t.services.db), id);
  const run = await runOf(id);
  // Redis lost the job while a worker runs the task: its lease is fresh
  await (await t.services.queues.get(QUEUE.taskRuns).getJob(`${run.id}-1`))!.remove();
  await t.services.db.updateTable('task_runs').set({ state: 'RUNNING', attempt: 1, lease_token: 'alive', lease_until: new Date(t.clock.now().getTime() + 60_000), started_at: new Date(t.clock.now().getTime() - 60_000) })
    .where('id', '=', run.id).execute();
  assert.equal((await sweep(t.services)).handedBack, 0, 'a renewed lease: a worker holds it');
  // no renewal for longer than two renewal periods (20 s each for a 60 s working timeout) and a kill poll: nobody holds it
  later(50);
  assert.equal((await sweep(t.services)).handedBack, 1);
  assert.equal((await sweep(t.services)).handedBack, 0);
  const worker = await startWorkflowWorker(t.services);
  try {
    assert.equal((await waitForEnd(t.services, id)).state, 'SUCCESS');
  } finally {
    await worker.close();
  }
});
