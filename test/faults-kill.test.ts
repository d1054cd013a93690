// Issue 26, point 6: a kill stops running tasks on every replica at once, not at the next kill
// poll. The worker runs on a replica (its own Services on the same PostgreSQL and Redis) that
// polls for kills only every 60 s; the kill is requested through another one. The running sleep
// still ends KILLED at once: the kill travels over the invalidation channel. A task that reached
// its end after the kill was asked for is recorded KILLED too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { replica, signInAdmin, saveYaml, waitFor, waitForEnd, type Admin } from './helpers/workflow.js';
import { createExecution, requestKill } from '../src/workflows/executions.js';
import { startWorkflowWorker } from '../src/jobs/workflow-worker.js';

const NS = 'kills';
let t: TestApp; let admin: Admin;
before(async () => {
  t = await startTestApp({ SVC_WORKFLOW__KILL_POLL_MS: '60000' });
  admin = await signInAdmin(t);
  await saveYaml(t, admin, `id: long\nnamespace: ${NS}\ntasks:\n  - id: nap\n    type: sleep\n    duration: PT60S\n  - id: after\n    type: output\n    values: { never: true }\n`);
});
after(async () => { await t.close(); });

test('a kill asked on one replica stops the sleep running on another at once, though it polls every 60 s', { timeout: 60_000 }, async () => {
  const other = replica(t);
  const stopListening = await other.invalidator.listen();
  const worker = await startWorkflowWorker(other);
  try {
    const e = await createExecution(t.services, { workspaceId: admin.workspaceId, namespace: NS, flowId: 'long', inputs: {}, trigger: { type: 'api', user: 'test' } });
    await waitFor(async () => (await t.services.db.selectFrom('task_runs').select('state').where('execution_id', '=', e.id).where('task_id', '=', 'nap').executeTakeFirst())?.state === 'RUNNING', 'the sleep to run on the other replica');
    const killedAt = Date.now();
    assert.equal(await requestKill(t.services, admin.workspaceId, e.id), 'KILLING');
    const ended = await waitForEnd(t.services, e.id, 30_000);
    assert.equal(ended.state, 'KILLED');
    const runs = await t.services.db.selectFrom('task_runs').select(['task_id', 'state']).where('execution_id', '=', e.id).orderBy('path').execute();
    assert.deepEqual(runs, [{ task_id: 'nap', state: 'KILLED' }]);
    // for the record, against the 60 s poll it did not wait for
    console.log(`kill: the running sleep ended ${Date.now() - killedAt} ms after the kill (poll interval 60000 ms)`);
  } finally {
    await worker.close();
    await stopListening();
    await other.close();
  }
});
