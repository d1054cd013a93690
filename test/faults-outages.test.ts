// Issue 26, points 2, 4, 5 and 6: fast honest answers while a dependency is down, a drain that
// ends with the work, and kills that stop running tasks. A real `svc serve` runs against a private
// PostgreSQL cluster (initdb), a private redis-server and s3rver, which the test stops and starts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { query } from './helpers/db.js';
import { spawnSvc, waitExit } from './helpers/cli.js';
import { freePort } from './helpers/net.js';
import { waitFor } from './helpers/workflow.js';
import { startFaultBed, type FaultBed } from './helpers/fault-bed.js';
import { appsEnv } from './helpers/console-apps.js';
import http from 'node:http';

/** A line the server logs: its output reaches the test through a pipe, sometimes after the answer did. */
const logged = (re: RegExp) => waitFor(async () => re.test(svc.output()), `the log line ${re}`, 5_000);
const FIXTURE = fileURLToPath(new URL('./fixtures/slow-serve.ts', import.meta.url));
const HOOK_KEY = 'a-webhook-key-0123456789abcdef';
const QUICK = `id: quick\nnamespace: team\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\ntriggers:\n  - id: hook\n    type: webhook\n    key: ${HOOK_KEY}\n`;
const NAPS = 'id: naps\nnamespace: team\ntasks:\n  - id: both\n    type: parallel\n    tasks:\n      - id: n1\n        type: sleep\n        duration: PT30S\n      - id: n2\n        type: sleep\n        duration: PT30S\n';

let bed: FaultBed;
let pg: FaultBed['pg']; let redis: FaultBed['redis']; let s3: FaultBed['s3']; let env: FaultBed['env'];
let svc: FaultBed['svc']; let base: string; let headers: Record<string, string>; let apps: string;

before(async () => {
  const a = await appsEnv();
  apps = a.apps;
  bed = await startFaultBed({ SVC_WORKFLOW__WEBHOOKS_ENABLED: 'true', ...a.env }, [QUICK, NAPS]);
  ({ pg, redis, s3, env, svc, base, headers } = bed);
});

after(async () => { await bed?.close(); });

