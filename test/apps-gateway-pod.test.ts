// The query gateway for a pod (docs/apps.md "The query gateway"): a notebook kernel runs its SQL
// server-side, so the pod calls the service at apps.pod.callback_url (POST /api/apps/query) with
// the X-Svc-App-Token the proxy handed it. A real subprocess pod (the test's own HTTP program)
// behind the real apps origin calls a listening service: the SQL runs with the viewer's rights,
// capped at apps.max_rows; both doors of the gateway count against one rate limit per token; the
// service never takes the apps origin's cookie as a credential. Real PostgreSQL, Redis, S3.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { rm } from 'node:fs/promises';
import { Browser } from './helpers/app.js';
import { freePort } from './helpers/net.js';
import { APPS_ORIGIN, newApp, openSession, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';

describe('the query gateway from an app pod through apps.pod.callback_url', () => {
  let pods: SubprocessPods;
  let b: PodBed;
  let viewer: Browser;
  let viewerId: string;
  let appId: string;
  before(async () => {
    const port = await freePort();
    pods = await subprocessPods({ SVC_APPS__POD__CALLBACK_URL: `http://127.0.0.1:${port}` });
    b = await startPodBed({ ...pods.env, SVC_ENGINES__PROVISIONER: 'none', SVC_APPS__MAX_ROWS: '5', SVC_APPS__RATE_MAX: '4', SVC_APPS__RATE_WINDOW_SECS: '10' });
    await b.t.app.listen({ host: '127.0.0.1', port });
    appId = await newApp(b.admin, 'kernel-sql', 'x = 1\n');
    const u = await createLocalUser(b.t.services.db, { email: 'vi@example.com', password: 'password-of-vi' });
    viewerId = u.id;
    const ws = await b.t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
    await grantWorkspaceRoleToUser(b.t.services.db, ws.id, u.id, 'ws_viewer', null, b.t.clock.now());
    viewer = new Browser(b.t, '198.51.100.41');
    assert.equal((await viewer.login('vi@example.com', 'password-of-vi')).statusCode, 200);
  });
  after(async () => { await b.close(); await rm(pods.root, { recursive: true, force: true }); });

  /** The pod's cell: the apps origin proxies to the pod, which calls the gateway at its callback URL. */
  const cell = async (token: string, q: unknown) => {
    const res = await b.origin.inject({ method: 'POST', url: '/_query', headers: { cookie: `${APP_COOKIE}=${token}`, 'content-type': 'application/json' }, payload: JSON.stringify(q) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { status: number; body: { rows?: unknown[][]; truncated?: boolean; error?: string; message?: string } };
  };
  const page = (token: string, q: unknown) => b.origin.inject({ method: 'POST', url: '/_svc/query', headers: { origin: APPS_ORIGIN }, cookies: { [APP_COOKIE]: token }, payload: q as object });

  test('a pod runs SQL with its viewer\'s rights, capped at apps.max_rows; both doors share the token\'s rate limit', async () => {
    const token = await openSession({ browser: viewer, userId: viewerId, workspaceId: '' }, b.origin, appId);
    const r = await cell(token, { sql: 'SELECT i FROM range(100) t(i) ORDER BY i' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.rows, [['0'], ['1'], ['2'], ['3'], ['4']], '64-bit integers as strings');
    assert.equal(r.body.truncated, true);
    const write = await cell(token, { sql: 'CREATE TABLE t AS SELECT 1' });
    assert.equal(write.status, 400, 'a viewer reads only, whatever the app\'s code asks');
    assert.equal((await page(token, { sql: 'SELECT 1' })).statusCode, 200, 'the page\'s door, third call');
    assert.equal((await cell(token, { sql: 'SELECT 1' })).status, 200, 'fourth call');
    const over = await cell(token, { sql: 'SELECT 1' });
    assert.equal(over.status, 429, 'apps.rate_max counts the calls of both doors');
    assert.equal(over.body.error, 'too_many_requests');
    assert.equal((await page(token, { sql: 'SELECT 1' })).statusCode, 429, 'and the hold is on both');

    b.t.clock.advance(10_000);
    await b.t.services.db.deleteFrom('workspace_role_grants').where('user_id', '=', viewerId).execute();
    b.t.services.access.forget(['*']);
    assert.equal((await page(token, { sql: 'SELECT 1' })).statusCode, 403, 'rights are read at each call');
    const cut = await b.origin.inject({ method: 'POST', url: '/_query', headers: { cookie: `${APP_COOKIE}=${token}`, 'content-type': 'application/json' }, payload: '{"sql":"SELECT 1"}' });
    assert.equal(cut.statusCode, 403, 'and the pod is not reached any more');
  });

  test('without an app token the gateway answers 401; the service takes no app cookie as a credential; a deleted app\'s token is 410', async () => {
    const token = await openSession(b.admin, b.origin, appId);
    const api = (headers: Record<string, string>) => b.t.app.inject({ method: 'POST', url: '/api/apps/query', headers: { 'content-type': 'application/json', ...headers }, payload: { sql: 'SELECT 1' } });
    assert.deepEqual((await api({})).json(), { error: 'unauthorized', message: 'an X-Svc-App-Token header is required' });
    assert.equal((await api({ cookie: `${APP_COOKIE}=${token}` })).statusCode, 401, 'the app cookie is no credential for the service');
    assert.deepEqual((await api({ 'x-svc-app-token': 'x'.repeat(43) })).json(), { error: 'unauthorized', message: 'no app session: open the app again from the service' });
    const list = await b.t.app.inject({ method: 'GET', url: '/api/workspaces/default/apps', headers: { cookie: `${APP_COOKIE}=${token}` } });
    assert.equal(list.statusCode, 401, 'nor for any other route of the service');
    assert.equal((await api({ 'x-svc-app-token': token })).statusCode, 200, 'the token itself works');
    assert.equal((await b.admin.browser.delete(`/api/workspaces/default/apps/${appId}`)).statusCode, 204);
    assert.deepEqual((await api({ 'x-svc-app-token': token })).json(), { error: 'gone', message: 'this app was deleted' }, 'a deleted app\'s sessions end with it');
    assert.equal((await page(token, { sql: 'SELECT 1' })).statusCode, 410);
  });
});
