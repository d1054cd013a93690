// Orchestration steps under concurrency, on real PostgreSQL and Redis. No worker runs here: the
// tests call the steps a worker would, from separate worker contexts, in the orders that race in
// production (a stale snapshot, a job delivered twice, a kill landing mid-step, branches ending
// together), and check what was recorded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { saveFlow, run } from './helpers/workflows.js';
import { signInAdmin } from './helpers/workflow.js';
import { advance, createdSnapshot, readSnapshot, stepContext } from '../src/workflows/orchestrator.js';
import { runTaskRunJob } from '../src/workflows/task-run.js';
import { requestKill } from '../src/workflows/executions.js';
import { TaskLog } from '../src/workflows/logs.js';
import { applyOutcomes } from '../src/workflows/execution-store.js';
import { sameTurn } from '../src/util/same-turn.js';
import { QUEUES } from '../src/queue/queues.js';

let t: TestApp; let b: Browser; let wsId: string;
before(async () => {
  t = await startTestApp();
  ({ browser: b, workspaceId: wsId } = await signInAdmin(t, '198.51.100.93'));
  await saveFlow(b, 'default', 'id: two\nnamespace: race\ntasks:\n  - id: a\n    type: output\n    values: { n: 1 }\n  - id: b\n    type: output\n    values: { n: 2 }\n');
  const branches = Array.from({ length: 5 }, (_, i) => `      - id: p${i}\n        type: output\n        values: { i: ${i} }\n`).join('');
  await saveFlow(b, 'default', `id: fan\nnamespace: race\ntasks:\n  - id: all\n    type: parallel\n    tasks:\n${branches}  - id: last\n    type: output\n    values: { done: true }\n`);
});
after(async () => { await t.close(); });

