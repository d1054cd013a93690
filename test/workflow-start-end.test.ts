// The start and the end of an execution without their extra jobs (issue 11), on real PostgreSQL
// and Redis: with a workflow worker in the creating process the first step is taken as the
// execution is created (no start job); ends announced together share one `execution-ended` job,
// which the trigger worker evaluates id by id as it does a job of its own; a workspace without a flow
// trigger announces no end at all.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ADMIN, signInAdmin, saveYaml, executionsOf, replica, waitFor, waitForEnd, type Admin } from './helpers/workflow.js';
import { createWorkspace } from '../src/access/governance.js';
import { saveFlow } from '../src/workflows/flows.js';
import { createExecution } from '../src/workflows/executions.js';
import { runBatch, startWorkflowWorker, sweep } from '../src/jobs/workflow-worker.js';
import { startTriggerLoop } from '../src/jobs/trigger-loop.js';
import { QUEUE } from '../src/queue/queues.js';

const NS = 'startend';
let t: TestApp; let admin: Admin;
before(async () => {
  t = await startTestApp();
  admin = await signInAdmin(t);
  await saveYaml(t, admin, `id: first\nnamespace: ${NS}\ninputs:\n  - id: items\n    type: JSON\n    defaults: [1]\ntasks:\n  - id: each\n    type: foreach\n    values: "{{ inputs.items }}"\n    tasks:\n      - id: o\n        type: output\n        values: { v: "v{{ taskrun.value }}" }\n  - id: last\n    type: log\n    message: done\n`);
  await saveYaml(t, admin, `id: up\nnamespace: ${NS}\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\n`);
  await saveYaml(t, admin, `id: down\nnamespace: ${NS}\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\ntriggers:\n  - id: after\n    type: flow\n    conditions:\n      flowId: up\n`);
});
after(async () => { await t.close(); });

const start = (flowId: string, inputs: Record<string, unknown> = {}) =>
  createExecution(t.services, { workspaceId: admin.workspaceId, namespace: NS, flowId, inputs, trigger: { type: 'api', user: 'test' } });

test('without a worker in the process the execution waits CREATED with its start job; with one, the create path takes the first step', async () => {
  const idle = await start('first');
  assert.equal(idle.state, 'CREATED');
  const row = await t.services.db.selectFrom('executions').select(['state', 'version']).where('id', '=', idle.id).executeTakeFirstOrThrow();
  assert.deepEqual(row, { state: 'CREATED', version: '0' });
  assert.equal((await t.services.queues.get(QUEUE.executions).getJob(`${idle.id}-start`))?.name, 'start');

  const worker = await startWorkflowWorker(t.services);
  try {
    const e = await start('first', { items: [1, 2] });
    // the answer is the execution as created, as before
    assert.equal(e.state, 'CREATED');
    assert.equal(e.started_at, null);
    assert.deepEqual(e.inputs, { items: [1, 2] });
    assert.equal(await t.services.queues.get(QUEUE.executions).getJob(`${e.id}-start`), undefined, 'no start job');
    const ended = await waitForEnd(t.services, e.id);
    assert.equal(ended.state, 'SUCCESS');
    assert.ok(ended.started_at, 'started');
    // the same runs as a start job's step makes: the foreach, its iterations' outputs, then the log
    const runs = await t.services.db.selectFrom('task_runs').select(['task_id', 'path', 'state', 'outputs']).where('execution_id', '=', e.id).orderBy('path').execute();
    assert.deepEqual(runs.map((r) => [r.task_id, r.path, r.state]), [['each', '0', 'SUCCESS'], ['o', '0[0]/0', 'SUCCESS'], ['o', '0[1]/0', 'SUCCESS'], ['last', '1', 'SUCCESS']]);
    assert.deepEqual(runs.filter((r) => r.task_id === 'o').map((r) => r.outputs), [{ v: 'v1' }, { v: 'v2' }]);
    // the waiting one was started by its start job meanwhile
    assert.equal((await waitForEnd(t.services, idle.id)).state, 'SUCCESS');
  } finally {
    await worker.close();
  }
  // a closed worker no longer starts anything in the create path
  const after = await start('first');
  assert.equal((await t.services.db.selectFrom('executions').select('state').where('id', '=', after.id).executeTakeFirstOrThrow()).state, 'CREATED');
});

