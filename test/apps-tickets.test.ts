// Opening an app on the apps origin (docs/apps.md): the ticket endpoint answers 503 without
// apps.origin; a ticket plus its postMessage secret is redeemed once on the apps listener, which
// sets its own __Host- cookie and never reads the service's; a ticket past apps.ticket_ttl_secs,
// a second redemption and a wrong secret are refused; the app token ends when idle and at its
// absolute end on a moved clock; both origins say who may frame them. Real PostgreSQL, Redis, S3.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { APP_COOKIE, buildAppsOrigin } from '../src/api/apps-origin.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { openSession } from './helpers/app-pods.js';

const APPS = 'https://apps.example.test';
const SERVICE = 'https://svc.example.test';
const A = '/api/workspaces/default/apps';

describe('app tickets without apps.origin', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestAppWithS3();
  });
  after(async () => { await t.close(); });

  test('the ticket endpoint answers 503', async () => {
    const admin = await signInAdmin(t);
    const app = (await admin.browser.post(A, { name: 'a', source: 'x = 1\n' })).json();
    await admin.browser.post(`${A}/${app.id}/publish`);
    const res = await admin.browser.post(`${A}/${app.id}/tickets`, { mode: 'run' });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().error, 'unavailable');
  });
});

describe('app tickets and tokens', () => {
  let t: TestApp;
  let admin: Admin;
  let origin: FastifyInstance;
  let appId: string;
  before(async () => {
    t = await startTestAppWithS3({
      SVC_APPS__ORIGIN: APPS, SVC_APPS__SERVICE_ORIGIN: SERVICE, SVC_APPS__TICKET_TTL_SECS: '30',
      SVC_APPS__SESSION_IDLE_SECS: '600', SVC_APPS__SESSION_ABSOLUTE_SECS: '1000', SVC_APPS__COOKIE_TTL_SECS: '1000',
    });
    origin = await buildAppsOrigin({ services: t.services });
    admin = await signInAdmin(t);
    appId = (await admin.browser.post(A, { name: 'sales', source: 'x = 1\n' })).json().id;
    assert.equal((await admin.browser.post(`${A}/${appId}/publish`)).statusCode, 201);
  });
  after(async () => { await origin.close(); await t.close(); });

  const ticket = async (mode = 'run') => {
    const res = await admin.browser.post(`${A}/${appId}/tickets`, { mode });
    assert.equal(res.statusCode, 201, res.body);
    return res.json() as { url: string; ticket: string; secret: string; version: number | null; expires_at: string };
  };
  /** What the iframe's page does once the parent posted the secret. */
  const redeem = (tk: string, secret: string, from = APPS) => origin.inject({
    method: 'POST', url: '/_svc/redeem', headers: { origin: from, 'content-type': 'application/json' }, payload: { ticket: tk, secret },
  });
  const sessionWith = (token: string) => origin.inject({ method: 'GET', url: '/_svc/session', cookies: { [APP_COOKIE]: token } });
  const cookieOf = (res: Awaited<ReturnType<typeof redeem>>) => (res.cookies as Array<{ name: string; value: string; secure?: boolean; httpOnly?: boolean; path?: string; maxAge?: number; sameSite?: string }>).find((c) => c.name === APP_COOKIE);

  test('a ticket and its secret open the app once: a __Host- HttpOnly cookie bound to person, app and version', async () => {
    const tk = await ticket();
    assert.equal(tk.url, `${APPS}/_svc/open?t=${tk.ticket}`);
    assert.ok(!tk.url.includes(tk.secret), 'the URL alone is no capability');
    assert.equal(tk.version, 1);
    const page = await origin.inject({ method: 'GET', url: `/_svc/open?t=${tk.ticket}` });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /svc-app-secret/);
    assert.ok(!page.body.includes(tk.secret));

    const res = await redeem(tk.ticket, tk.secret);
    assert.equal(res.statusCode, 204, res.body);
    const c = cookieOf(res)!;
    assert.deepEqual([c.secure, c.httpOnly, c.path, c.maxAge, c.sameSite], [true, true, '/', 1000, 'Strict']);
    const s = await sessionWith(c.value);
    assert.equal(s.statusCode, 200, s.body);
    assert.deepEqual(s.json(), { workspace: 'default', app: appId, version: 1, mode: 'run' });

    const again = await redeem(tk.ticket, tk.secret);
    assert.equal(again.statusCode, 401, 'a second redemption is refused');
    assert.equal(cookieOf(again), undefined);
  });

  test('the ticket page takes a ticket-shaped t only, and never puts it inside its script', async () => {
    // 63 characters: within what the page took before (64), so this one is about what it does with it.
    const injected = '</script><meta http-equiv=refresh content=0;url=//evil.example>';
    for (const t of [injected, `${'a'.repeat(42)}"`, 'a'.repeat(44), '']) {
      const res = await origin.inject({ method: 'GET', url: `/_svc/open?t=${encodeURIComponent(t)}` });
      assert.doesNotMatch(res.body, /<meta/, 'no markup of the request on the apps origin');
      assert.equal(res.statusCode, 400, t);
      assert.deepEqual(res.json(), { error: 'bad_request', message: 'the ticket is missing or malformed: open the app again from the service' });
    }
    const twice = await origin.inject({ method: 'GET', url: `/_svc/open?t=${'a'.repeat(43)}&t=${'b'.repeat(43)}` });
    assert.equal(twice.statusCode, 400);

    // Two tickets, one script: the ticket is data (an attribute), the script is static and is the
    // only one the page's policy allows, by its hash.
    const [a, b] = [await ticket(), await ticket()];
    const pages = await Promise.all([a, b].map((tk) => origin.inject({ method: 'GET', url: `/_svc/open?t=${tk.ticket}` })));
    const scriptOf = (body: string) => /<script data-ticket="([^"]*)" data-parent-origin="([^"]*)">([\s\S]*?)<\/script>/.exec(body);
    const [sa, sb] = pages.map((p) => scriptOf(p.body)!);
    assert.deepEqual([sa[1], sa[2]], [a.ticket, SERVICE]);
    assert.equal(sb[1], b.ticket);
    assert.equal(sa[3], sb[3], 'the script is the same for every ticket');
    assert.ok(!sa[3].includes(a.ticket), 'no request data inside the script');
    assert.equal(pages[0].body.match(/<script/g)?.length, 1);
    const hash = createHash('sha256').update(sa[3]).digest('base64');
    assert.equal(pages[0].headers['content-security-policy'], `default-src 'none'; script-src 'sha256-${hash}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors ${SERVICE}`);
  });

  test('a wrong secret, another origin, or a ticket past apps.ticket_ttl_secs are refused', async () => {
    const a = await ticket();
    assert.equal((await redeem(a.ticket, a.secret, SERVICE)).statusCode, 403, 'only the apps origin redeems');
    const b = await ticket();
    assert.equal((await redeem(b.ticket, a.secret)).statusCode, 401, 'a copied link without its secret opens nothing');
    assert.equal((await redeem(b.ticket, b.secret)).statusCode, 401, 'and the ticket is spent by the attempt');
    const c = await ticket();
    t.clock.advance(31_000);
    assert.equal((await redeem(c.ticket, c.secret)).statusCode, 401, 'past its TTL');
    const d = await ticket();
    t.clock.advance(30_000);
    assert.equal((await redeem(d.ticket, d.secret)).statusCode, 204, 'at exactly its TTL it still opens');
  });

  test('the app token ends after apps.session_idle_secs unused and apps.session_absolute_secs after minting', async () => {
    const a = await ticket();
    const idle = cookieOf(await redeem(a.ticket, a.secret))!.value;
    t.clock.advance(599_000);
    assert.equal((await sessionWith(idle)).statusCode, 200, 'used within the idle time');
    t.clock.advance(601_000);
    assert.equal((await sessionWith(idle)).statusCode, 401, 'idle past apps.session_idle_secs');

    const b = await ticket();
    const busy = cookieOf(await redeem(b.ticket, b.secret))!.value;
    for (let i = 0; i < 3; i++) {
      t.clock.advance(300_000);
      assert.equal((await sessionWith(busy)).statusCode, 200, `kept alive by use (${(i + 1) * 300} s)`);
    }
    t.clock.advance(101_000);
    assert.equal((await sessionWith(busy)).statusCode, 401, 'past apps.session_absolute_secs however used');
  });

  test('edit mode needs ws_editor and binds no version; the apps origin ignores the service cookie', async () => {
    const tk = await ticket('edit');
    assert.equal(tk.version, null);
    const token = cookieOf(await redeem(tk.ticket, tk.secret))!.value;
    assert.equal((await sessionWith(token)).json().mode, 'edit');
    const serviceCookie = admin.browser.cookies.get(t.config.session.cookie_name)!;
    const res = await origin.inject({ method: 'GET', url: '/_svc/session', cookies: { [t.config.session.cookie_name]: serviceCookie } });
    assert.equal(res.statusCode, 401, 'a service session opens nothing on the apps origin');
  });

  test('the ticket POST needs the CSRF header; with apps.pod.launcher = none an app session is a 503 for the app itself', async () => {
    const res = await admin.browser.post(`${A}/${appId}/tickets`, { mode: 'run' }, { csrf: false });
    assert.equal(res.statusCode, 403, res.body);
    assert.match(res.json().message, /CSRF/);
    const tk = await ticket();
    const token = cookieOf(await redeem(tk.ticket, tk.secret))!.value;
    const app = await origin.inject({ method: 'GET', url: '/', cookies: { [APP_COOKIE]: token } });
    assert.deepEqual([app.statusCode, app.json()], [503, { error: 'unavailable', message: 'apps are not run here: apps.pod.launcher is none' }]);
    assert.match(app.headers['content-security-policy'] as string, new RegExp(`frame-ancestors ${SERVICE}$`));
  });

  test('framing: only apps.service_origin may frame the apps origin; the service frames nobody in', async () => {
    for (const url of ['/_svc/open?t=x', '/_svc/session', '/nope']) {
      const res = await origin.inject({ method: 'GET', url });
      assert.match(res.headers['content-security-policy'] as string, new RegExp(`frame-ancestors ${SERVICE}(;|$)`), url);
    }
    const ui = await admin.browser.get('/');
    assert.match(ui.headers['content-security-policy'] as string, /frame-ancestors 'none'/);
    assert.match(ui.headers['content-security-policy'] as string, new RegExp(`; frame-src ${APPS}$`), 'the console may frame the apps origin, and only it');
  });
});

