// Local sign-in, sessions, CSRF, rate limiting and each role's reach, through the real routes on a
// real database, with a clock the tests move.
import { test, before, beforeEach, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { query } from './helpers/db.js';

let t: TestApp;
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

before(async () => {
  t = await startTestApp();
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
});
after(async () => { await t.close(); });
// Each test starts with fresh rate-limit windows: the administrator signs in in many tests.
beforeEach(() => { t.clock.advance(301_000); });

describe('local sign-in', () => {
  test('right password: 200 with the user, session and CSRF cookies with the stated attributes', async () => {
    const b = new Browser(t, '198.51.100.1');
    const res = await b.login(ADMIN.email, ADMIN.password);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().user.email, ADMIN.email);
    assert.equal(res.json().user.password_hash, undefined);
    const setCookie = ([] as string[]).concat(res.headers['set-cookie'] as string[]);
    const session = setCookie.find((c) => c.startsWith('svc_session='))!;
    const csrf = setCookie.find((c) => c.startsWith('svc_csrf='))!;
    assert.match(session, /HttpOnly/i);
    assert.match(session, /SameSite=Lax/i);
    assert.match(session, /Path=\//);
    assert.match(session, /Max-Age=86400/);
    assert.doesNotMatch(session, /Secure/);
    assert.doesNotMatch(csrf, /HttpOnly/i, 'the page reads the CSRF cookie');
    const me = await b.get('/api/me');
    assert.equal(me.statusCode, 200);
    assert.deepEqual(me.json().platform_roles, ['platform_admin']);
    assert.deepEqual(me.json().workspaces.map((w: { slug: string; role: string }) => [w.slug, w.role]), [['default', 'ws_admin']]);
  });

  test('only a hash of the session cookie is stored', async () => {
    const b = new Browser(t, '198.51.100.2');
    await b.login(ADMIN.email, ADMIN.password);
    const token = b.cookies.get('svc_session')!;
    const rows = await query<{ id_hash: Buffer }>(t.db.url, 'SELECT id_hash FROM sessions');
    assert.ok(rows.length > 0);
    for (const r of rows) assert.ok(!r.id_hash.toString('base64url').includes(token) && !r.id_hash.toString().includes(token));
    const dump = JSON.stringify(await query(t.db.url, 'SELECT * FROM sessions'));
    assert.ok(!dump.includes(token));
  });

  test('wrong password and unknown email get the same 401', async () => {
    const b = new Browser(t, '198.51.100.3');
    const wrong = await b.login(ADMIN.email, 'nope-nope-nope');
    const unknown = await b.login('ghost@example.test', 'nope-nope-nope');
    assert.equal(wrong.statusCode, 401);
    assert.equal(unknown.statusCode, 401);
    assert.deepEqual(wrong.json(), unknown.json());
    assert.deepEqual(wrong.json(), { error: 'unauthorized', message: 'invalid email or password' });
    assert.equal(wrong.headers['set-cookie'], undefined);
  });

  test('a malformed body is a 400 naming the field, never a 500', async () => {
    const b = new Browser(t, '198.51.100.4');
    const res = await b.post('/api/auth/login', { email: 'x@y.z' });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().message, /password/);
    const bad = await t.app.inject({ method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.4' }, payload: '{"email":' });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error, 'bad_request');
  });

  test('rate limit: the 6th attempt in the window gets 429 (successes count) until the lockout ends', async () => {
    const b = new Browser(t, '192.0.2.50');
    for (let i = 0; i < 3; i++) assert.equal((await b.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    for (let i = 0; i < 2; i++) assert.equal((await b.login(ADMIN.email, 'wrong-password')).statusCode, 401);
    const sixth = await b.login(ADMIN.email, ADMIN.password);
    assert.equal(sixth.statusCode, 429);
    assert.equal(sixth.headers['retry-after'], '300');
    assert.equal(sixth.json().error, 'too_many_requests');
    t.clock.advance(299_000);
    assert.equal((await b.login(ADMIN.email, ADMIN.password)).statusCode, 429, 'still blocked before the lockout ends');
    t.clock.advance(2_000);
    assert.equal((await b.login(ADMIN.email, ADMIN.password)).statusCode, 200, 'counting again after the lockout');
  });

  test('rate limit per email holds across addresses; the first hop of X-Forwarded-For is the address', async () => {
    await t.services.db.insertInto('users').values({ email: 'target@example.test', is_local: true, password_hash: null, sub: null, name: null }).execute();
    for (let i = 0; i < 5; i++) {
      const b = new Browser(t, `10.9.${i}.1, 127.0.0.1`);
      assert.equal((await b.login('target@example.test', 'guess-guess')).statusCode, 401);
    }
    assert.equal((await new Browser(t, '10.9.99.1').login('target@example.test', 'guess-guess')).statusCode, 429);
    assert.equal((await new Browser(t, '10.9.99.1').login(ADMIN.email, ADMIN.password)).statusCode, 200, 'another email from that address still works');
    t.clock.advance(301_000);
  });

  test('a 16 KB X-Forwarded-For is counted under its hash, and a blocked address stores no new email keys', async () => {
    const huge = `198.18.${'7'.repeat(16 * 1024)}`;
    const limiter = t.services.loginLimiter;
    const before = limiter.bytes;
    for (let i = 0; i < 5; i++) assert.equal((await new Browser(t, huge).login(`nobody${i}@example.test`, 'guess-guess')).statusCode, 401);
    assert.ok(limiter.bytes - before < 6 * 500, `5 attempts of a 16 KB address grew the table by ${limiter.bytes - before} bytes`);
    assert.equal((await new Browser(t, huge).login('sixth@example.test', 'guess-guess')).statusCode, 429, 'the 6th attempt blocks the address');
    const size = limiter.size;
    for (let i = 0; i < 50; i++) assert.equal((await new Browser(t, huge).login(`other${i}@example.test`, 'guess-guess')).statusCode, 429);
    assert.equal(limiter.size, size, 'refused outright: no new key');
    t.clock.advance(301_000);
  });
});

describe('login CSRF', () => {
  const login = (headers: Record<string, string>, payload: string) =>
    t.app.inject({ method: 'POST', url: '/api/auth/login', headers: { host: 'svc.example.test', 'x-forwarded-for': '198.51.100.60', ...headers }, payload });
  const form = new URLSearchParams({ email: ADMIN.email, password: ADMIN.password }).toString();
  const json = JSON.stringify({ email: ADMIN.email, password: ADMIN.password });
  const refused = (res: { statusCode: number; headers: Record<string, unknown>; json(): { error: string; message: string } }, why: RegExp) => {
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error, 'forbidden');
    assert.match(res.json().message, why);
    assert.equal(res.headers['set-cookie'], undefined, 'no session');
  };

  test('a cross-site form post is refused: by Sec-Fetch-Site, by Origin, and without either', async () => {
    const ct = { 'content-type': 'application/x-www-form-urlencoded' };
    refused(await login({ ...ct, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, form), /cross-site/);
    refused(await login({ ...ct, 'sec-fetch-site': 'same-site', origin: 'https://apps.svc.example.test' }, form), /cross-site/);
    refused(await login({ ...ct, origin: 'https://evil.example' }, form), /cross-site/);
    refused(await login({ ...ct, origin: 'null' }, form), /cross-site/);
    refused(await login(ct, form), /JSON body/);
    // the text/plain trick (a form whose body looks like JSON) and a JSON body marked cross-site
    refused(await login({ 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site' }, json), /cross-site/);
    refused(await login({ 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' }, json), /cross-site/);
    refused(await login({ 'content-type': 'text/plain' }, json), /JSON body/);
    // none of these counted as an attempt
    assert.equal(t.services.loginLimiter.blocked([`email:${ADMIN.email}`]).allowed, true);
  });

  test('same-origin posts and JSON from scripts sign in', async () => {
    const ok = async (headers: Record<string, string>, payload: string) => {
      const res = await login(headers, payload);
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(([] as string[]).concat(res.headers['set-cookie'] as string[]).some((c) => c.startsWith('svc_session=')));
    };
    await ok({ 'content-type': 'application/json', 'sec-fetch-site': 'same-origin', origin: 'https://svc.example.test' }, json);
    await ok({ 'content-type': 'application/x-www-form-urlencoded', origin: 'https://svc.example.test' }, form);
    await ok({ 'content-type': 'application/x-www-form-urlencoded', origin: 'https://svc.example.test', host: 'svc:8080', 'x-forwarded-host': 'svc.example.test' }, form);
    await ok({ 'content-type': 'application/json; charset=utf-8' }, json);
    t.clock.advance(301_000);
  });
});

describe('__Host- cookie names', () => {
  test('configured __Host- names get Secure, Path=/ and no Domain even without session.secure, and sessions and CSRF work with them', async () => {
    const app = await startTestApp({ SVC_SESSION__COOKIE_NAME: '__Host-svc_session', SVC_CSRF__COOKIE_NAME: '__Host-svc_csrf' });
    try {
      await initAdministrator(app.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
      const b = new Browser(app, '198.51.100.70');
      const res = await b.login(ADMIN.email, ADMIN.password);
      assert.equal(res.statusCode, 200, res.body);
      for (const name of ['__Host-svc_session', '__Host-svc_csrf']) {
        const c = ([] as string[]).concat(res.headers['set-cookie'] as string[]).find((x) => x.startsWith(`${name}=`));
        assert.ok(c, name);
        assert.match(c, /; Secure/);
        assert.match(c, /; Path=\/(;|$)/);
        assert.doesNotMatch(c, /Domain=/i);
      }
      assert.equal((await b.get('/api/me')).statusCode, 200);
      assert.equal((await b.post('/api/groups', { name: 'prefixed' }, { csrf: false })).statusCode, 403);
      assert.equal((await b.post('/api/groups', { name: 'prefixed' })).statusCode, 201);
      assert.equal((await b.post('/api/auth/logout')).statusCode, 204);
      assert.equal((await b.get('/api/me')).statusCode, 401);
    } finally {
      await app.close();
    }
  });
});

describe('sessions', () => {
  test('idle expiry after idle_ttl_minutes without a request; activity keeps it alive', async () => {
    const b = new Browser(t, '198.51.100.10');
    await b.login(ADMIN.email, ADMIN.password);
    for (let i = 0; i < 3; i++) {
      t.clock.advance(50 * 60_000);
      assert.equal((await b.get('/api/me')).statusCode, 200, `alive after ${(i + 1) * 50} min of activity`);
    }
    t.clock.advance(61 * 60_000);
    assert.equal((await b.get('/api/me')).statusCode, 401);
  });

  test('absolute expiry after absolute_ttl_hours however active', async () => {
    const b = new Browser(t, '198.51.100.11');
    await b.login(ADMIN.email, ADMIN.password);
    for (let h = 0; h < 24; h++) {
      t.clock.advance(59 * 60_000);
      const r = await b.get('/api/me');
      if (h < 24 && (h + 1) * 59 < 24 * 60) assert.equal(r.statusCode, 200, `alive at ${(h + 1) * 59} min`);
    }
    t.clock.advance(60 * 60_000);
    assert.equal((await b.get('/api/me')).statusCode, 401, 'ended after 24 h');
  });

  test('logout ends the session and clears the cookies; it needs the CSRF header', async () => {
    const b = new Browser(t, '198.51.100.12');
    await b.login(ADMIN.email, ADMIN.password);
    assert.equal((await b.post('/api/auth/logout', undefined, { csrf: false })).statusCode, 403);
    const token = b.cookies.get('svc_session')!;
    const out = await b.post('/api/auth/logout');
    assert.equal(out.statusCode, 204);
    assert.equal(b.cookies.has('svc_session'), false);
    const again = await t.app.inject({ method: 'GET', url: '/api/me', headers: { cookie: `svc_session=${token}` } });
    assert.equal(again.statusCode, 401, 'the old cookie no longer works');
  });

  test('auth config says whether SSO is on and sets no cookie', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/auth/config' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { sso: false, sso_login_url: null, local_login: true, csrf_header: 'X-Svc-CSRF', csrf_cookie: 'svc_csrf', signed_in: false });
    assert.equal(res.headers['set-cookie'], undefined);
    // With a live session it says so: the console asks /api/me only then (issue 28: a 401 in the
    // browser's console on every load before sign-in).
    const b = new Browser(t, '198.51.100.19');
    await b.login(ADMIN.email, ADMIN.password);
    assert.equal((await b.get('/api/auth/config')).json().signed_in, true);
    await b.post('/api/auth/logout');
    assert.equal((await b.get('/api/auth/config')).json().signed_in, false);
  });
});

describe('CSRF', () => {
  test('every state-changing route authenticated by the session cookie refuses a request without the header', async () => {
    const b = new Browser(t, '198.51.100.20');
    await b.login(ADMIN.email, ADMIN.password);
    const doc = t.app.swagger() as { paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>> };
    const exempt = new Set(['POST /api/auth/login', 'POST /api/auth/oidc/backchannel-logout', 'POST /oauth/token']);
    let checked = 0;
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) {
        const m = method.toUpperCase();
        if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(m) || exempt.has(`${m} ${p}`) || p.startsWith('/workflows/v1/{ws}/executions/webhook')) continue;
        // Bearer-only families (catalog, policy service) never read the cookie, so a forged
        // cross-site request carries no credential there; the document says which ones take it.
        const security = ops[method]!.security;
        if (security && !security.some((s) => 'session' in s)) continue;
        const url = p.replace(/\{[^}]+\}/g, 'x');
        const res = await b.request(m, url, {}, { csrf: false });
        assert.equal(res.statusCode, 403, `${m} ${p} without CSRF header`);
        assert.match(res.json().message, /CSRF/);
        const wrong = await b.request(m, url, {}, { csrf: false, headers: { 'x-svc-csrf': 'forged' } });
        assert.equal(wrong.statusCode, 403, `${m} ${p} with a forged CSRF header`);
        checked++;
      }
    }
    assert.ok(checked >= 8, `checked ${checked} routes`);
  });

  test('with the header the same request goes through', async () => {
    const b = new Browser(t, '198.51.100.21');
    await b.login(ADMIN.email, ADMIN.password);
    const res = await b.post('/api/groups', { name: 'csrf-ok' });
    assert.equal(res.statusCode, 201, res.body);
  });
});

describe('each role reach', () => {
  const users = {
    viewer: { email: 'viewer@example.test', password: 'viewer-password' },
    editor: { email: 'editor@example.test', password: 'editor-password' },
    wsadmin: { email: 'wsadmin@example.test', password: 'wsadmin-password' },
    nobody: { email: 'nobody@example.test', password: 'nobody-password' },
    padmin: { email: 'padmin@example.test', password: 'padmin-password' },
  };
  const as: Record<string, Browser> = {};

  before(async () => {
    const admin = new Browser(t, '198.51.100.30');
    assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    assert.equal((await admin.post('/api/workspaces', { slug: 'sales', name: 'Sales' })).statusCode, 201);
    let ip = 31;
    for (const [role, u] of Object.entries(users)) {
      assert.equal((await admin.post('/api/users', u)).statusCode, 201);
      assert.equal((await admin.post('/api/groups', { name: `g-${role}` })).statusCode, 201);
      assert.equal((await admin.put(`/api/groups/g-${role}/members/${u.email}`)).statusCode, 200);
      as[role] = new Browser(t, `198.51.100.${ip++}`);
    }
    for (const [role, wsRole] of [['viewer', 'ws_viewer'], ['editor', 'ws_editor'], ['wsadmin', 'ws_admin']]) {
      const r = await admin.put(`/api/workspaces/sales/members/groups/g-${role}`, { role: wsRole });
      assert.equal(r.statusCode, 200, r.body);
    }
    assert.equal((await admin.put('/api/groups/g-padmin/platform-role')).statusCode, 200);
    for (const [role, u] of Object.entries(users)) assert.equal((await as[role].login(u.email, u.password)).statusCode, 200);
  });

  test('/api/me shows each role', async () => {
    const roles = async (b: Browser) => (await b.get('/api/me')).json();
    assert.deepEqual((await roles(as.viewer)).workspaces, [{ slug: 'sales', name: 'Sales', role: 'ws_viewer', permissions: [] }]);
    assert.deepEqual((await roles(as.editor)).workspaces, [{ slug: 'sales', name: 'Sales', role: 'ws_editor', permissions: [] }]);
    assert.deepEqual((await roles(as.wsadmin)).workspaces, [{ slug: 'sales', name: 'Sales', role: 'ws_admin', permissions: ['workflow:use_secrets'] }]);
    const nobody = await roles(as.nobody);
    assert.deepEqual(nobody.workspaces, []);
    assert.deepEqual(nobody.platform_roles, []);
    assert.deepEqual((await roles(as.padmin)).platform_roles, ['platform_admin']);
  });

  test('workspace reach: viewer and editor read, ws_admin manages members, others see 404', async () => {
    for (const r of ['viewer', 'editor', 'wsadmin', 'padmin']) assert.equal((await as[r].get('/api/workspaces/sales')).statusCode, 200, r);
    assert.equal((await as.nobody.get('/api/workspaces/sales')).statusCode, 404, 'a non-member does not learn the workspace exists');
    assert.equal((await as.nobody.get('/api/workspaces/missing')).statusCode, 404);
    assert.equal((await as.viewer.get('/api/workspaces/sales/members')).statusCode, 403);
    assert.equal((await as.editor.put('/api/workspaces/sales/members/groups/x', { role: 'ws_viewer' })).statusCode, 403);
    assert.equal((await as.wsadmin.get('/api/workspaces/sales/members')).statusCode, 200);
    const grant = await as.wsadmin.put('/api/workspaces/sales/members/groups/new-team', { role: 'ws_viewer' });
    assert.equal(grant.statusCode, 200, grant.body);
    assert.equal((await as.padmin.get('/api/workspaces/sales/members')).statusCode, 200);
  });

  test('platform reach: only platform_admin lists users, groups, workspaces and audit', async () => {
    for (const url of ['/api/users', '/api/groups', '/api/workspaces', '/api/audit']) {
      for (const r of ['viewer', 'editor', 'wsadmin', 'nobody']) assert.equal((await as[r].get(url)).statusCode, 403, `${r} ${url}`);
      assert.equal((await as.padmin.get(url)).statusCode, 200, `padmin ${url}`);
    }
    assert.equal((await as.wsadmin.post('/api/workspaces', { slug: 'hack' })).statusCode, 403);
    assert.equal((await as.wsadmin.put('/api/groups/g-wsadmin/platform-role')).statusCode, 403);
  });

  test('revoking a grant takes effect on the next request', async () => {
    const admin = new Browser(t, '198.51.100.40');
    await admin.login(ADMIN.email, ADMIN.password);
    assert.equal((await as.viewer.get('/api/workspaces/sales')).statusCode, 200);
    // /api/me keeps its serialised answer beside the access snapshot: it must go with the snapshot
    assert.deepEqual((await as.viewer.get('/api/me')).json().workspaces.map((w: { slug: string }) => w.slug), ['sales']);
    assert.equal((await admin.delete('/api/workspaces/sales/members/groups/g-viewer')).statusCode, 200);
    assert.equal((await as.viewer.get('/api/workspaces/sales')).statusCode, 404);
    const me = await as.viewer.get('/api/me');
    assert.deepEqual(me.json().workspaces, [], 'the revoked workspace is gone from /api/me on the next request');
    assert.equal(me.headers['content-type'], 'application/json; charset=utf-8');
  });

  test('authorization decisions and governance changes are in the audit log', async () => {
    const res = await as.padmin.get('/api/audit?limit=500');
    const events = res.json().events as Array<{ kind: string; action: string; decision: string | null; actor: string | null }>;
    assert.ok(events.some((e) => e.kind === 'authz' && e.decision === 'deny'), 'a denied decision');
    assert.ok(events.some((e) => e.kind === 'authz' && e.decision === 'allow'), 'an allowed decision');
    for (const a of ['user.create', 'group.create', 'group.member.add', 'workspace.create', 'workspace.grant', 'workspace.revoke', 'platform.grant']) {
      assert.ok(events.some((e) => e.kind === 'governance' && e.action === a), a);
    }
    const page = await as.padmin.get('/api/audit?limit=2');
    assert.equal(page.json().events.length, 2);
    const next = await as.padmin.get(`/api/audit?limit=2&before=${page.json().next_before}`);
    assert.ok(BigInt(next.json().events[0].id) < BigInt(page.json().events[1].id) + 1n);
  });

  test('governance errors are clear 4xx: duplicate user, local group conflicts, SSO group membership', async () => {
    const admin = new Browser(t, '198.51.100.41');
    await admin.login(ADMIN.email, ADMIN.password);
    const dup = await admin.post('/api/users', users.viewer);
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().message, 'user already exists: viewer@example.test');
    assert.equal((await admin.post('/api/groups', { name: 'g-viewer' })).statusCode, 409);
    const idp = await admin.put('/api/groups/new-team/members/viewer@example.test');
    assert.equal(idp.statusCode, 400);
    assert.match(idp.json().message, /come from the groups claim/);
    assert.equal((await admin.put('/api/groups/nope/members/viewer@example.test')).statusCode, 404);
    assert.equal((await admin.put('/api/workspaces/sales/members/groups/x', { role: 'owner' })).statusCode, 400);
  });
});