test('ends announced in the same turn share one execution-ended job, and each starts its flow triggers', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) {
    const e = await start('up');
    await t.services.db.updateTable('executions').set({ state: 'SUCCESS', ended_at: t.clock.now() }).where('id', '=', e.id).execute();
    ids.push(e.id);
  }
  const q = t.services.queues.get(QUEUE.triggers);
  await Promise.all(ids.map((id) => t.services.workflowQueue.ended(id)));
  // (the executions of the first test announced their own ends, one job each)
  const jobs = (await q.getJobs(['waiting'])).filter((j) => j.name === 'execution-ended' && (j.data.executionIds ?? [j.data.executionId]).some((id) => ids.includes(id!)));
  assert.equal(jobs.length, 1);
  assert.deepEqual(jobs[0].data, { executionIds: ids });

  const loop = await startTriggerLoop(t.services);
  try {
    const started = await waitFor(async () => {
      const down = await executionsOf(t.services, NS, 'down');
      return down.length >= 3 ? down : undefined;
    }, 'the downstream flow to start once per ended execution');
    assert.deepEqual(started.map((e) => (e.trigger as { executionId: string }).executionId).sort(), [...ids].sort());
    await waitFor(async () => (await jobs[0].getState()) === 'completed', 'the batch job to complete');
    // one end alone keeps its own job and id; announced again, it starts nothing twice
    await t.services.workflowQueue.ended(ids[0]);
    const single = await waitFor(async () => q.getJob(`${ids[0]}-ended`), 'the single job');
    assert.deepEqual(single.data, { executionId: ids[0] });
    await waitFor(async () => (await single.getState()) === 'completed', 'the single job to complete');
    assert.equal((await executionsOf(t.services, NS, 'down')).length, 3);
  } finally {
    await loop.close();
  }
});

