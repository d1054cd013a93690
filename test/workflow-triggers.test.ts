// Triggers: cron schedules with time zones (the clock is moved, the tick processor called
// directly), no double firing across two replicas racing the same slot, flow triggers by the ended
// execution's state, validation of triggers at save time, and one run end to end through the
// real BullMQ workers (job scheduler tick -> execution -> execution-ended -> flow trigger).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, saveYaml, replica, executionsOf, waitFor, waitForEnd, type Admin } from './helpers/workflow.js';
import { processTriggerTick, processExecutionEnded, validateTriggers, MAX_FLOW_TRIGGER_DEPTH } from '../src/workflows/triggers.js';
import { startTriggerLoop } from '../src/jobs/trigger-loop.js';
import { parseFlow } from '../src/workflows/flow.js';
import { createExecution } from '../src/workflows/executions.js';
import { deleteFlow } from '../src/workflows/flows.js';
import { startWorkflowWorker } from '../src/jobs/workflow-worker.js';
import { QUEUE } from '../src/queue/queues.js';

const NS = 'company.team';

function scheduled(id: string, cron: string, timezone: string, extra = ''): string {
  return `id: ${id}
namespace: ${NS}
inputs:
  - id: who
    type: STRING
    defaults: nobody
tasks:
  - id: hello
    type: log
    message: "hello {{ inputs.who }}"
triggers:
  - id: tick
    type: schedule
    cron: "${cron}"
    timezone: ${timezone}
    inputs:
      who: ${id}
${extra}`;
}

const stateOf = async (t: TestApp, flowId: string, triggerId = 'tick') =>
  t.services.db.selectFrom('trigger_states').selectAll().where('namespace', '=', NS).where('flow_id', '=', flowId).where('trigger_id', '=', triggerId).executeTakeFirst();

describe('validateTriggers (what flows.ts validateSource should add)', () => {
  const problems = (yaml: string) => validateTriggers(parseFlow(yaml).def);

  test('valid cron expressions and time zones pass', () => {
    assert.deepEqual(problems(scheduled('a', '0 9 * * *', 'Europe/Paris')), []);
    assert.deepEqual(problems(scheduled('a', '*/15 * * * 1-5', 'UTC')), []);
    assert.deepEqual(problems(scheduled('a', '@daily', 'America/New_York')), []);
    assert.deepEqual(problems(scheduled('a', '30 */5 * * * *', 'UTC')), [], 'six fields: seconds first');
  });

  test('an invalid cron, an unknown time zone and a cron that never fires are rejected with their path', () => {
    const bad = problems(scheduled('a', '61 * * * *', 'UTC'));
    assert.equal(bad.length, 1);
    assert.equal(bad[0].path, 'triggers[0].cron');
    assert.match(bad[0].message, /invalid cron expression "61 \* \* \* \*"/);
    assert.equal(problems(scheduled('a', 'every day', 'UTC'))[0].path, 'triggers[0].cron');
    assert.equal(problems(scheduled('a', '* * * * * * *', 'UTC'))[0].path, 'triggers[0].cron', 'seven fields (years) are refused');
    const tz = problems(scheduled('a', '0 9 * * *', 'Mars/Olympus_Mons'));
    assert.deepEqual(tz, [{ path: 'triggers[0].timezone', message: 'unknown time zone "Mars/Olympus_Mons" (use an IANA name such as Europe/Paris, or UTC)' }]);
    assert.match(problems(scheduled('a', '0 0 30 2 *', 'UTC'))[0].message, /never fires/);
  });

  test('trigger inputs are checked against the flow inputs', () => {
    const p = problems(scheduled('a', '0 9 * * *', 'UTC').replace('who: a', 'nope: 1'));
    assert.deepEqual(p, [{ path: 'triggers[0].inputs.nope', message: 'is not an input of this flow' }]);
  });

  test('a flow trigger naming the flow itself, and a webhook on a flow with a required input without default, are rejected', () => {
    const self = problems(`id: me\nnamespace: ${NS}\ntasks:\n  - id: a\n    type: log\n    message: x\ntriggers:\n  - id: again\n    type: flow\n    conditions:\n      namespace: ${NS}\n      flowId: me\n`);
    assert.equal(self.length, 1);
    assert.equal(self[0].path, 'triggers[0].conditions');
    const hook = problems(`id: me\nnamespace: ${NS}\ninputs:\n  - id: must\n    required: true\ntasks:\n  - id: a\n    type: log\n    message: x\ntriggers:\n  - id: hook\n    type: webhook\n    key: 0123456789abcdef0123\n`);
    assert.equal(hook.length, 1);
    assert.match(hook[0].message, /input "must" is required and has no default/);
  });
});

