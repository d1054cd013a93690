// `svc serve` as a real process: health, readiness with the database reachable and not,
// metrics, the warning of SVC_ENGINE_TLS_INSECURE at start, the graceful drain on SIGTERM, and
// the start's failures (a check, a port taken, Redis or the database not answering).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { spawnSvc, serviceEnv, waitExit } from './helpers/cli.js';
import { freePort, startTcpProxy } from './helpers/net.js';
import { TLS_INSECURE_WARNING } from '../src/engines/tls.js';
import { redisUrl } from './helpers/redis-dbs.js';

let db: TestDatabase;
let s3: TestS3;
let baseEnv: Record<string, string>;
const FIXTURE = fileURLToPath(new URL('./fixtures/slow-serve.ts', import.meta.url));

before(async () => {
  db = await createTestDatabase();
  s3 = await startS3();
  baseEnv = serviceEnv(db.url, s3, { SVC_SERVER__HOST: '127.0.0.1', SVC_LOG__JSON: 'true', SVC_REDIS__URL: redisUrl('serve') });
});
after(async () => { await db.drop(); await s3.stop(); });

describe('svc serve', () => {
  test('healthz, readyz and metrics; readyz answers 503 db down while the database is unreachable', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
    const u = new URL(db.url); u.port = String(proxy.port); u.hostname = '127.0.0.1';
    const port = await freePort();
    const { child, output } = await spawnSvc(['serve'], {
      env: { ...baseEnv, SVC_DATABASE__URL: u.toString(), SVC_SERVER__PORT: String(port), SVC_ENGINE_TLS_INSECURE: 'yes' }, ready: /"msg":"listening"/,
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      const warned = output().split('\n').filter((l) => l.includes(TLS_INSECURE_WARNING));
      assert.equal(warned.length, 1, 'SVC_ENGINE_TLS_INSECURE is warned about once at start');
      assert.match(warned[0]!, /"level":40/);
      const h = await fetch(`${base}/healthz`);
      assert.equal(h.status, 200);
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ok', db: 'up' });

      const m = await fetch(`${base}/metrics`);
      assert.equal(m.status, 200);
      assert.match(m.headers.get('content-type') ?? '', /^text\/plain/);
      const text = await m.text();
      assert.match(text, /^# HELP svc_process_cpu_user_seconds_total/m);
      assert.match(text, /svc_http_requests_total\{method="GET",route="\/readyz",status="200"\} 1/);
      assert.match(text, /svc_http_request_duration_seconds_bucket\{le="[\d.]+",method="GET",route="\/healthz",status="200"\}/);

      await proxy.stop();
      const down = await fetch(`${base}/readyz`);
      assert.equal(down.status, 503);
      assert.deepEqual(await down.json(), { status: 'unavailable', db: 'down' });
      assert.equal((await fetch(`${base}/healthz`)).status, 200, 'liveness does not depend on the database');

      const cfg = await fetch(`${base}/api/auth/config?code=query-secret-123`);
      assert.equal(cfg.status, 200);
      await new Promise((r) => setTimeout(r, 200));
      const access = output().split('\n').filter((l) => l.includes('"msg":"request completed"') && l.includes('/api/auth/config'));
      assert.equal(access.length, 1, 'one access-log line per request');
      assert.match(access[0], /"url":"\/api\/auth\/config","status":200/);
      assert.doesNotMatch(output(), /query-secret-123/, 'query strings never reach the log');

      const nf = await fetch(`${base}/nope`);
      assert.equal(nf.status, 404);
      assert.deepEqual(await nf.json(), { error: 'not_found', message: 'no route for GET /nope' });
    } finally {
      child.kill('SIGTERM');
      assert.equal(await waitExit(child), 0, output());
    }
  });

  test('SIGTERM drains a slow in-flight request, refuses new connections, exits 0', async () => {
    const port = await freePort();
    const { child, output } = await spawnSvc(['serve'], {
      entry: ['--import', 'tsx', FIXTURE],
      env: { ...baseEnv, SVC_SERVER__PORT: String(port), FIXTURE_SLOW_MS: '3000' },
      ready: /"msg":"listening"/,
    });
    const base = `http://127.0.0.1:${port}`;
    let done = false;
    const inflight = fetch(`${base}/slow`).finally(() => { done = true; });
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    // Once the signal is taken (on a loaded machine that may take a while), a new connection is
    // refused while the slow request is still in flight.
    for (let i = 0; i < 200 && !/shutting down: draining/.test(output()); i++) await new Promise((r) => setTimeout(r, 25));
    let refused = false;
    while (!refused && !done) {
      refused = await fetch(`${base}/healthz`).then(() => false, () => true);
      if (!refused) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(refused, 'new connections are refused while draining');
    const res = await inflight;
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { slow: 'done' });
    assert.equal(await waitExit(child), 0);
    assert.match(output(), /shutting down: draining in-flight requests/);
    assert.match(output(), /"msg":"stopped"/);
  });

  test('a request outliving the drain deadline is cut and the process still exits 0', async () => {
    const port = await freePort();
    const { child, output } = await spawnSvc(['serve'], {
      entry: ['--import', 'tsx', FIXTURE],
      env: { ...baseEnv, SVC_SERVER__PORT: String(port), FIXTURE_SLOW_MS: '20000', FIXTURE_DRAIN_MS: '300' },
      ready: /"msg":"listening"/,
    });
    const inflight = fetch(`http://127.0.0.1:${port}/slow`).then(() => 'answered', () => 'cut');
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    assert.equal(await waitExit(child, 10_000), 0);
    assert.equal(await inflight, 'cut');
    assert.match(output(), /drain deadline reached/);
  });

  test('a startup check failure stops serve before it listens', async () => {
    const port = await freePort();
    const { runSvc } = await import('./helpers/cli.js');
    const r = await runSvc(['serve'], { env: { ...baseEnv, SVC_SERVER__PORT: String(port), SVC_OIDC__ENABLED: 'true' } });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), 'oidc.enabled requires security.secret_key (base64, >=64 bytes)');
  });

  test('a port already taken stops serve with one line naming the address, not the database', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const { runSvc } = await import('./helpers/cli.js');
      const r = await runSvc(['serve'], { env: { ...baseEnv, SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port) } });
      assert.equal(r.code, 1);
      // (the log lines of the start share stderr with it)
      assert.ok(r.stderr.split('\n').includes(`cannot listen on 127.0.0.1:${port}: the address is already in use (another process listens there)`), r.stderr);
      assert.doesNotMatch(r.stderr, /cannot reach the database/);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  test('Redis not answering stops serve with one line naming it; with the database down too, the database is the one named', async () => {
    const { runSvc } = await import('./helpers/cli.js');
    const port = await freePort();
    const noRedis = { ...baseEnv, SVC_SERVER__PORT: String(port), SVC_REDIS__URL: 'redis://127.0.0.1:1' };
    const r = await runSvc(['serve'], { env: noRedis });
    assert.equal(r.code, 1);
    assert.ok(r.stderr.split('\n').includes('cannot reach Redis at redis://127.0.0.1:1: no answer within 5 s'), r.stderr);
    assert.doesNotMatch(r.stderr, /"msg":"listening"/);
    const neither = await runSvc(['serve'], { env: { ...noRedis, SVC_DATABASE__URL: 'postgres://svc@127.0.0.1:1/none' } });
    assert.equal(neither.code, 1);
    assert.match(neither.stderr.trim().split('\n').at(-1)!, /^cannot reach the database/);
    assert.doesNotMatch(neither.stderr, /cannot reach Redis/);
  });
});