const start = (flow: string, extra: Record<string, string> = {}) =>
  fetch(`${base}/workflows/v1/default/executions/team/${flow}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', ...extra }, body: '{}' });
const countOf = async (flow: string) => Number((await query<{ n: string }>(pg.url, 'SELECT count(*) AS n FROM executions WHERE flow_id = $1', [flow]))[0]!.n);

test('Redis down: a start answers 503 unavailable with Retry-After and records nothing; an Idempotency-Key retried after it returns makes one execution', { timeout: 120_000 }, async () => {
  const before = await countOf('quick');
  await redis.stop();
  try {
    for (const extra of [{}, { 'idempotency-key': 'order-1' }]) {
      const r = await start('quick', extra);
      assert.equal(r.status, 503);
      assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After is set');
      const body = await r.json() as { error: string; message: string };
      assert.equal(body.error, 'unavailable');
      assert.doesNotMatch(body.message, /redis/i, 'the dependency is named in the log only');
    }
    assert.equal(await countOf('quick'), before, 'no execution is recorded for a start answered 503');
    await logged(/"dependency":"Redis"/);
  } finally {
    await redis.start();
  }
  // once Redis is back, the client's retry with its key makes the execution, and a retry of that makes no other
  const first = await waitFor(async () => {
    const r = await start('quick', { 'idempotency-key': 'order-1' });
    return r.status === 201 ? await r.json() as { id: string } : undefined;
  }, 'a start once Redis is back', 30_000, 250);
  const again = await start('quick', { 'idempotency-key': 'order-1' });
  assert.equal(again.status, 201);
  assert.equal(((await again.json()) as { id: string }).id, first.id, 'the same key answers the same execution');
  const other = await start('quick', { 'idempotency-key': 'order-2' });
  assert.notEqual(((await other.json()) as { id: string }).id, first.id);
  assert.equal(await countOf('quick'), before + 2);
  const bad = await start('quick', { 'idempotency-key': 'with space' });
  assert.equal(bad.status, 400);
  // a webhook call retried with its key makes one execution too
  const hook = () => fetch(`${base}/workflows/v1/default/executions/webhook/team/quick/${HOOK_KEY}`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'delivery-7' }, body: '{"n":1}' });
  const h1 = await hook(); const h2 = await hook();
  assert.deepEqual([h1.status, h2.status], [201, 201]);
  assert.equal(((await h2.json()) as { id: string }).id, ((await h1.json()) as { id: string }).id);
  assert.equal(await countOf('quick'), before + 3);
  await waitFor(async () => (await query<{ state: string }>(pg.url, 'SELECT state FROM executions WHERE id = $1', [first.id]))[0]?.state === 'SUCCESS', 'the execution to run');
});

test('Redis down: the apps origin answers 503 with Retry-After at once (a session, a redeem, an app page, a WebSocket), as does the pods\' gateway route, instead of waiting for Redis; the ticket page still opens', { timeout: 120_000 }, async () => {
  const cookie = `__Host-svc_app=${'a'.repeat(43)}`;
  await redis.stop();
  try {
    for (const [method, path] of [['GET', '/_svc/session'], ['POST', '/_svc/redeem'], ['POST', '/_svc/query'], ['GET', '/notebook/']] as const) {
      // an answer held for the outage would end in this abort, not in a 503
      const r = await fetch(`${apps}${path}`, { method, headers: { origin: apps, cookie, 'content-type': 'application/json' }, body: method === 'POST' ? JSON.stringify({ ticket: 't', secret: 's', sql: 'SELECT 1' }) : undefined, signal: AbortSignal.timeout(15_000) });
      assert.equal(r.status, 503, `${method} ${path}`);
      assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After is set');
      assert.deepEqual(await r.json(), { error: 'unavailable', message: 'temporarily unavailable; retry shortly' });
    }
    const ws = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${apps}/kernel`, { headers: { connection: 'Upgrade', upgrade: 'websocket', origin: apps, cookie, 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' }, signal: AbortSignal.timeout(15_000) });
      req.on('response', (res) => { res.resume(); resolve(res.statusCode!); });
      req.on('upgrade', () => reject(new Error('upgraded')));
      req.on('error', reject);
      req.end();
    });
    assert.equal(ws, 503, 'a WebSocket to the app is refused 503');
    // a pod's query through the service's own gateway route reads the session from Redis too
    const gw = await fetch(`${base}/api/apps/query`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-svc-app-token': 'a'.repeat(43) }, body: JSON.stringify({ sql: 'SELECT 1' }), signal: AbortSignal.timeout(15_000) });
    assert.equal(gw.status, 503, 'POST /api/apps/query');
    const page = await fetch(`${apps}/_svc/open?t=${'b'.repeat(43)}`, { signal: AbortSignal.timeout(15_000) });
    assert.equal(page.status, 200, 'the static ticket page needs no Redis');
    await logged(/"dependency":"Redis".*answered 503/);
  } finally {
    await redis.start();
  }
  const back = await waitFor(async () => {
    const r = await fetch(`${apps}/_svc/session`, { headers: { cookie } });
    return r.status === 503 ? undefined : r.status;
  }, 'the apps origin once Redis is back', 30_000, 250);
  assert.equal(back, 401, 'back: a session that does not exist is refused as before');
});