describe('the query gateway', () => {
  let t: TestApp;
  let admin: Admin;
  let origin: FastifyInstance;
  let appId: string;
  before(async () => {
    t = await startTestAppWithS3({
      SVC_ENGINES__PROVISIONER: 'none', SVC_APPS__ORIGIN: APPS, SVC_APPS__SERVICE_ORIGIN: SERVICE,
      SVC_APPS__MAX_ROWS: '7', SVC_APPS__RATE_MAX: '3', SVC_APPS__RATE_WINDOW_SECS: '10',
    });
    origin = await buildAppsOrigin({ services: t.services });
    admin = await signInAdmin(t);
    appId = (await admin.browser.post(A, { name: 'g', source: 'x = 1\n' })).json().id;
    await admin.browser.post(`${A}/${appId}/publish`);
  });
  after(async () => { await origin.close(); await t.close(); });

  const openApp = async (b = admin.browser, mode = 'run') => {
    const tk = (await b.post(`${A}/${appId}/tickets`, { mode })).json();
    const res = await origin.inject({ method: 'POST', url: '/_svc/redeem', headers: { origin: APPS }, payload: { ticket: tk.ticket, secret: tk.secret } });
    assert.equal(res.statusCode, 204, res.body);
    return (res.cookies as Array<{ name: string; value: string }>).find((c) => c.name === APP_COOKIE)!.value;
  };
  const query = (token: string, payload: unknown) => origin.inject({ method: 'POST', url: '/_svc/query', headers: { origin: APPS }, cookies: { [APP_COOKIE]: token }, payload: payload as object });
  /** A signed-in person with `role` in the default workspace. */
  const member = async (name: string, role: 'ws_viewer' | 'ws_editor', ip: string) => {
    const u = await createLocalUser(t.services.db, { email: `${name}@example.com`, password: `password-of-${name}` });
    const ws = await t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
    await grantWorkspaceRoleToUser(t.services.db, ws.id, u.id, role, null, t.clock.now());
    const b = new Browser(t, ip);
    assert.equal((await b.login(`${name}@example.com`, `password-of-${name}`)).statusCode, 200);
    return { id: u.id, browser: b };
  };

  test('an app runs SQL as its viewer, capped at apps.max_rows', async () => {
    // A fresh app session per call keeps these below apps.rate_max (the next test is about it).
    const r = await query(await openApp(), { sql: 'SELECT i FROM range(100) t(i) ORDER BY i' });
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.json().rows.length, 7);
    assert.equal(r.json().truncated, true);
    const p = await query(await openApp(), { sql: 'SELECT $1::INTEGER + 1 AS n', params: [41] });
    assert.deepEqual(p.json().rows, [[42]]);
    const bad = await query(await openApp(), { sql: 'SELECT * FROM no_such_table' });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error, 'bad_request');
    assert.equal((await query(await openApp(), { sql: 'SELECT 1', params: [{ nested: 1 }] })).statusCode, 400);
    assert.equal((await query('x'.repeat(43), { sql: 'SELECT 1' })).statusCode, 401);
  });

  test('over apps.rate_max calls in the window answer 429 and hold the token a full window', async () => {
    t.clock.advance(60_000);
    const token = await openApp();
    for (let i = 0; i < 3; i++) assert.equal((await query(token, { sql: 'SELECT 1' })).statusCode, 200, `call ${i + 1}`);
    const over = await query(token, { sql: 'SELECT 1' });
    assert.equal(over.statusCode, 429);
    assert.equal(over.headers['retry-after'], '10');
    t.clock.advance(9_000);
    assert.equal((await query(token, { sql: 'SELECT 1' })).statusCode, 429, 'the first window has ended, but the hold has not');
    const other = await openApp();
    assert.equal((await query(other, { sql: 'SELECT 1' })).statusCode, 200, 'the hold is per token');
    t.clock.advance(1_000);
    assert.equal((await query(token, { sql: 'SELECT 1' })).statusCode, 200, 'after one full window from the refusal');
  });

  test('a viewer runs the published app with their own rights, not the author\'s; a revoked grant ends it', async () => {
    const { id: userId, browser: viewer } = await member('vi', 'ws_viewer', '198.51.100.40');
    assert.equal((await viewer.post(`${A}/${appId}/tickets`, { mode: 'edit' })).statusCode, 403, 'a viewer never opens edit mode');
    const token = await openApp(viewer);
    const write = await query(token, { sql: 'CREATE TABLE t AS SELECT 1' });
    assert.equal(write.statusCode, 400, 'a viewer reads only, whatever the app asks');
    assert.equal((await query(token, { sql: 'SELECT 1 AS one' })).json().rows[0][0], 1);
    const unspent = (await viewer.post(`${A}/${appId}/tickets`, { mode: 'run' })).json();
    await t.services.db.deleteFrom('workspace_role_grants').where('user_id', '=', userId).execute();
    t.services.access.forget(['*']);
    const gone = await query(token, { sql: 'SELECT 1' });
    assert.equal(gone.statusCode, 403, 'rights are read at each call');
    // The app itself ends too: every request to it re-reads the rights (before any pod is asked).
    const app = await origin.inject({ method: 'GET', url: '/', cookies: { [APP_COOKIE]: token } });
    assert.deepEqual([app.statusCode, app.json()], [403, { error: 'forbidden', message: 'no longer a member of workspace default' }]);
    const late = await origin.inject({ method: 'POST', url: '/_svc/redeem', headers: { origin: APPS }, payload: { ticket: unspent.ticket, secret: unspent.secret } });
    assert.equal(late.statusCode, 403, 'a ticket issued before the grant was revoked opens nothing');
    assert.equal(late.cookies.length, 0);
  });

  test('an editor demoted to viewer loses an open edit session, not a run session', async () => {
    const editor = await member('ed', 'ws_editor', '198.51.100.42');
    const edit = await openApp(editor.browser, 'edit');
    const run = await openApp(editor.browser, 'run');
    await t.services.db.updateTable('workspace_role_grants').set({ role: 'ws_viewer' }).where('user_id', '=', editor.id).execute();
    t.services.access.forget(['*']);
    const get = (token: string) => origin.inject({ method: 'GET', url: '/', cookies: { [APP_COOKIE]: token } });
    assert.deepEqual((await get(edit)).json(), { error: 'forbidden', message: 'editing this app requires ws_editor in workspace default' });
    assert.equal((await get(run)).statusCode, 503, 'run mode goes on (to the launcher, none here)');
  });
});