describe('schedule triggers (tick processor called directly, clock moved)', () => {
  let t: TestApp;
  let admin: Admin;
  before(async () => {
    t = await startTestApp();
    admin = await signInAdmin(t);
  });
  after(async () => { await t.close(); });

  test('0 9 * * * in Europe/Paris and in UTC fire at different instants, with the trigger inputs and date', async () => {
    t.clock.set(new Date('2026-06-01T12:00:00Z'));
    await saveYaml(t, admin, scheduled('paris', '0 9 * * *', 'Europe/Paris'));
    await saveYaml(t, admin, scheduled('utc', '0 9 * * *', 'UTC'));
    const first = await processTriggerTick(t.services);
    assert.equal(first.fired.length, 0);
    assert.equal((await stateOf(t, 'paris'))!.next_fire_at!.toISOString(), '2026-06-02T07:00:00.000Z', '09:00 in Paris (CEST) is 07:00 UTC');
    assert.equal((await stateOf(t, 'utc'))!.next_fire_at!.toISOString(), '2026-06-02T09:00:00.000Z');

    t.clock.set(new Date('2026-06-02T06:59:59Z'));
    assert.equal((await processTriggerTick(t.services)).fired.length, 0, 'not yet');

    t.clock.set(new Date('2026-06-02T07:00:00.400Z'));
    const paris = await processTriggerTick(t.services);
    assert.deepEqual(paris.fired.map((f) => [f.flowId, f.date]), [['paris', '2026-06-02T07:00:00.000Z']]);
    const [pe] = await executionsOf(t.services, NS, 'paris');
    assert.deepEqual(pe.trigger, { type: 'schedule', id: 'tick', date: '2026-06-02T07:00:00.000Z' });
    assert.deepEqual(pe.inputs, { who: 'paris' });
    assert.equal(pe.state, 'CREATED');
    const ps = (await stateOf(t, 'paris'))!;
    assert.equal(ps.last_fired_at!.toISOString(), '2026-06-02T07:00:00.000Z');
    assert.equal(ps.next_fire_at!.toISOString(), '2026-06-03T07:00:00.000Z');

    assert.equal((await processTriggerTick(t.services)).fired.length, 0, 'the same slot never fires twice');
    t.clock.set(new Date('2026-06-02T09:00:01Z'));
    const utc = await processTriggerTick(t.services);
    assert.deepEqual(utc.fired.map((f) => [f.flowId, f.date]), [['utc', '2026-06-02T09:00:00.000Z']]);
    assert.equal((await executionsOf(t.services, NS, 'paris')).length, 1);
    assert.equal((await executionsOf(t.services, NS, 'utc')).length, 1);
  });

  test('time zones follow daylight saving: 09:00 in Paris is 08:00 UTC in winter', async () => {
    t.clock.set(new Date('2026-12-01T12:00:00Z'));
    await saveYaml(t, admin, scheduled('winter', '0 9 * * *', 'Europe/Paris'));
    await processTriggerTick(t.services);
    assert.equal((await stateOf(t, 'winter'))!.next_fire_at!.toISOString(), '2026-12-02T08:00:00.000Z');
    await deleteFlow(t.services, { id: admin.userId, email: 'admin' }, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'winter' }, 'default');
  });

  test('slots missed while nothing ran fire once (the latest), not as a backlog', async () => {
    t.clock.set(new Date('2026-12-10T00:00:00Z'));
    await saveYaml(t, admin, scheduled('hourly', '0 * * * *', 'UTC'));
    await processTriggerTick(t.services);
    assert.equal((await stateOf(t, 'hourly'))!.next_fire_at!.toISOString(), '2026-12-10T01:00:00.000Z');
    t.clock.set(new Date('2026-12-13T05:30:00Z')); // three days and a bit later
    const r = await processTriggerTick(t.services);
    assert.deepEqual(r.fired.filter((f) => f.flowId === 'hourly').map((f) => f.date), ['2026-12-13T05:00:00.000Z']);
    assert.equal((await stateOf(t, 'hourly'))!.next_fire_at!.toISOString(), '2026-12-13T06:00:00.000Z');
    assert.equal((await executionsOf(t.services, NS, 'hourly')).length, 1);
  });

  test('a changed cron or time zone starts again from now; an unrelated change keeps the schedule', async () => {
    t.clock.set(new Date('2026-12-20T10:10:00Z'));
    await saveYaml(t, admin, scheduled('changing', '0 12 * * *', 'UTC'));
    await processTriggerTick(t.services);
    assert.equal((await stateOf(t, 'changing'))!.next_fire_at!.toISOString(), '2026-12-20T12:00:00.000Z');
    // a new revision with the same schedule
    await saveYaml(t, admin, scheduled('changing', '0 12 * * *', 'UTC').replace('hello {{ inputs.who }}', 'hi {{ inputs.who }}'));
    const same = await processTriggerTick(t.services);
    assert.equal(same.reset, 0);
    assert.equal((await stateOf(t, 'changing'))!.next_fire_at!.toISOString(), '2026-12-20T12:00:00.000Z');
    // every 15 minutes now: the next slot is 10:15, not 12:00
    await saveYaml(t, admin, scheduled('changing', '*/15 * * * *', 'UTC'));
    const changed = await processTriggerTick(t.services);
    assert.equal(changed.reset, 1);
    assert.equal((await stateOf(t, 'changing'))!.next_fire_at!.toISOString(), '2026-12-20T10:15:00.000Z');
    // a time zone change after a fire
    t.clock.set(new Date('2026-12-20T10:15:02Z'));
    assert.deepEqual((await processTriggerTick(t.services)).fired.filter((f) => f.flowId === 'changing').map((f) => f.date), ['2026-12-20T10:15:00.000Z']);
    await saveYaml(t, admin, scheduled('changing', '0 12 * * *', 'Asia/Tokyo'));
    assert.equal((await processTriggerTick(t.services)).reset, 1);
    assert.equal((await stateOf(t, 'changing'))!.next_fire_at!.toISOString(), '2026-12-21T03:00:00.000Z', '12:00 in Tokyo');
  });

  test('disabling or removing a trigger drops its state and it stops firing', async () => {
    t.clock.set(new Date('2026-12-21T00:00:00Z'));
    await saveYaml(t, admin, scheduled('stopping', '*/5 * * * *', 'UTC'));
    await processTriggerTick(t.services);
    assert.ok(await stateOf(t, 'stopping'));
    await saveYaml(t, admin, scheduled('stopping', '*/5 * * * *', 'UTC').replace('    cron:', '    disabled: true\n    cron:'));
    t.clock.set(new Date('2026-12-21T00:06:00Z'));
    const r = await processTriggerTick(t.services);
    assert.equal(r.fired.filter((f) => f.flowId === 'stopping').length, 0);
    assert.equal(await stateOf(t, 'stopping'), undefined);
    assert.equal((await executionsOf(t.services, NS, 'stopping')).length, 0);
  });

  test('a stored schedule with an invalid cron (saved before validation) is skipped without stopping the others', async () => {
    t.clock.set(new Date('2027-01-01T00:00:00Z'));
    await saveYaml(t, admin, scheduled('broken', '0 * * * *', 'UTC'));
    await saveYaml(t, admin, scheduled('healthy', '0 * * * *', 'UTC'));
    await t.services.db.updateTable('flows')
      .set({ definition: JSON.stringify({ ...(await t.services.db.selectFrom('flows').select('definition').where('flow_id', '=', 'broken').executeTakeFirstOrThrow()).definition as object, triggers: [{ id: 'tick', type: 'schedule', cron: '61 * * * *', timezone: 'UTC' }] }) })
      .where('flow_id', '=', 'broken').execute();
    await processTriggerTick(t.services);
    t.clock.set(new Date('2027-01-01T01:00:01Z'));
    const r = await processTriggerTick(t.services);
    assert.deepEqual(r.fired.filter((f) => f.flowId === 'broken' || f.flowId === 'healthy').map((f) => f.flowId), ['healthy']);
    assert.equal(await stateOf(t, 'broken'), undefined);
    await deleteFlow(t.services, { id: admin.userId, email: 'admin' }, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'broken' }, 'default');
    await deleteFlow(t.services, { id: admin.userId, email: 'admin' }, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'healthy' }, 'default');
  });

  test('two replicas racing every slot of many triggers: each slot fires exactly once', async () => {
    const start = new Date('2027-01-05T00:00:30Z');
    t.clock.set(start);
    const r2 = replica(t);
    const ids = ['race1', 'race2', 'race3', 'race4', 'race5'];
    try {
      for (const id of ids) await saveYaml(t, admin, scheduled(id, '* * * * *', 'UTC'));
      await Promise.all([processTriggerTick(t.services), processTriggerTick(r2)]);
      let fired = 0;
      for (let minute = 1; minute <= 4; minute++) {
        t.clock.set(new Date(start.getTime() + minute * 60_000));
        const results = await Promise.all([processTriggerTick(t.services), processTriggerTick(r2), processTriggerTick(t.services), processTriggerTick(r2)]);
        fired += results.reduce((n, r) => n + r.fired.filter((f) => f.flowId.startsWith('race')).length, 0);
      }
      assert.equal(fired, ids.length * 4);
      for (const id of ids) {
        const dates = (await executionsOf(t.services, NS, id)).map((e) => (e.trigger as { date: string }).date);
        assert.deepEqual(dates, ['2027-01-05T00:01:00.000Z', '2027-01-05T00:02:00.000Z', '2027-01-05T00:03:00.000Z', '2027-01-05T00:04:00.000Z'], id);
      }
    } finally {
      await r2.close();
    }
  });
});