test('Redis down: a query that needs the job queue is refused 503 at once and recorded FAILED; cancels of queued and running queries answer without waiting for Redis', { timeout: 120_000 }, async () => {
  const Q = `${base}/api/workspaces/default/queries`;
  const [{ ws }] = await query<{ ws: string }>(pg.url, "SELECT id AS ws FROM workspaces WHERE slug = 'default'");
  const [{ user }] = await query<{ user: string }>(pg.url, "SELECT id AS \"user\" FROM users WHERE email = 'admin@example.test'");
  const row = (id: string, state: string) => query(pg.url, `INSERT INTO queries (id, workspace_id, engine, sql, params, principal, principal_role, state, max_rows, timeout_ms, created_at, started_at)
    VALUES ($1, $2, 'embedded', 'SELECT 1', '[]', $3, 'ws_admin', $4, 100, 600000, now(), CASE WHEN $4 = 'RUNNING' THEN now() END)`, [id, ws, user, state]);
  const queued = '00000000-0000-4000-8000-00000000c0a1';
  const running = '00000000-0000-4000-8000-00000000c0a2';
  await row(queued, 'QUEUED');
  await row(running, 'RUNNING');
  const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
  await redis.stop();
  try {
    // wait_ms 0: the query goes through the queue's worker, which Redis holds
    const r = await post(Q, { sql: 'SELECT 42 AS answer', wait_ms: 0 });
    assert.equal(r.status, 503);
    assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After is set');
    assert.equal(((await r.json()) as { message: string }).message, 'the query could not be queued: the job queue is unavailable; retry shortly');
    await logged(/is not connected: the query cannot be queued.*query not enqueued/);
    const [failed] = await query<{ state: string; error: string }>(pg.url, "SELECT state, error FROM queries WHERE sql = 'SELECT 42 AS answer'");
    assert.deepEqual(failed, { state: 'FAILED', error: 'the query could not be queued (the job queue is unavailable)' });
    // an answer held for the outage would end in the abort, not in these answers
    const c1 = await post(`${Q}/${queued}/cancel`, {});
    assert.equal(c1.status, 202);
    assert.equal(((await c1.json()) as { state: string }).state, 'CANCELLED');
    const c2 = await post(`${Q}/${running}/cancel`, {});
    assert.equal(c2.status, 202);
    await logged(/query signal not published \(Redis is not connected\)/);
  } finally {
    await redis.start();
  }
  // once Redis is back, the same query is queued and answered (the next test needs the queue too)
  const back = await waitFor(async () => {
    const r = await post(Q, { sql: 'SELECT 42 AS answer', wait_ms: 0 });
    return r.status === 503 ? undefined : { status: r.status, ...await r.json() as { id: string } };
  }, 'a queued query once Redis is back', 30_000, 250);
  assert.equal(back.status, 202);
  await waitFor(async () => (await query<{ state: string }>(pg.url, 'SELECT state FROM queries WHERE id = $1', [back.id]))[0]?.state === 'SUCCEEDED', 'the queued query to be run', 30_000);
  await query(pg.url, 'DELETE FROM queries WHERE id = ANY($1)', [[queued, running]]);
});

test('Redis down: a kill is recorded and answered 202 without waiting, and the running sleeps still end KILLED', { timeout: 120_000 }, async () => {
  const r = await start('naps');
  const { id } = await r.json() as { id: string };
  await waitFor(async () => Number((await query<{ n: string }>(pg.url, `SELECT count(*) AS n FROM task_runs WHERE execution_id = $1 AND task_id LIKE 'n_' AND state = 'RUNNING'`, [id]))[0]!.n) === 2, 'both sleeps to run');
  await redis.stop();
  try {
    const kill = await fetch(`${base}/workflows/v1/default/executions/${id}/kill`, { method: 'POST', headers });
    assert.equal(kill.status, 202);
    // the sleeps poll for the kill (every kill_poll_ms, 5 s here) and end KILLED, with Redis still down
    await waitFor(async () => (await query<{ state: string }>(pg.url, 'SELECT state FROM executions WHERE id = $1', [id]))[0]?.state === 'KILLED', 'the execution to end KILLED', 25_000);
    await logged(/kill recorded but its step not queued/);
  } finally {
    await redis.start();
  }
  const runs = await query<{ state: string }>(pg.url, `SELECT state FROM task_runs WHERE execution_id = $1 AND task_id LIKE 'n_'`, [id]);
  assert.deepEqual(runs.map((x) => x.state), ['KILLED', 'KILLED']);
});

test('SIGTERM while Redis is down: the server drains, closes and exits 0 without waiting for Redis', { timeout: 120_000 }, async () => {
  const port = await freePort();
  const other = await spawnSvc(['serve'], { env: { ...env, SVC_SERVER__PORT: String(port), SVC_APPS__ORIGIN: '' }, ready: /"msg":"listening"/ });
  await redis.stop();
  try {
    other.child.kill('SIGTERM');
    // a close that waited for Redis would end in this kill, with no exit code
    const killer = setTimeout(() => other.child.kill('SIGKILL'), 60_000);
    const code = await waitExit(other.child).finally(() => clearTimeout(killer));
    assert.equal(code, 0, other.output().slice(-2000));
    assert.match(other.output(), /"msg":"stopped"/);
  } finally {
    await redis.start();
  }
  await waitFor(async () => (await start('quick')).status === 201 || undefined, 'a start once Redis is back', 30_000, 250);
});

