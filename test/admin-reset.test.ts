// `svc admin reset-password` (issue 27 point 2): the break-glass way back in once the password
// `svc init` printed is lost. Against a running `svc serve`: the old password and the sessions it
// opened stop working at once, the printed one signs in, the reset is in the audit log; only a
// local platform administrator qualifies.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, query, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { runSvc, serviceEnv, signInHttp, spawnSvc, waitExit } from './helpers/cli.js';
import { freePort } from './helpers/net.js';
import { redisUrl } from './helpers/redis-dbs.js';

let db: TestDatabase;
let s3: TestS3;
let env: Record<string, string>;

before(async () => {
  [db, s3] = await Promise.all([createTestDatabase('svc_reset'), startS3()]);
  env = serviceEnv(db.url, s3, { SVC_SERVER__HOST: '127.0.0.1', SVC_LOG__JSON: 'true', SVC_REDIS__URL: redisUrl('adminReset') });
});
after(async () => { await Promise.all([db.drop(), s3.stop()]); });

const login = (base: string, email: string, password: string) => fetch(`${base}/api/auth/login`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
});

test('a new password, printed once; the old one and its sessions end at once; recorded in the audit log', async () => {
  const init = await runSvc(['init'], { env: { ...env, SVC_ADMIN_EMAIL: 'root@example.test' } });
  assert.equal(init.code, 0, init.stderr);
  const oldPassword = /^password: (\S+)$/m.exec(init.stdout)![1];
  const port = await freePort();
  const { child } = await spawnSvc(['serve'], { env: { ...env, SVC_SERVER__PORT: String(port) }, ready: /"msg":"listening"/ });
  const base = `http://127.0.0.1:${port}`;
  try {
    const session = await signInHttp(base, 'root@example.test', oldPassword);
    assert.equal((await fetch(`${base}/api/me`, { headers: session.headers })).status, 200);

    const r = await runSvc(['admin', 'reset-password', '--email', 'ROOT@example.test'], { env });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines[0], 'email: root@example.test');
    const newPassword = /^password: (\S{20,})$/.exec(lines[1])?.[1];
    assert.ok(newPassword && newPassword !== oldPassword, lines[1]);
    assert.equal(lines[2], 'sessions ended: 1');
    assert.doesNotMatch(r.stderr, /warning/, 'the running server was told (Redis)');

    assert.equal((await fetch(`${base}/api/me`, { headers: session.headers })).status, 401, 'the old session has ended');
    assert.equal((await login(base, 'root@example.test', oldPassword)).status, 401);
    assert.equal((await login(base, 'root@example.test', newPassword)).status, 200);

    const events = await query<{ action: string; actor: string; target: string; details: { sessions_ended: number } }>(db.url,
      `SELECT action, actor, target, details FROM audit_events WHERE action = 'user.reset_password'`);
    assert.deepEqual(events, [{ action: 'user.reset_password', actor: 'svc admin reset-password', target: 'user:root@example.test', details: { sessions_ended: 1 } }]);
    assert.ok(!JSON.stringify(events).includes(newPassword), 'the password is in no record');
  } finally {
    child.kill('SIGTERM');
    await waitExit(child);
  }
});

test('an unknown email, an SSO user and a local user without platform_admin are refused in one line', async () => {
  await query(db.url, `INSERT INTO users (email, name, password_hash, is_local, sub) VALUES ('sso@example.test', 'S', NULL, false, 'sub-1'), ('plain@example.test', 'P', 'x', true, NULL)`);
  const cases: Array<[string, RegExp]> = [
    ['nobody@example.test', /^not_found: user does not exist: nobody@example\.test$/],
    ['sso@example.test', /^bad_request: sso@example\.test signs in through single sign-on/],
    ['plain@example.test', /^bad_request: plain@example\.test is not a platform administrator/],
  ];
  for (const [email, message] of cases) {
    const r = await runSvc(['admin', 'reset-password', '--email', email], { env });
    assert.equal(r.code, 1, email);
    assert.equal(r.stdout, '');
    assert.match(r.stderr.trim(), message);
  }
  const hashes = await query<{ password_hash: string | null }>(db.url, `SELECT password_hash FROM users WHERE email = 'plain@example.test'`);
  assert.deepEqual(hashes, [{ password_hash: 'x' }], 'unchanged');
  const missing = await runSvc(['admin', 'reset-password'], { env });
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /required option '--email <email>'/);
});