const exec = (id: string) => t.services.db.selectFrom('executions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const runs = (id: string) => t.services.db.selectFrom('task_runs').selectAll().where('execution_id', '=', id).orderBy('path').execute();
const attempts = (runId: string) => t.services.db.selectFrom('task_run_attempts').selectAll().where('task_run_id', '=', runId).execute();
const job = (r: { id: string; execution_id: string; attempt: number }) => ({ taskRunId: r.id, executionId: r.execution_id, attempt: r.attempt + 1, instant: true });

test('a step planned from a stale snapshot reads again and writes nothing twice', async () => {
  const id = await run(b, 'default', 'race', 'two');
  const asCreated = createdSnapshot(await exec(id));
  await advance(t.services, stepContext(t.services.db), id);
  assert.equal((await exec(id)).version, '1');
  // A second start job carrying the execution as created (version 0) finds the version moved.
  await advance(t.services, stepContext(t.services.db), id, asCreated);
  const after = await exec(id);
  assert.equal(after.state, 'RUNNING');
  assert.equal(after.version, '1', 'the stale step applied nothing');
  assert.deepEqual((await runs(id)).map((r) => [r.task_id, r.state]), [['a', 'QUEUED']]);
});

test('an instant run delivered twice at once is recorded once and advances once', async () => {
  const id = await run(b, 'default', 'race', 'two');
  await advance(t.services, stepContext(t.services.db), id);
  const [a] = await runs(id);
  const results = await Promise.all([1, 2].map(() => runTaskRunJob(t.services, stepContext(t.services.db), null, 'w', job(a))));
  // One delivery records it. The other either lost the apply ('superseded') or, when its read came
  // after the winner's commit (a loaded machine), found the run ended ('duplicate'): both record nothing.
  const [won, lost] = results.sort();
  assert.equal(won, 'SUCCESS');
  assert.ok(lost === 'superseded' || lost === 'duplicate', lost);
  assert.equal((await attempts(a.id)).length, 1);
  const after = await runs(id);
  assert.deepEqual(after.map((r) => [r.task_id, r.state, r.attempt]), [['a', 'SUCCESS', 1], ['b', 'QUEUED', 0]]);
  // A late third delivery of the same job is a duplicate.
  assert.equal(await runTaskRunJob(t.services, stepContext(t.services.db), null, 'w', job(a)), 'duplicate');
});

test('a kill that lands after a worker took its snapshot is not overwritten', async () => {
  const id = await run(b, 'default', 'race', 'two');
  const ctx = stepContext(t.services.db);
  await advance(t.services, ctx, id); // the context now holds the snapshot of its own step
  const [a] = await runs(id);
  await requestKill(t.services, wsId, id);
  // The task runs from the pre-kill snapshot; its step finds the version moved, reads the kill,
  // records the outcome and cancels what has not started.
  assert.equal(await runTaskRunJob(t.services, ctx, null, 'w', job(a)), 'SUCCESS');
  const e = await exec(id);
  assert.equal(e.state, 'KILLED');
  assert.ok(e.ended_at);
  assert.deepEqual((await runs(id)).map((r) => [r.task_id, r.state]), [['a', 'SUCCESS']], 'b was never created');
});

test('a kill job on a worker holding a pre-kill snapshot still cancels what has not started', async () => {
  const id = await run(b, 'default', 'race', 'two');
  const ctx = stepContext(t.services.db);
  await advance(t.services, ctx, id);
  await requestKill(t.services, wsId, id);
  // The kept snapshot shows no kill and nothing to do; only a fresh read may conclude that.
  await advance(t.services, ctx, id);
  const e = await exec(id);
  assert.equal(e.state, 'KILLED');
  assert.deepEqual((await runs(id)).map((r) => [r.task_id, r.state, r.error]), [['a', 'KILLED', 'killed before it started']]);
});

test('parallel branches finishing together from one snapshot are each recorded, and the join happens once', async () => {
  const id = await run(b, 'default', 'race', 'fan');
  const ctx = stepContext(t.services.db);
  const handedOver: number[] = [];
  ctx.outcomes = sameTurn(async (items) => { handedOver.push(items.length); await applyOutcomes(t.services.db, items); }, 50);
  await advance(t.services, ctx, id);
  const leaves = (await runs(id)).filter((r) => r.task_id.startsWith('p'));
  assert.equal(leaves.length, 5);
  // All five are run from the same cached snapshot; their steps take turns on this worker, each
  // from the snapshot the one before it left, so none plans from a moved version and reads again.
  const results = await Promise.all(leaves.map((r) => runTaskRunJob(t.services, ctx, null, 'w', job(r))));
  assert.deepEqual(results, Array(5).fill('SUCCESS'));
  assert.deepEqual(handedOver, [1, 1, 1, 1], 'four outcome-only steps one after another (the fifth joins), none applied twice');
  // a parallel branch on another worker (its own context) still races by version, and is recorded once
  const other = await run(b, 'default', 'race', 'fan');
  await advance(t.services, stepContext(t.services.db), other);
  const branches = (await runs(other)).filter((r) => r.task_id.startsWith('p'));
  assert.deepEqual(await Promise.all(branches.map((r, i) => runTaskRunJob(t.services, i % 2 ? ctx : stepContext(t.services.db), null, 'w', job(r)))), Array(5).fill('SUCCESS'));
  assert.equal((await exec(other)).version, '6', 'the start and five outcomes, each applied once');
  const after = await runs(id);
  assert.deepEqual(after.filter((r) => r.task_id === 'last').map((r) => r.state), ['QUEUED'], 'the task after the join was created once');
  assert.equal(after.find((r) => r.task_id === 'all')!.state, 'SUCCESS');
  const last = after.find((r) => r.task_id === 'last')!;
  assert.equal(await runTaskRunJob(t.services, ctx, null, 'w', job(last)), 'SUCCESS');
  const e = await exec(id);
  assert.equal(e.state, 'SUCCESS');
  assert.deepEqual(e.outputs, { last: { done: true } });
  assert.equal(e.version, '7', 'one applied step each: the start, five outcomes (the fifth also joins), the last task (which ends it)');
});

test('outcomes ending several executions in the same turn commit in one statement, each once; a duplicate delivery among them is applied alone', async () => {
  await saveFlow(b, 'default', 'id: one\nnamespace: race\ntasks:\n  - id: t\n    type: output\n    values: { ok: true }\n');
  const ids = await Promise.all([1, 2, 3, 4].map(() => run(b, 'default', 'race', 'one')));
  const ctx = stepContext(t.services.db);
  const handedOver: number[] = [];
  ctx.outcomes = sameTurn(async (items) => { handedOver.push(items.length); await applyOutcomes(t.services.db, items); }, 50);
  for (const id of ids) await advance(t.services, ctx, id);
  const leaves = (await Promise.all(ids.map(runs))).map((r) => r[0]);
  // The first leaf is delivered twice at once: the second copy's step waits its turn behind the
  // first's (steps of one execution take turns on a worker), so it is not in the shared statement.
  const results = await Promise.all([...leaves, leaves[0]].map((r) => runTaskRunJob(t.services, ctx, null, 'w', job(r))));
  assert.deepEqual(results.sort(), ['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS', 'superseded']);
  // the duplicate then applies alone from its stale snapshot, finds the version moved, reads again
  // and finds its run ended by the other copy: applied alone again, recording nothing
  assert.deepEqual(handedOver, [4, 1, 1], 'the four executions\' outcomes were handed over together, the duplicate alone');
  const ended = await t.services.db.selectFrom('executions').select(['id', 'state', 'version', sql<string>`xmin::text`.as('tx')]).where('id', 'in', ids).execute();
  assert.deepEqual(ended.map((e) => [e.state, e.version]), Array(4).fill(['SUCCESS', '2']), 'each ended by one applied step');
  assert.equal(new Set(ended.map((e) => e.tx)).size, 1, 'the four ends were written by one statement (one transaction)');
  for (const l of leaves) assert.equal((await attempts(l.id)).length, 1);
});

test('task log lines the database refuses are reported in the server log with a reason, not dropped silently', async () => {
  const warned: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  // An execution that does not exist: every insert of its lines breaks the foreign key.
  const ids = { executionId: '00000000-0000-4000-8000-000000000001', taskRunId: '00000000-0000-4000-8000-000000000002', attempt: 1 };
  const log = new TaskLog(t.services.db, t.services.clock, ids, { maxLines: 100, maxBytes: 100_000 }, { warn: (obj, msg) => warned.push({ obj, msg }) });
  log.write('INFO', 'one\ntwo');
  await log.flush();
  assert.equal(warned.length, 1);
  assert.equal(warned[0].msg, 'task log lines lost: the database refused a batch');
  assert.equal(warned[0].obj.lines, 2);
  assert.equal(warned[0].obj.execution, ids.executionId);
  assert.match(String(warned[0].obj.err), /foreign key/);
  assert.ok(!JSON.stringify(warned[0].obj).includes('two'), 'the lines themselves stay out of the server log');
  assert.deepEqual(await log.finish(), []);
});

test('a foreach step reads as many task runs after N finished iterations as after 2N: finished iterations stay out of the read', async () => {
  const n = 4;
  const values = Array.from({ length: 3 * n }, (_, i) => i).join(', ');
  await saveFlow(b, 'default', `id: many\nnamespace: race\ntasks:\n  - id: each\n    type: foreach\n    values: [${values}]\n    tasks:\n      - id: x\n        type: output\n        values: { v: '{{ taskrun.value }}' }\n      - id: y\n        type: output\n        values: { w: '{{ outputs.x.v }}' }\n  - id: after\n    type: output\n    values: { n: 1 }\n`);
  const id = await run(b, 'default', 'race', 'many');
  await advance(t.services, stepContext(t.services.db), id);
  const read: number[] = [];
  for (let i = 0; i < 3 * n; i++) {
    for (const task of ['x', 'y']) {
      const queued = (await runs(id)).filter((r) => r.state === 'QUEUED');
      assert.equal(queued.length, 1);
      assert.equal(queued[0].task_id, task);
      await runTaskRunJob(t.services, stepContext(t.services.db), null, 'w', job(queued[0]));
    }
    // the rows the next step of this execution reads
    read[i + 1] = (await readSnapshot(t.services.db, id))!.runs.length;
  }
  assert.equal(read[2 * n], read[n]);
  const [after] = (await runs(id)).filter((r) => r.state === 'QUEUED');
  assert.equal(after.task_id, 'after');
  await runTaskRunJob(t.services, stepContext(t.services.db), null, 'w', job(after));
  // and every iteration ran as before, each seeing its own sibling
  const all = await runs(id);
  const ys = all.filter((r) => r.task_id === 'y').map((r) => (r.outputs as { w: unknown }).w).sort((p, q) => Number(p) - Number(q));
  assert.deepEqual(ys, Array.from({ length: 3 * n }, (_, i) => i));
  const e = await exec(id);
  assert.equal(e.state, 'SUCCESS');
  assert.deepEqual(e.outputs, { after: { n: 1 } });
});

test('a worker runs the next instant task of a sequence in the same job, up to its chain, and queues the one after', async () => {
  await saveFlow(b, 'default', 'id: four\nnamespace: race\ntasks:\n' + ['a', 'b', 'c', 'd'].map((x, i) => `  - id: ${x}\n    type: output\n    values: { n: ${i} }\n`).join(''));
  const id = await run(b, 'default', 'race', 'four');
  const ctx = stepContext(t.services.db);
  await advance(t.services, ctx, id);
  const [a] = await runs(id);
  const queued = async () => (await t.services.queues.get(QUEUES.instantRuns).getJobs(['wait', 'prioritized', 'delayed'])).filter((j) => j && 'taskRunId' in j.data && j.data.executionId === id).map((j) => j.id);
  const before = await queued();
  // a chain of 3: a (the job's own attempt), then b and c kept by the steps before them; c's step queues d
  assert.equal(await runTaskRunJob(t.services, ctx, null, 'w', job(a), 3), 'SUCCESS', 'the job answers for its own attempt');
  const after = await runs(id);
  assert.deepEqual(after.map((r) => [r.task_id, r.state, r.attempt]), [['a', 'SUCCESS', 1], ['b', 'SUCCESS', 1], ['c', 'SUCCESS', 1], ['d', 'QUEUED', 0]]);
  for (const r of after.slice(0, 3)) assert.equal((await attempts(r.id)).length, 1, `${r.task_id} recorded once`);
  const d = after[3];
  assert.deepEqual((await queued()).filter((j) => !before.includes(j)), [`${d.id}-1`], 'b and c got no job; d got its own');
  assert.equal((await exec(id)).state, 'RUNNING');
  // d's job, with a longer chain, ends the execution; the job of a kept run, delivered late, is a duplicate
  assert.equal(await runTaskRunJob(t.services, ctx, null, 'w', job(d), 3), 'SUCCESS');
  assert.equal((await exec(id)).state, 'SUCCESS');
  assert.equal(await runTaskRunJob(t.services, stepContext(t.services.db), null, 'w', job(after[1])), 'duplicate');
});