test('PostgreSQL down: API calls answer 503 unavailable with Retry-After naming PostgreSQL in the log only; /healthz with a session cookie answers 200', { timeout: 120_000 }, async () => {
  await pg.stop('immediate');
  try {
    const r = await fetch(`${base}/workflows/v1/default/executions`, { headers });
    assert.equal(r.status, 503);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
    const body = await r.json() as { error: string; message: string };
    assert.equal(body.error, 'unavailable');
    assert.doesNotMatch(body.message, /postgres|ECONNREFUSED/i);
    const started = await start('quick');
    assert.equal(started.status, 503);
    const health = await fetch(`${base}/healthz`, { headers });
    assert.equal(health.status, 200, 'liveness never touches the database, with a session cookie too');
    await logged(/"dependency":"PostgreSQL"/);
    assert.doesNotMatch(svc.output(), /"msg":"request failed"/, 'no outage answered as an internal error');
  } finally {
    await pg.start();
  }
  await waitFor(async () => (await fetch(`${base}/workflows/v1/default/executions`, { headers })).status === 200, 'the API to answer again', 30_000, 250);
});

test('a kill stops running sleep tasks at once: both end KILLED long before their 30 s', { timeout: 120_000 }, async () => {
  const r = await start('naps');
  const { id } = await r.json() as { id: string };
  await waitFor(async () => Number((await query<{ n: string }>(pg.url, `SELECT count(*) AS n FROM task_runs WHERE execution_id = $1 AND task_id LIKE 'n_' AND state = 'RUNNING'`, [id]))[0]!.n) === 2, 'both sleeps to run');
  const kill = await fetch(`${base}/workflows/v1/default/executions/${id}/kill`, { method: 'POST', headers });
  assert.equal(kill.status, 202);
  await waitFor(async () => (await query<{ ended_at: Date | null }>(pg.url, 'SELECT ended_at FROM executions WHERE id = $1', [id]))[0]?.ended_at, 'the execution to end', 25_000);
  const runs = await query<{ task_id: string; state: string; started_at: Date; ended_at: Date }>(pg.url, `SELECT task_id, state, started_at, ended_at FROM task_runs WHERE execution_id = $1 AND task_id LIKE 'n_' ORDER BY task_id`, [id]);
  assert.deepEqual(runs.map((x) => [x.task_id, x.state]), [['n1', 'KILLED'], ['n2', 'KILLED']]);
  for (const x of runs) assert.ok(x.ended_at.getTime() - x.started_at.getTime() < 30_000, 'interrupted, not run to its end');
  const e = (await query<{ state: string }>(pg.url, 'SELECT state FROM executions WHERE id = $1', [id]))[0]!;
  assert.equal(e.state, 'KILLED');
});

test('the object store down: an upload answers 503 unavailable with Retry-After', { timeout: 120_000 }, async () => {
  await s3.stop();
  const r = await fetch(`${base}/workflows/v1/default/namespaces/team/files/content?path=a.txt`, {
    method: 'PUT', headers: { ...headers, 'content-type': 'application/octet-stream' }, body: 'hello',
  });
  assert.equal(r.status, 503, await r.clone().text());
  assert.ok(Number(r.headers.get('retry-after')) > 0);
  assert.equal(((await r.json()) as { error: string }).error, 'unavailable');
  await logged(/"dependency":"object store"/);
});

test('SIGTERM with a slow request in flight and an idle keep-alive connection: the process exits when the request ends, not at the drain deadline', { timeout: 120_000 }, async () => {
  const port = await freePort();
  const slowMs = 2_000;
  const child = await spawnSvc(['serve'], {
    entry: ['--import', 'tsx', FIXTURE],
    env: { ...env, SVC_WORKFLOW__WORKER_ENABLED: 'false', SVC_SERVER__PORT: String(port), SVC_APPS__ORIGIN: '', FIXTURE_SLOW_MS: String(slowMs), FIXTURE_DRAIN_MS: '30000' },
    ready: /"msg":"listening"/,
  });
  const url = `http://127.0.0.1:${port}`;
  // a keep-alive connection that sits idle during the drain
  assert.equal((await fetch(`${url}/healthz`)).status, 200);
  const t0 = Date.now();
  const inflight = fetch(`${url}/slow`).then(async (res) => ({ status: res.status, body: await res.json(), at: Date.now() }));
  await new Promise((r) => setTimeout(r, 200));
  child.child.kill('SIGTERM');
  const res = await inflight;
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { slow: 'done' });
  assert.equal(await waitExit(child.child, 40_000), 0);
  const exited = Date.now();
  assert.doesNotMatch(child.output(), /drain deadline reached/, 'the drain ended with the request, not at its deadline');
  assert.match(child.output(), /in-flight requests drained/);
  // for the record: time from the request's end to the exit, against the request's own duration
  console.log(`drain: exit ${exited - res.at} ms after the in-flight request ended; the request took ${res.at - t0} ms (ratio ${((exited - res.at) / (res.at - t0)).toFixed(2)})`);
});
