// Sign-in and token signing never wait behind queries (issue 24, point 14): every running DuckDB
// call holds a thread of libuv's pool, which argon2 and token signing share. A real `svc serve`
// started as an operator starts it (no UV_THREADPOOL_SIZE of its own) runs engine.concurrency long
// viewer queries at once; while all of them still run, a person signs in and a machine client gets
// a token.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { runSvc, serviceEnv, signInHttp, spawnSvc, waitExit } from './helpers/cli.js';
import { freePort } from './helpers/net.js';
import { flushRedis, redisUrl } from './helpers/redis-dbs.js';

const REDIS_URL = redisUrl('queriesThreadpool');
const flush = () => flushRedis(REDIS_URL);

let db: TestDatabase;
let s3: TestS3;
before(async () => { db = await createTestDatabase(); s3 = await startS3(); await flush(); });
after(async () => { await db.drop(); await s3.stop(); await flush(); });

describe('the thread pool under long queries', () => {
  test('with engine.concurrency long queries running, sign-in and the token endpoint answer before any of them ends', async () => {
    const port = await freePort();
    const env = serviceEnv(db.url, s3, {
      SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_ENGINES__PROVISIONER: 'none',
      SVC_REDIS__URL: REDIS_URL, SVC_ENGINE__CONCURRENCY: '4', SVC_ENGINE__QUERY_TIMEOUT_SECS: '120', SVC_ADMIN_EMAIL: 'ops@example.com', SVC_ADMIN_PASSWORD: 'a-long-enough-password-1',
    });
    delete env.UV_THREADPOOL_SIZE;
    const init = await runSvc(['init'], { env });
    assert.equal(init.code, 0, init.stderr);
    const made = await runSvc(['client', 'add', '--name', 'probe', '--audience', 'svc-catalog', '--workspace', 'default'], { env });
    assert.equal(made.code, 0, made.stderr);
    const clientId = /client_id: (\S+)/.exec(made.stdout)![1]!;
    const secret = /client_secret: (\S+)/.exec(made.stdout)![1]!;
    const { child, output } = await spawnSvc(['serve'], { env, ready: /"msg":"listening"/ });
    const base = `http://127.0.0.1:${port}`;
    try {
      const admin = await signInHttp(base, 'ops@example.com', 'a-long-enough-password-1');
      const post = (sql: string) => fetch(`${base}/api/workspaces/default/queries`, {
        method: 'POST', headers: { ...admin.headers, 'content-type': 'application/json' }, body: JSON.stringify({ sql, wait_ms: 0 }),
      }).then(async (r) => { assert.equal(r.status, 202, await r.clone().text()); return (await r.json()).id as string; });
      const ids = await Promise.all([1, 2, 3, 4].map((i) => post(`SELECT count(*) FROM range(100000000000000) t${i}`)));
      const state = async (id: string) => (await (await fetch(`${base}/api/workspaces/default/queries/${id}`, { headers: admin.headers })).json()).state as string;
      // all four are running on the engine before the sign-in starts
      for (let i = 0; i < 600 && (await Promise.all(ids.map(state))).some((s) => s !== 'RUNNING'); i++) await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(await Promise.all(ids.map(state)), ['RUNNING', 'RUNNING', 'RUNNING', 'RUNNING']);

      const again = await fetch(`${base}/api/auth/login`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ops@example.com', password: 'a-long-enough-password-1' }),
      });
      assert.equal(again.status, 200);
      const tok = await fetch(`${base}/oauth/token`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
        body: 'grant_type=client_credentials',
      });
      assert.equal(tok.status, 200, await tok.clone().text());
      assert.ok((await tok.json()).access_token);
      assert.deepEqual(await Promise.all(ids.map(state)), ['RUNNING', 'RUNNING', 'RUNNING', 'RUNNING'], 'the queries were still running');
      for (const id of ids) await fetch(`${base}/api/workspaces/default/queries/${id}/cancel`, { method: 'POST', headers: admin.headers });
    } finally {
      child.kill('SIGTERM');
      assert.equal(await waitExit(child), 0, output());
    }
  });
});