describe('the query gateway of an edit session', () => {
  let t: TestApp;
  let admin: Admin;
  let origin: FastifyInstance;
  before(async () => {
    t = await startTestAppWithS3({ SVC_ENGINES__PROVISIONER: 'none', SVC_APPS__ORIGIN: APPS, SVC_APPS__SERVICE_ORIGIN: SERVICE });
    origin = await buildAppsOrigin({ services: t.services });
    admin = await signInAdmin(t);
  });
  after(async () => { await origin.close(); await t.close(); });

  test('needs ws_editor now on both doors: a grant lowered to ws_viewer between two calls ends it; a run session goes on', async () => {
    // An editor through a group grant, changed by a workspace admin through the API (which drops
    // the cached access snapshots, as any grant change does).
    const u = await createLocalUser(t.services.db, { email: 'demoted@example.com', password: 'password-of-demoted' });
    assert.equal((await admin.browser.post('/api/groups', { name: 'authors' })).statusCode, 201);
    assert.equal((await admin.browser.put(`/api/groups/authors/members/${u.id}`)).statusCode, 200);
    const grant = async (role: string) => assert.equal((await admin.browser.put('/api/workspaces/default/members/groups/authors', { role })).statusCode, 200);
    await grant('ws_editor');
    const editor = new Browser(t, '198.51.100.43');
    assert.equal((await editor.login('demoted@example.com', 'password-of-demoted')).statusCode, 200);
    const appId = (await editor.post(A, { name: 'drafting', source: 'x = 1\n' })).json().id;
    assert.equal((await editor.post(`${A}/${appId}/publish`)).statusCode, 201);
    const edit = await openSession({ browser: editor, userId: u.id, workspaceId: '' }, origin, appId, 'edit');
    const run = await openSession({ browser: editor, userId: u.id, workspaceId: '' }, origin, appId, 'run');
    const page = (token: string) => origin.inject({ method: 'POST', url: '/_svc/query', headers: { origin: APPS }, cookies: { [APP_COOKIE]: token }, payload: { sql: 'SELECT 1 AS one' } });
    const pod = (token: string) => t.app.inject({ method: 'POST', url: '/api/apps/query', headers: { 'x-svc-app-token': token }, payload: { sql: 'SELECT 1 AS one' } });
    for (const door of [page, pod]) assert.equal((await door(edit)).statusCode, 200, 'an editor\'s edit session queries');

    await grant('ws_viewer');
    const refused = { error: 'forbidden', message: 'editing this app requires ws_editor in workspace default' };
    for (const door of [page, pod]) {
      const res = await door(edit);
      assert.equal(res.statusCode, 403, res.body);
      assert.deepEqual(res.json(), refused);
    }
    for (const door of [page, pod]) assert.equal((await door(run)).statusCode, 200, 'a viewer\'s run session goes on');

    await grant('ws_editor');
    assert.equal((await page(edit)).statusCode, 200, 'the right is read at each call, both ways');
  });
});

