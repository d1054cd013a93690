// A query whose worker dies mid-query (SIGKILL of the `svc serve` running it) is not run again
// (it may have changed data: maxStalledCount 0) and ends FAILED: once its job lock
// (workflow.working_timeout_s) expires, another process's stalled check (every
// workflow.reaper_interval_secs) fails the job and the query is recorded FAILED with the reason.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { query } from './helpers/db.js';
import { spawnSvc, waitExit } from './helpers/cli.js';
import { startServeBed, type ServeBed } from './helpers/serve-bed.js';
import { waitFor } from './helpers/workflow.js';
import { freePort } from './helpers/net.js';
import { redisUrl } from './helpers/redis-dbs.js';

// Its own Redis database, so no other suite's workers can take these jobs.
const REDIS_URL = redisUrl('queriesStalled');
let bed: ServeBed; let env: Record<string, string>; let db: ServeBed['db'];

before(async () => {
  bed = await startServeBed(REDIS_URL, {
    SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINE__QUERY_TIMEOUT_SECS: '600',
    SVC_WORKFLOW__WORKING_TIMEOUT_S: '2', SVC_WORKFLOW__REAPER_INTERVAL_SECS: '1',
  });
  ({ env, db } = bed);
});
after(() => bed.close());

test('the query of a SIGKILLed worker ends FAILED at the next stalled check and is not run again', async () => {
  const portA = await freePort();
  const a = await spawnSvc(['serve'], { env: { ...env, SVC_SERVER__PORT: String(portA) }, ready: /"msg":"listening"/ });
  const base = `http://127.0.0.1:${portA}`;
  let id: string;
  try {
    const session = await bed.signIn(base);
    // wait_ms 0: recorded QUEUED and run as a job of the `queries` queue; this one never ends by itself.
    const res = await fetch(`${base}/api/workspaces/default/queries`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...session.headers },
      body: JSON.stringify({ sql: 'SELECT count(*) FROM range(100000000000) a, range(1000) b', wait_ms: 0 }),
    });
    assert.equal(res.status, 202);
    id = (await res.json() as { id: string }).id;
    await waitFor(async () => {
      const rows = await query<{ state: string }>(db.url, 'SELECT state FROM queries WHERE id = $1', [id]);
      return rows[0]?.state === 'RUNNING';
    }, 'the query to run on worker A', 60_000);
  } finally {
    a.child.kill('SIGKILL');
    await waitExit(a.child);
  }
  const [running] = await query<{ started_at: Date }>(db.url, 'SELECT started_at FROM queries WHERE id = $1', [id]);

  const portB = await freePort();
  const b = await spawnSvc(['serve'], { env: { ...env, SVC_SERVER__PORT: String(portB) }, ready: /"msg":"listening"/ });
  try {
    const q = await waitFor(async () => {
      const rows = await query<{ state: string; error: string | null; started_at: Date; ended_at: Date | null }>(db.url, 'SELECT state, error, started_at, ended_at FROM queries WHERE id = $1', [id]);
      return rows[0]?.ended_at ? rows[0] : undefined;
    }, 'the query to end on worker B', 60_000);
    assert.equal(q.state, 'FAILED');
    assert.equal(q.error, 'the worker running this query stopped before it ended');
    assert.equal(q.started_at.getTime(), running!.started_at.getTime(), 'not started again');
    assert.match(b.output(), /"msg":"query job failed"/);
    const session = await bed.signIn(`http://127.0.0.1:${portB}`);
    const seen = await (await fetch(`http://127.0.0.1:${portB}/api/workspaces/default/queries/${id}`, { headers: session.headers })).json() as { state: string; result_available: boolean };
    assert.equal(seen.state, 'FAILED');
    assert.equal(seen.result_available, false);
  } finally {
    b.child.kill('SIGTERM');
    await waitExit(b.child);
  }
});