describe('flow triggers (execution-ended processor called directly)', () => {
  let t: TestApp;
  let admin: Admin;
  const simple = (id: string, triggers = '') => `id: ${id}\nnamespace: ${NS}\ntasks:\n  - id: a\n    type: log\n    message: x\n${triggers}`;
  const ended = async (flowId: string, state: 'SUCCESS' | 'FAILED' | 'KILLED', trigger?: Record<string, unknown>) => {
    const e = await createExecution(t.services, { workspaceId: admin.workspaceId, namespace: NS, flowId, inputs: {}, trigger: trigger ?? { type: 'api', user: 'test' } });
    await t.services.db.updateTable('executions').set({ state, ended_at: t.clock.now() }).where('id', '=', e.id).execute();
    return e.id;
  };

  before(async () => {
    t = await startTestApp();
    admin = await signInAdmin(t);
    await saveYaml(t, admin, simple('upstream'));
    await saveYaml(t, admin, simple('other'));
    await saveYaml(t, admin, simple('on_success', `triggers:\n  - id: after\n    type: flow\n    conditions:\n      namespace: ${NS}\n      flowId: upstream\n      states: [SUCCESS]\n`));
    await saveYaml(t, admin, simple('on_failure', `triggers:\n  - id: cleanup\n    type: flow\n    conditions:\n      flowId: upstream\n      states: [FAILED, KILLED]\n`));
    await saveYaml(t, admin, simple('on_any', `triggers:\n  - id: any\n    type: flow\n    conditions:\n      states: [SUCCESS]\n`));
    await saveYaml(t, admin, simple('on_other_ns', `triggers:\n  - id: elsewhere\n    type: flow\n    conditions:\n      namespace: another.ns\n      states: [SUCCESS]\n`));
  });
  after(async () => { await t.close(); });

  test('SUCCESS starts the flows waiting for SUCCESS, with the ended execution in the trigger', async () => {
    const id = await ended('upstream', 'SUCCESS');
    const r = await processExecutionEnded(t.services, id);
    assert.deepEqual(r.fired.map((f) => f.flowId).sort(), ['on_any', 'on_success']);
    const [e] = await executionsOf(t.services, NS, 'on_success');
    assert.deepEqual(e.trigger, { type: 'flow', id: 'after', executionId: id, namespace: NS, flowId: 'upstream', state: 'SUCCESS', depth: 1 });
    assert.equal((await executionsOf(t.services, NS, 'on_failure')).length, 0);
    assert.equal((await executionsOf(t.services, NS, 'on_other_ns')).length, 0);
  });

  test('FAILED starts only the flows waiting for FAILED', async () => {
    const id = await ended('upstream', 'FAILED');
    const r = await processExecutionEnded(t.services, id);
    assert.deepEqual(r.fired.map((f) => [f.flowId, f.triggerId]), [['on_failure', 'cleanup']]);
    const [e] = await executionsOf(t.services, NS, 'on_failure');
    assert.equal((e.trigger as { state: string }).state, 'FAILED');
  });

  test('a redelivered execution-ended job starts nothing twice', async () => {
    const id = await ended('other', 'SUCCESS');
    const before = (await executionsOf(t.services, NS, 'on_any')).length;
    const first = await processExecutionEnded(t.services, id);
    assert.deepEqual(first.fired.map((f) => f.flowId), ['on_any']);
    const again = await processExecutionEnded(t.services, id);
    assert.equal(again.fired.length, 0);
    assert.equal(again.skipped, 1);
    assert.equal((await executionsOf(t.services, NS, 'on_any')).length, before + 1);
  });

  test('a flow never reacts to its own executions; an execution not ended triggers nothing', async () => {
    const id = await ended('on_any', 'SUCCESS');
    const r = await processExecutionEnded(t.services, id);
    assert.ok(!r.fired.some((f) => f.flowId === 'on_any'));
    const running = await createExecution(t.services, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'upstream', inputs: {}, trigger: { type: 'api' } });
    assert.deepEqual(await processExecutionEnded(t.services, running.id), { fired: [], skipped: 0 });
  });

  test(`chains of flow-triggered executions stop after ${MAX_FLOW_TRIGGER_DEPTH}`, async () => {
    const deep = await ended('upstream', 'SUCCESS', { type: 'flow', id: 'x', depth: MAX_FLOW_TRIGGER_DEPTH });
    assert.equal((await processExecutionEnded(t.services, deep)).fired.length, 0);
    const shallow = await ended('upstream', 'SUCCESS', { type: 'flow', id: 'x', depth: 3 });
    const r = await processExecutionEnded(t.services, shallow);
    assert.ok(r.fired.length > 0);
    const [e] = (await executionsOf(t.services, NS, 'on_success')).filter((x) => (x.trigger as { executionId: string }).executionId === shallow);
    assert.equal((e.trigger as { depth: number }).depth, 4);
  });
});

