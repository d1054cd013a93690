// Issue 26, points 1 and 3: PostgreSQL and Redis restarted under running executions strand
// nothing. A real `svc serve` (workflow worker on) runs against a private PostgreSQL cluster
// (initdb) and a private redis-server that the test stops and starts: PostgreSQL stopped with
// `-m immediate` and started again, Redis killed and started with its data, Redis killed and
// started empty. Every execution then ends by itself, SUCCESS, each task with exactly one run and
// one successful attempt.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { query } from './helpers/db.js';
import { waitFor } from './helpers/workflow.js';
import { startFaultBed, type FaultBed } from './helpers/fault-bed.js';

const FLOW = 'id: steps\nnamespace: team\ntasks:\n  - id: a\n    type: sleep\n    duration: PT2S\n  - id: b\n    type: output\n    values: { ok: true }\n  - id: c\n    type: sleep\n    duration: PT1S\n';
const EXECUTIONS = 6;

let bed: FaultBed;
let pg: FaultBed['pg']; let redis: FaultBed['redis']; let svc: FaultBed['svc']; let base: string; let headers: Record<string, string>;

before(async () => {
  bed = await startFaultBed({
    SVC_WORKFLOW__WORKING_TIMEOUT_S: '6', SVC_WORKFLOW__KILL_POLL_MS: '500',
    // two claimed runs at a time: the other first tasks wait in Redis as jobs, which a restart without data loses
    SVC_WORKFLOW__BATCH: '2',
  }, [FLOW]);
  ({ pg, redis, svc, base, headers } = bed);
});

after(async () => { await bed?.close(); });

async function startExecutions(): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < EXECUTIONS; i++) {
    const r = await fetch(`${base}/workflows/v1/default/executions/team/steps`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
    const body = await r.text();
    assert.equal(r.status, 201, body);
    ids.push((JSON.parse(body) as { id: string }).id);
  }
  // the fault strikes while the first tasks run and others wait for a slot
  await waitFor(async () => {
    const rows = await query<{ n: string }>(pg.url, `SELECT count(*) AS n FROM task_runs WHERE execution_id = ANY($1) AND state = 'RUNNING'`, [ids]);
    return Number(rows[0]!.n) > 0;
  }, 'a running task', 30_000);
  return ids;
}

/** Every execution ends SUCCESS by itself; each task has one run with one successful attempt. */
async function everyExecutionEndsOnce(ids: string[]): Promise<void> {
  await waitFor(async () => {
    const rows = await query<{ n: string }>(pg.url, 'SELECT count(*) AS n FROM executions WHERE id = ANY($1) AND ended_at IS NOT NULL', [ids]).catch(() => [{ n: '0' }]);
    return Number(rows[0]!.n) === ids.length;
  }, 'every execution to end', 90_000, 250);
  const states = await query<{ state: string; n: string }>(pg.url, 'SELECT state, count(*) AS n FROM executions WHERE id = ANY($1) GROUP BY state', [ids]);
  assert.deepEqual(states.map((s) => [s.state, Number(s.n)]), [['SUCCESS', ids.length]]);
  const runs = await query<{ execution_id: string; task_id: string; state: string; ok: string }>(pg.url, `
    SELECT t.execution_id, t.task_id, t.state, (SELECT count(*) FROM task_run_attempts a WHERE a.task_run_id = t.id AND a.state = 'SUCCESS') AS ok
    FROM task_runs t WHERE t.execution_id = ANY($1) ORDER BY t.execution_id, t.path`, [ids]);
  assert.equal(runs.length, ids.length * 3, 'one run per task');
  for (const r of runs) {
    assert.equal(r.state, 'SUCCESS', `${r.execution_id} ${r.task_id}`);
    assert.equal(Number(r.ok), 1, `${r.execution_id} ${r.task_id}: one successful attempt`);
  }
}

test('PostgreSQL stopped (-m immediate) and started under running executions: every execution ends, each task once', { timeout: 180_000 }, async () => {
  const ids = await startExecutions();
  await pg.stop('immediate');
  await new Promise((r) => setTimeout(r, 5_000));
  await pg.start();
  await everyExecutionEndsOnce(ids);
  assert.match(svc.output(), /ECONNREFUSED|Connection terminated|terminating connection/, 'the outage was seen');
});

test('Redis killed and started with its data under running executions: every execution ends, each task once', { timeout: 180_000 }, async () => {
  const ids = await startExecutions();
  await redis.stop();
  await new Promise((r) => setTimeout(r, 3_000));
  await redis.start();
  await everyExecutionEndsOnce(ids);
});

test('Redis restarted empty under running executions: the schedulers come back and the sweep recovers queued and running work', { timeout: 180_000 }, async () => {
  const ids = await startExecutions();
  await redis.stop({ empty: true });
  await new Promise((r) => setTimeout(r, 1_000));
  await redis.start();
  await everyExecutionEndsOnce(ids);
  // the sweep's scheduler is back in the new Redis, without a restart of svc
  const { Redis } = await import('ioredis');
  const r = new Redis(redis.url);
  try {
    const keys = await r.keys('svc:executions:repeat:sweep*');
    const schedulers = await r.zrange('svc:executions:repeat', 0, -1);
    assert.ok(schedulers.includes('sweep') || keys.length > 0, `the sweep scheduler is asserted again (${schedulers.join(',')})`);
  } finally {
    r.disconnect();
  }
});