test('an end is announced only where a flow trigger may hear it; a trigger saved on another replica is heard at once', async () => {
  const actor = { id: admin.userId, email: ADMIN.email };
  const ws = await createWorkspace(t.services.db, actor, { slug: 'no-listeners' });
  await saveFlow(t.services, actor, ws.id, ws.slug, `id: solo\nnamespace: ${NS}\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\n`);
  const other = replica(t);
  const unlisten = await other.invalidator.listen();
  const worker = await startWorkflowWorker(other);
  const triggers = t.services.queues.get(QUEUE.triggers);
  // runs solo on the other replica and waits until its task-run job completed (the end is announced before that)
  const runSolo = async () => {
    const e = await createExecution(other, { workspaceId: ws.id, namespace: NS, flowId: 'solo', inputs: {}, trigger: { type: 'api', user: 'test' } });
    assert.equal((await waitForEnd(t.services, e.id)).state, 'SUCCESS');
    const run = await t.services.db.selectFrom('task_runs').select('id').where('execution_id', '=', e.id).executeTakeFirstOrThrow();
    // its job, or the runs job it shares with runs queued in the same turn (start jobs left by the
    // tests before, taken by this worker), completes when instant-runs has nothing waiting or running
    const instant = other.queues.get(QUEUE.instantRuns);
    await waitFor(async () => (await instant.getJob(`${run.id}-1`))?.isCompleted() ?? Object.values(await instant.getJobCounts('wait', 'active', 'prioritized')).every((n) => n === 0), "the instant run's job to complete");
    return e.id;
  };
  // An end is announced in a job of its own (`<id>-ended`), or in one `executionIds` job with
  // the other ends of the same turn (an execution of an earlier test ending on this replica then).
  const announced = async (id: string) => !!(await triggers.getJob(`${id}-ended`))
    || (await triggers.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized'])).some((j) => (j?.data as { executionIds?: string[] } | undefined)?.executionIds?.includes(id));
  try {
    const quiet = await runSolo();
    assert.equal(await announced(quiet), false, 'no flow in the workspace has a flow trigger: nothing announced');
    // when whether anyone listens cannot be read, the end is announced (it could not be told later)
    const ask = other.flows.hasFlowTriggers;
    other.flows.hasFlowTriggers = async () => { throw new Error('the database is away'); };
    try {
      const unsure = await runSolo();
      assert.ok(await announced(unsure), 'announced when the answer cannot be read');
    } finally {
      other.flows.hasFlowTriggers = ask;
    }
    // a flow trigger saved through this replica: the invalidation reaches the worker's replica over
    // Redis (the cache's TTL runs on the test's clock, which stands still: only the message clears it)
    await saveFlow(t.services, actor, ws.id, ws.slug, `id: listener\nnamespace: ${NS}\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\ntriggers:\n  - id: after\n    type: flow\n    conditions:\n      flowId: solo\n`);
    const heard = await waitFor(async () => { const id = await runSolo(); return (await triggers.getJob(`${id}-ended`)) ? id : undefined; }, 'an end announced once the trigger exists', 10_000, 10);
    assert.deepEqual((await triggers.getJob(`${heard}-ended`))!.data, { executionId: heard });
  } finally {
    await worker.close();
    await unlisten();
    await other.close();
  }
});

test('instant runs (log, output, fail) are jobs of instant-runs, claimed runs of task-runs; the sweep re-queues only a run whose job is on neither', async () => {
  await saveYaml(t, admin, `id: mixed\nnamespace: ${NS}\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\n  - id: s\n    type: sleep\n    duration: PT0S\n`);
  const instant = t.services.queues.get(QUEUE.instantRuns);
  const leased = t.services.queues.get(QUEUE.taskRuns);
  const worker = await startWorkflowWorker(t.services);
  try {
    const e = await start('mixed');
    assert.equal((await waitForEnd(t.services, e.id)).state, 'SUCCESS');
    const runs = await t.services.db.selectFrom('task_runs').select(['id', 'task_id']).where('execution_id', '=', e.id).execute();
    const o = runs.find((r) => r.task_id === 'o')!.id; const s = runs.find((r) => r.task_id === 's')!.id;
    assert.ok(await instant.getJob(`${o}-1`), 'the output run is a job of instant-runs');
    assert.equal(await leased.getJob(`${o}-1`), undefined);
    assert.ok(await leased.getJob(`${s}-1`), 'the sleep run is a job of task-runs');
    assert.equal(await instant.getJob(`${s}-1`), undefined);

    // a run waiting on the paused instant-runs queue: its job is there, so the sweep leaves it
    await instant.pause();
    const waiting = await start('up');
    const run = await waitFor(() => t.services.db.selectFrom('task_runs').select(['id', 'state']).where('execution_id', '=', waiting.id).executeTakeFirst(), 'the queued run');
    assert.equal(run.state, 'QUEUED');
    await waitFor(() => instant.getJob(`${run.id}-1`), 'its job on instant-runs');
    const longAgo = new Date(t.services.clock.now().getTime() - 3_600_000);
    await t.services.db.updateTable('task_runs').set({ dispatched_at: longAgo }).where('id', '=', run.id).execute();
    assert.equal((await sweep(t.services)).leaves, 0, 'a job on instant-runs is found');
    // its job lost: the sweep queues it again on task-runs, whose worker reads the run and runs it
    await (await instant.getJob(`${run.id}-1`))!.remove();
    assert.equal((await sweep(t.services)).leaves, 1);
    assert.ok(await leased.getJob(`${run.id}-1`), 're-queued on task-runs, without the instant hint');
    assert.equal((await waitForEnd(t.services, waiting.id)).state, 'SUCCESS');
  } finally {
    await instant.resume();
    await worker.close();
  }
});

test('instant runs queued together travel in one runs job; the sweep looks into it before re-queueing one of them', async () => {
  await saveYaml(t, admin, `id: three\nnamespace: ${NS}\ntasks:\n  - id: all\n    type: parallel\n    tasks:\n${[1, 2, 3].map((i) => `      - id: o${i}\n        type: output\n        values: { i: ${i} }\n`).join('')}`);
  const instant = t.services.queues.get(QUEUE.instantRuns);
  const leased = t.services.queues.get(QUEUE.taskRuns);
  const worker = await startWorkflowWorker(t.services);
  await instant.pause();
  try {
    const e = await start('three');
    const runs = await waitFor(async () => {
      const rows = await t.services.db.selectFrom('task_runs').select(['id', 'state', 'task_id']).where('execution_id', '=', e.id).where('task_id', 'like', 'o%').execute();
      return rows.length === 3 ? rows : undefined;
    }, 'the three queued runs');
    assert.deepEqual(runs.map((r) => r.state), ['QUEUED', 'QUEUED', 'QUEUED']);
    const batch = await waitFor(async () => (await instant.getJobs(['wait'])).find((j) => j.name === 'runs' && j.data.runs?.some((r: { executionId: string }) => r.executionId === e.id)), 'the runs job');
    assert.deepEqual(batch.data.runs.map((r: { taskRunId: string; attempt: number; instant: boolean }) => `${r.taskRunId}-${r.attempt}-${r.instant}`).sort(),
      runs.map((r) => `${r.id}-1-true`).sort(), 'one job holds the three attempts');
    for (const r of runs) assert.equal(await instant.getJob(`${r.id}-1`), undefined, 'no job of its own');
    const longAgo = new Date(t.services.clock.now().getTime() - 3_600_000);
    await t.services.db.updateTable('task_runs').set({ dispatched_at: longAgo }).where('execution_id', '=', e.id).where('state', '=', 'QUEUED').execute();
    assert.equal((await sweep(t.services)).leaves, 0, 'runs held by a waiting runs job are not lost');
    // the job lost: each run is queued again on its own on task-runs, and the execution ends
    await batch.remove();
    assert.equal((await sweep(t.services)).leaves, 3);
    for (const r of runs) assert.ok(await leased.getJob(`${r.id}-1`), 're-queued on task-runs');
    const done = await waitForEnd(t.services, e.id);
    assert.equal(done.state, 'SUCCESS');
  } finally {
    await instant.resume();
    await worker.close();
  }
});

test('a runs job runs every attempt it holds; when some fail it fails with the first reason after the others ended', async () => {
  const ran: string[] = [];
  const runOne = async (r: { taskRunId: string }) => {
    await new Promise((res) => setImmediate(res));
    if (r.taskRunId === 'b') throw new Error('the database is away');
    ran.push(r.taskRunId);
    return r.taskRunId === 'c' ? 'duplicate' : 'SUCCESS';
  };
  const job = (ids: string[]) => ({ runs: ids.map((taskRunId) => ({ taskRunId, executionId: 'e', attempt: 1, instant: true })) });
  assert.deepEqual(await runBatch(job(['a', 'c', 'd']), runOne), { SUCCESS: 2, duplicate: 1 });
  ran.length = 0;
  await assert.rejects(runBatch(job(['a', 'b', 'd']), runOne), { message: '1 of 3 runs failed: the database is away' });
  assert.deepEqual(ran.sort(), ['a', 'd'], 'the others ran');
});