describe('the query gateway: apps.timeout_secs', () => {
  let t: TestApp;
  let origin: FastifyInstance;
  before(async () => {
    t = await startTestAppWithS3({
      SVC_ENGINES__PROVISIONER: 'none', SVC_APPS__ORIGIN: APPS, SVC_APPS__SERVICE_ORIGIN: SERVICE, SVC_APPS__TIMEOUT_SECS: '1',
    });
    origin = await buildAppsOrigin({ services: t.services });
  });
  after(async () => { await origin.close(); await t.close(); });

  test('a query running past apps.timeout_secs is cancelled and answers 503, well before the engine\'s own timeout', async () => {
    assert.equal(t.config.engine.query_timeout_secs, 60);
    const admin = await signInAdmin(t);
    const appId = (await admin.browser.post(A, { name: 'slow', source: 'x = 1\n' })).json().id;
    await admin.browser.post(`${A}/${appId}/publish`);
    const token = await openSession(admin, origin, appId);
    const res = await origin.inject({ method: 'POST', url: '/_svc/query', headers: { origin: APPS }, cookies: { [APP_COOKIE]: token }, payload: { sql: 'SELECT count(*) FROM range(100000000000) a' } });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().error, 'unavailable');
    assert.equal(res.json().message, 'query timed out: past 1 s (apps.timeout_secs), cancelled', 'apps.timeout_secs, not engine.query_timeout_secs (60 s)');
  });
});
