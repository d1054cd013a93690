// Issue 26, point 7: an alert's "Run now" always ends in an evaluation or in an error the page
// shows. The run is recorded before its job is queued (the page shows it running at once), its
// job completes that row, a run that fails or is lost ends as an error, and a job whose alert is
// gone fails instead of completing with nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, waitFor, type Admin } from './helpers/workflow.js';
import { startAutomationWorker, type AutomationWorker } from '../src/jobs/automation-worker.js';
import { endLostEvaluations, evaluate, EVALUATION_LOST_AFTER_MS, recordManualRun } from '../src/automation/evaluate.js';
import { QUEUES } from '../src/queue/queues.js';

let t: TestApp; let admin: Admin;

before(async () => {
  t = await startTestApp({
    SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'), SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]',
    SVC_AUTOMATION__ENABLED: 'false', SVC_ENGINES__EMBEDDED: 'on',
    SVC_SESSION__IDLE_TTL_MINUTES: '1000000', SVC_SESSION__ABSOLUTE_TTL_HOURS: '100000',
  });
  admin = await signInAdmin(t);
});
after(async () => { await t?.close(); });

const newAlert = async (name: string) => {
  const res = await admin.browser.request('POST', '/api/workspaces/default/alerts', {
    name, engine: 'embedded', sql: 'SELECT 1 AS n', condition: { type: 'value', op: '>', threshold: 5, column: 'n' }, cron: '0 0 1 1 *',
    recipients: [{ type: 'webhook', url: 'http://127.0.0.1:9/none' }],
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id as string;
};
const evaluations = async (id: string) => (await admin.browser.request('GET', `/api/workspaces/default/alerts/${id}/evaluations`)).json().evaluations as Array<{ id: string; manual: boolean; outcome: string | null; ended_at: string | null; error: string | null }>;

test('Run now on a new alert shows the run at once and ends in an evaluation', async () => {
  const id = await newAlert('fresh');
  const run = await admin.browser.request('POST', `/api/workspaces/default/alerts/${id}/run`, {});
  assert.equal(run.statusCode, 202, run.body);
  // no worker yet: the run is on the page already, running
  const pending = await evaluations(id);
  assert.equal(pending.length, 1);
  assert.deepEqual([pending[0]!.manual, pending[0]!.outcome, pending[0]!.ended_at], [true, null, null]);
  let worker: AutomationWorker | undefined;
  try {
    worker = await startAutomationWorker(t.services);
    const done = await waitFor(async () => (await evaluations(id)).find((e) => e.ended_at), 'the evaluation to end');
    assert.equal(done.id, pending[0]!.id, 'the job completed the recorded run, not another one');
    assert.equal(done.outcome, 'ok');
    assert.equal((await evaluations(id)).length, 1);
  } finally {
    await worker?.close();
  }
});

test('a run that is lost ends as an error the page shows; a job whose alert is gone fails', async () => {
  const id = await newAlert('lost');
  await recordManualRun(t.services, id, t.clock.now());
  t.clock.advance(EVALUATION_LOST_AFTER_MS + 1_000);
  assert.equal(await endLostEvaluations(t.services), 1);
  const [lost] = await evaluations(id);
  assert.equal(lost!.outcome, 'error');
  assert.match(lost!.error ?? '', /did not finish/);
  // an evaluation redelivered after its run ended does nothing twice
  const again = await evaluate(t.services, id, { scheduledFor: t.clock.now(), manual: true, evaluationId: lost!.id });
  assert.equal(again?.outcome, 'error');
  assert.equal((await evaluations(id)).length, 1);

  const worker = await startAutomationWorker(t.services);
  try {
    const job = await t.services.queues.get(QUEUES.automation).add('evaluate', { automationId: '00000000-0000-0000-0000-000000000000', slot: t.clock.now().toISOString(), manual: true });
    const state = await waitFor(async () => { const s = await job.getState(); return s === 'failed' || s === 'completed' ? s : undefined; }, 'the job to end');
    assert.equal(state, 'failed', 'no evaluation is a failed job, never a completed one with nothing');
  } finally {
    await worker.close();
  }
});
