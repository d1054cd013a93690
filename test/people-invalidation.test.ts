// A change of access reaches every running server at once, wherever it is made: a grant made
// with the `svc` binary (`svc workspace add-group`), and a grant made through the API of another
// replica. The servers here listen on Redis as `svc serve` does; their clock is frozen, so the
// 5 s lifetime of a cached access snapshot never ends by itself: only an invalidation clears it.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, startReplica, Browser, type TestApp } from './helpers/app.js';
import { query } from './helpers/db.js';
import { runSvc, serviceEnv } from './helpers/cli.js';
import { initAdministrator } from '../src/bootstrap/init.js';

const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };
const BOB = { email: 'bob@example.test', password: 'bob-password-1' };

let t: TestApp;
let stopListening: () => Promise<void>;

/** Asks until the answer is `status`: the invalidation travels over Redis, so it lands a moment after the change. */
async function eventually(ask: () => Promise<number>, status: number, what: string): Promise<void> {
  let last = 0;
  for (let i = 0; i < 100; i++) {
    last = await ask();
    if (last === status) return;
    await sleep(50);
  }
  assert.fail(`${what}: still ${last} after the change (the cached access was not invalidated)`);
}

before(async () => {
  t = await startTestApp();
  stopListening = await t.services.invalidator.listen();
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  const admin = new Browser(t, '198.51.100.1');
  assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
  assert.equal((await admin.post('/api/users', BOB)).statusCode, 201);
  // Bob is a member of two identity-provider groups, as an SSO sign-in would have recorded.
  await query(t.db.url, `INSERT INTO groups (name, idp_managed) VALUES ('analysts', true), ('auditors', true)`);
  await query(t.db.url, `INSERT INTO group_members (group_id, user_id) SELECT g.id, u.id FROM groups g, users u WHERE g.name IN ('analysts', 'auditors') AND u.email = $1`, [BOB.email]);
});
after(async () => { await stopListening(); await t.close(); });

describe('access changes reach running servers at once', () => {
  test('svc workspace add-group: the running server answers with the new role on the next requests, without waiting for its cache', async () => {
    const bob = new Browser(t, '198.51.100.2');
    assert.equal((await bob.login(BOB.email, BOB.password)).statusCode, 200);
    assert.equal((await bob.get('/api/workspaces/default')).statusCode, 404, 'no role yet (and now cached)');
    const env = serviceEnv(t.db.url, { endpoint: 'http://127.0.0.1:1', bucket: 'warehouse', accessKey: 'ak', secretKey: 'sk' }, { SVC_ADMIN_EMAIL: ADMIN.email, SVC_LOG__FILTER: 'warn' });
    const r = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'analysts', '--role', 'ws_viewer'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.match(r.stdout, /^granted: group "analysts" is ws_viewer/);
    await eventually(async () => (await bob.get('/api/workspaces/default')).statusCode, 200, 'GET /api/workspaces/default');
    assert.equal((await bob.get('/api/workspaces/default')).json().role, 'ws_viewer');
  });

  test('with Redis unreachable the grant still stands, and the command says servers apply it when their caches expire', async () => {
    const env = serviceEnv(t.db.url, { endpoint: 'http://127.0.0.1:1', bucket: 'warehouse', accessKey: 'ak', secretKey: 'sk' }, {
      SVC_ADMIN_EMAIL: ADMIN.email, SVC_LOG__FILTER: 'warn', SVC_REDIS__URL: 'redis://127.0.0.1:1',
    });
    const r = await runSvc(['workspace', 'add-group', '--workspace', 'default', '--group', 'auditors', '--role', 'ws_viewer'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^granted: group "auditors"/);
    assert.match(r.stderr, /^warning: cannot publish a cache invalidation: .*Redis at redis:\/\/127\.0\.0\.1:1/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal((await query(t.db.url, `SELECT 1 FROM workspace_role_grants w JOIN groups g ON g.id = w.group_id WHERE g.name = 'auditors'`)).length, 1);
  });

  test('a grant through the API of one replica reaches the cached access on another', async () => {
    const other = await startReplica(t);
    try {
      const bobThere = new Browser(other, '198.51.100.3');
      assert.equal((await bobThere.login(BOB.email, BOB.password)).statusCode, 200);
      assert.equal((await bobThere.get('/api/workspaces/default/members')).statusCode, 403, 'ws_viewer (and now cached)');
      const admin = new Browser(t, '198.51.100.4');
      assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
      assert.equal((await admin.put('/api/workspaces/default/members/groups/analysts', { role: 'ws_admin' })).statusCode, 200);
      await eventually(async () => (await bobThere.get('/api/workspaces/default/members')).statusCode, 200, 'GET .../members on the other replica');
    } finally {
      await other.close();
    }
  });
});
