// A worker killed with SIGKILL mid-task loses nothing: after workflow.working_timeout_s without a
// renewed lease the reaper (BullMQ's stalled check, every reaper_interval_secs) hands the run back,
// another worker process claims it as a new attempt, and it finishes exactly once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { query } from './helpers/db.js';
import { spawnSvc, waitExit } from './helpers/cli.js';
import { startServeBed, type ServeBed } from './helpers/serve-bed.js';
import { waitFor } from './helpers/workflow.js';
import { freePort } from './helpers/net.js';
import { redisUrl } from './helpers/redis-dbs.js';

// Its own Redis database, so no other suite's workers can take these jobs.
const REDIS_URL = redisUrl('workflowReaper');
let bed: ServeBed; let env: Record<string, string>; let db: ServeBed['db'];

before(async () => {
  bed = await startServeBed(REDIS_URL, {
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__WORKING_TIMEOUT_S: '2', SVC_WORKFLOW__REAPER_INTERVAL_SECS: '1',
  });
  ({ env, db } = bed);
});
after(() => bed.close());

test('the run of a SIGKILLed worker is handed back and finishes once on another worker', async () => {
  const portA = await freePort();
  const a = await spawnSvc(['serve'], { env: { ...env, SVC_SERVER__PORT: String(portA) }, ready: /"msg":"listening"/ });
  const base = `http://127.0.0.1:${portA}`;
  const { headers } = await bed.signIn(base);
  const flow = 'id: long\nnamespace: team\ntasks:\n  - id: nap\n    type: sleep\n    duration: PT4S\n  - id: done\n    type: output\n    values: { ok: true }\n';
  assert.equal((await fetch(`${base}/workflows/v1/default/flows`, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-yaml' }, body: flow })).status, 201);
  const created = await fetch(`${base}/workflows/v1/default/executions/team/long`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(created.status, 201);
  const { id } = await created.json() as { id: string };

  await waitFor(async () => {
    const rows = await query<{ state: string }>(db.url, `SELECT state FROM task_runs WHERE execution_id = $1 AND task_id = 'nap'`, [id]);
    return rows[0]?.state === 'RUNNING';
  }, 'the sleep task to run on worker A', 30_000);
  a.child.kill('SIGKILL');
  await waitExit(a.child);

  const portB = await freePort();
  const b = await spawnSvc(['serve'], { env: { ...env, SVC_SERVER__PORT: String(portB) }, ready: /"msg":"listening"/ });
  try {
    const state = await waitFor(async () => {
      const rows = await query<{ state: string; ended_at: Date | null }>(db.url, 'SELECT state, ended_at FROM executions WHERE id = $1', [id]);
      return rows[0]?.ended_at ? rows[0].state : undefined;
    }, 'the execution to end on worker B', 40_000);
    assert.equal(state, 'SUCCESS');
    const runs = await query<{ task_id: string; state: string; attempt: number }>(db.url, 'SELECT task_id, state, attempt FROM task_runs WHERE execution_id = $1 ORDER BY path', [id]);
    assert.deepEqual(runs, [{ task_id: 'nap', state: 'SUCCESS', attempt: 2 }, { task_id: 'done', state: 'SUCCESS', attempt: 1 }]);
    const attempts = await query<{ attempt: number; state: string; reason: string | null }>(db.url,
      `SELECT a.attempt, a.state, a.reason FROM task_run_attempts a JOIN task_runs r ON r.id = a.task_run_id WHERE r.execution_id = $1 AND r.task_id = 'nap' ORDER BY a.attempt`, [id]);
    assert.deepEqual(attempts, [
      { attempt: 1, state: 'LOST', reason: null },
      { attempt: 2, state: 'SUCCESS', reason: "handed back: the previous worker's lease expired" },
    ]);
    assert.match(b.output(), /lease expired: job handed back/);
  } finally {
    b.child.kill('SIGTERM');
    await waitExit(b.child);
  }
});