describe('end to end through BullMQ: tick job scheduler -> execution -> execution-ended -> flow trigger', () => {
  let t: TestApp;
  let admin: Admin;
  before(async () => {
    t = await startTestApp({
      SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__SCHEDULER_ENABLED: 'true',
      SVC_WORKFLOW__TICK_INTERVAL_SECS: '1', SVC_WORKFLOW__TRIGGER_INTERVAL_SECS: '1',
    });
    admin = await signInAdmin(t);
  });
  after(async () => { await t.close(); });

  test('a cron slot reached by moving the clock runs, and its end starts the downstream flow', { timeout: 60_000 }, async () => {
    t.clock.set(new Date('2026-07-01T08:59:00Z'));
    await saveYaml(t, admin, scheduled('e2e_cron', '0 11 * * *', 'Europe/Paris'));
    await saveYaml(t, admin, `id: e2e_after\nnamespace: ${NS}\ntasks:\n  - id: a\n    type: log\n    message: "after {{ trigger.executionId }}"\ntriggers:\n  - id: chained\n    type: flow\n    conditions:\n      flowId: e2e_cron\n      states: [SUCCESS]\n`);
    const worker = await startWorkflowWorker(t.services);
    const loop = await startTriggerLoop(t.services);
    try {
      const schedulers = await t.services.queues.get(QUEUE.triggers).getJobSchedulers();
      assert.deepEqual(schedulers.map((s) => [s.key, s.every]), [['trigger-tick', 1000]]);
      const state = await waitFor(() => stateOf(t, 'e2e_cron'), 'the first tick to record the schedule');
      assert.equal(state.next_fire_at!.toISOString(), '2026-07-01T09:00:00.000Z');
      t.clock.set(new Date('2026-07-01T09:00:05Z'));
      const [cronExec] = await waitFor(async () => { const e = await executionsOf(t.services, NS, 'e2e_cron'); return e.length ? e : undefined; }, 'the schedule to fire');
      assert.deepEqual(cronExec.trigger, { type: 'schedule', id: 'tick', date: '2026-07-01T09:00:00.000Z' });
      assert.equal((await waitForEnd(t.services, cronExec.id)).state, 'SUCCESS');
      const [after] = await waitFor(async () => { const e = await executionsOf(t.services, NS, 'e2e_after'); return e.length ? e : undefined; }, 'the flow trigger to fire');
      assert.equal((after.trigger as { executionId: string }).executionId, cronExec.id);
      assert.equal((await waitForEnd(t.services, after.id)).state, 'SUCCESS');
      // a FAILED end starts the flow waiting for failures, not the one waiting for SUCCESS
      await saveYaml(t, admin, `id: e2e_failing\nnamespace: ${NS}\ntasks:\n  - id: boom\n    type: fail\n    message: on purpose\n`);
      await saveYaml(t, admin, `id: e2e_on_failure\nnamespace: ${NS}\ntasks:\n  - id: a\n    type: log\n    message: cleanup\ntriggers:\n  - id: failed\n    type: flow\n    conditions:\n      flowId: e2e_failing\n      states: [FAILED]\n`);
      await saveYaml(t, admin, `id: e2e_on_success\nnamespace: ${NS}\ntasks:\n  - id: a\n    type: log\n    message: yay\ntriggers:\n  - id: ok\n    type: flow\n    conditions:\n      flowId: e2e_failing\n      states: [SUCCESS]\n`);
      const failing = await createExecution(t.services, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'e2e_failing', inputs: {}, trigger: { type: 'api', user: 'test' } });
      assert.equal((await waitForEnd(t.services, failing.id)).state, 'FAILED');
      const [cleanup] = await waitFor(async () => { const e = await executionsOf(t.services, NS, 'e2e_on_failure'); return e.length ? e : undefined; }, 'the FAILED flow trigger to fire');
      assert.deepEqual(cleanup.trigger, { type: 'flow', id: 'failed', executionId: failing.id, namespace: NS, flowId: 'e2e_failing', state: 'FAILED', depth: 1 });
      // more ticks at the same instant fire nothing more; nothing waits for SUCCESS of a failure
      await new Promise((r) => setTimeout(r, 2_500));
      assert.equal((await executionsOf(t.services, NS, 'e2e_cron')).length, 1);
      assert.equal((await executionsOf(t.services, NS, 'e2e_on_success')).length, 0);
    } finally {
      await loop.close();
      await worker.close();
    }
  });
});

