// The Data API access log: a row per call (client, endpoint, version, status, rows, bytes, time)
// written in batches after the answer, read by ws_admin only, and pruned by the retention job
// once the clock has moved past data_api.access_log_retention_days.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { dataApiAccessLog } from '../src/data-api/index.js';
import { runMaintenanceJob } from '../src/jobs/maintenance.js';

const M = '/api/workspaces/default/data-api';

describe('Data API access log', () => {
  let t: TestApp;
  let admin: Admin;
  let clientId: string;
  let token: string;
  const call = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

  before(async () => {
    t = await startTestApp({ SVC_ENGINES__PROVISIONER: 'none' });
    t.clock.set(new Date());
    admin = await signInAdmin(t);
    const pub = await admin.browser.put(`${M}/endpoints/nums`, { sql: 'SELECT range AS n FROM range($upto)', params: [{ name: 'upto', type: 'integer', default: 3, maximum: 100 }] });
    assert.equal(pub.statusCode, 201, pub.body);
    const c = (await admin.browser.post(`${M}/clients`, { name: 'reader', endpoints: ['nums'] })).json();
    clientId = c.client_id;
    const res = await t.app.inject({
      method: 'POST', url: '/oauth/token', payload: 'grant_type=client_credentials',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.61', authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` },
    });
    token = res.json().access_token;
  });
  after(async () => { await t.close(); });

  test('each call is a row once the batch is written; ws_admin reads them, newest first, filtered and paged', async () => {
    const ok = await call('/data-api/default/nums?upto=5');
    assert.equal(ok.statusCode, 200);
    assert.equal((await call('/data-api/default/nums?upto=500')).statusCode, 400);
    // Nothing is written on the request path: the rows arrive with the batch.
    await dataApiAccessLog(t.services).flush();
    const log = await admin.browser.get(`${M}/access-log`);
    assert.equal(log.statusCode, 200, log.body);
    const entries = log.json().entries as Array<Record<string, unknown>>;
    assert.deepEqual(entries.map((e) => [e.client, e.method, e.path, e.endpoint, e.status, e.version, e.rows]), [
      [clientId, 'GET', '/data-api/default/nums', 'nums', 400, null, null],
      [clientId, 'GET', '/data-api/default/nums', 'nums', 200, 1, 5],
    ]);
    assert.deepEqual(entries.map((e) => e.client_name), ['reader', 'reader'], 'the client is named (issue 28: the console showed ids)');
    assert.equal(entries[1].bytes, Buffer.byteLength(ok.body));
    assert.equal(typeof entries[1].duration_ms, 'number');
    const page = (await admin.browser.get(`${M}/access-log?limit=1`)).json();
    assert.equal(page.entries.length, 1);
    const rest = (await admin.browser.get(`${M}/access-log?limit=1&before=${page.next_before}`)).json();
    assert.equal(rest.entries[0].status, 200);
    const u = await createLocalUser(t.services.db, { email: 'editor@example.test', password: 'password-of-editor' });
    await grantWorkspaceRoleToUser(t.services.db, admin.workspaceId, u.id, 'ws_editor', null, t.clock.now());
    const editor = new Browser(t, '198.51.100.62');
    assert.equal((await editor.login('editor@example.test', 'password-of-editor')).statusCode, 200);
    const denied = await editor.get(`${M}/access-log`);
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().message, 'requires ws_admin in workspace default');
  });

  test('the retention job prunes rows older than access_log_retention_days (90) once the clock has moved', async () => {
    await call('/data-api/default/nums');
    await dataApiAccessLog(t.services).flush();
    const before = (await admin.browser.get(`${M}/access-log`)).json().entries.length;
    assert.equal(before, 3);
    t.clock.advance(89 * 86_400_000);
    assert.deepEqual(await runMaintenanceJob(t.services, 'access-log-retention', { runner: async () => null }), { pruned: 0 });
    t.clock.advance(2 * 86_400_000);
    await call('/data-api/default/nums?upto=1').then((r) => assert.equal(r.statusCode, 401, 'the token of 91 days ago has expired'));
    await dataApiAccessLog(t.services).flush();
    assert.deepEqual(await runMaintenanceJob(t.services, 'access-log-retention', { runner: async () => null }), { pruned: 3 });
    admin = await signInAdmin(t, '198.51.100.63');
    const left = (await admin.browser.get(`${M}/access-log`)).json().entries;
    assert.deepEqual(left.map((e: { status: number }) => e.status), [401]);
  });
});
