// With workflow.worker_enabled false an execution is created and nothing advances it (SPEC 3):
// the start job waits in the queue for a worker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { saveFlow, run } from './helpers/workflows.js';
import { QUEUE } from '../src/queue/queues.js';
import { startWorkflowWorker } from '../src/jobs/workflow-worker.js';

let t: TestApp; let b: Browser;
before(async () => {
  t = await startTestApp();
  await initAdministrator(t.services.db, { email: 'admin@example.test', password: 'admin-password-1', force: false });
  b = new Browser(t, '198.51.100.92');
  assert.equal((await b.login('admin@example.test', 'admin-password-1')).statusCode, 200);
});
after(async () => { await t.close(); });

test('an execution is recorded and waits; a worker started later runs it', async () => {
  assert.equal(t.config.workflow.worker_enabled, false);
  await saveFlow(b, 'default', 'id: idle\nnamespace: team\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\n');
  const id = await run(b, 'default', 'team', 'idle');
  await new Promise((r) => setTimeout(r, 1500));
  const e = (await b.get(`/workflows/v1/default/executions/${id}`)).json();
  assert.equal(e.state, 'CREATED');
  assert.deepEqual(e.task_runs, []);
  const counts = await t.services.queues.get(QUEUE.executions).getJobCounts('waiting');
  assert.equal(counts.waiting, 1, 'the start job waits for a worker');

  const worker = await startWorkflowWorker(t.services);
  try {
    for (let i = 0; i < 100; i++) {
      const now = (await b.get(`/workflows/v1/default/executions/${id}`)).json();
      if (now.state === 'SUCCESS') return;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail('the worker did not run the waiting execution');
  } finally {
    await worker.close();
  }
});
