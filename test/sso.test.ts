// Single sign-on end to end against a real OpenID provider (the `oidc-provider` package on a
// loopback port): the login redirect, the callback with user and group synchronisation, the
// failure page, and back-channel logout. The service runs in-process through inject(); the
// provider's redirects back to it are replayed as requests to the callback route.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { query } from './helpers/db.js';
import { startOidcProvider, signInAtProvider, signOutAtProvider, CookieJar, type OidcProviderHandle } from './helpers/oidc-provider.js';
import { freePort } from './helpers/net.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { openState, sealState, stateCookieKey } from '../src/auth/state-cookie.js';
import { profileFromClaims, SsoClaimsError } from '../src/identity/sso.js';
import { safeReturnPath } from '../src/api/routes/oidc.js';

const CLIENT_ID = 'svc-test';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const SECRET_KEY = randomBytes(64).toString('base64');
// Requests to the service go through inject(); it also listens on this port so that the
// provider's own back-channel logout calls reach it.
let ORIGIN = '';
let REDIRECT_URL = '';
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };
const START_AGAIN = 'The sign-in request expired or was already used. Start again.';

let op: OidcProviderHandle;
let t: TestApp;
let ipSeq = 1;

function ssoEnv(issuer: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SVC_OIDC__ENABLED: 'true',
    SVC_OIDC__ISSUER_URL: issuer,
    SVC_OIDC__CLIENT_ID: CLIENT_ID,
    SVC_OIDC__CLIENT_SECRET: CLIENT_SECRET,
    SVC_OIDC__REDIRECT_URL: REDIRECT_URL,
    SVC_OIDC__SCOPES: '["openid","email","profile","groups"]',
    SVC_SECURITY__SECRET_KEY: SECRET_KEY,
    ...extra,
  };
}

before(async () => {
  const port = await freePort();
  ORIGIN = `http://127.0.0.1:${port}`;
  REDIRECT_URL = `${ORIGIN}/api/auth/oidc/callback`;
  op = await startOidcProvider({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: [REDIRECT_URL],
    backchannelLogoutUri: `${ORIGIN}/api/auth/oidc/backchannel-logout`,
    accounts: {
      alice: { email: 'alice@example.test', name: 'Alice Liddell', groups: ['analysts', 'team-a'] },
      bob: { email: 'bob@example.test', name: 'Bob', groups: ['analysts'] },
      carol: { email: 'Carol@Example.test', name: 'Carol', groups: ['analysts'] },
      erin: { email: 'erin@example.test', name: 'Erin', groups: ['data-team', 42, null, '', '/path/group'] as unknown as string[] },
      frank: { email: 'frank@example.test', name: 'Frank', groups: [] },
      gina: { email: 'gina@example.test', name: 'Gina', groups: ['racers', 'analysts'] },
    },
  });
  t = await startTestApp(ssoEnv(op.issuer));
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  await t.app.listen({ port, host: '127.0.0.1' });
});
after(async () => {
  await t?.close();
  await op?.stop();
});

const newBrowser = () => new Browser(t, `198.51.100.${ipSeq++}`);

async function adminBrowser(): Promise<Browser> {
  const b = newBrowser();
  const res = await b.login(ADMIN.email, ADMIN.password);
  assert.equal(res.statusCode, 200, res.body);
  return b;
}

/** Starts the sign-in at the service, signs `sub` in at the provider, returns the callback URL. */
async function toCallback(b: Browser, sub: string, jar = new CookieJar()): Promise<string> {
  const login = await b.get('/api/auth/oidc/login');
  assert.equal(login.statusCode, 302, login.body);
  const back = await signInAtProvider(login.headers.location as string, sub, jar);
  assert.equal(`${back.origin}${back.pathname}`, REDIRECT_URL);
  return `/api/auth/oidc/callback${back.search}`;
}

async function ssoSignIn(sub: string, b = newBrowser()) {
  const providerJar = new CookieJar();
  const cb = await toCallback(b, sub, providerJar);
  const res = await b.get(cb);
  return { b, res, cb, providerJar };
}

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  return ([] as string[]).concat((res.headers['set-cookie'] as string[] | string | undefined) ?? []);
}

function assertFailurePage(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, sentence: string | RegExp) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.match(res.body, /<h1>Sign-in failed<\/h1>/);
  if (typeof sentence === 'string') assert.ok(res.body.includes(sentence), `page says: ${sentence}\n${res.body}`);
  else assert.match(res.body, sentence);
  assert.match(res.body, /<a href="\/">/);
  assert.doesNotMatch(res.body, /at .*\.(ts|js):\d+/, 'no stack trace');
  assert.ok(!res.body.includes(CLIENT_SECRET) && !res.body.includes(SECRET_KEY), 'no secrets');
  const cookies = setCookies(res);
  assert.ok(!cookies.some((c) => /^svc_session=[^;]+/.test(c)), 'no session cookie');
}

async function me(b: Browser) {
  const r = await b.get('/api/me');
  assert.equal(r.statusCode, 200, r.body);
  return r.json() as { user: { email: string; name: string | null; sub: string | null; is_local: boolean }; groups: Array<{ name: string; idp_managed: boolean }>; platform_roles: string[]; workspaces: Array<{ slug: string; role: string }> };
}

describe('login redirect', () => {
  test('302 to the provider with the authorization code flow, PKCE S256, state and nonce; the state cookie is sealed', async () => {
    const b = newBrowser();
    const res = await b.get('/api/auth/oidc/login');
    assert.equal(res.statusCode, 302);
    assert.equal(res.headers['cache-control'], 'no-store');
    const url = new URL(res.headers.location as string);
    assert.equal(url.origin, op.issuer);
    const q = url.searchParams;
    assert.equal(q.get('response_type'), 'code');
    assert.equal(q.get('client_id'), CLIENT_ID);
    assert.equal(q.get('redirect_uri'), REDIRECT_URL);
    assert.deepEqual(q.get('scope')!.split(' '), ['openid', 'email', 'profile', 'groups']);
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.match(q.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
    assert.match(q.get('state')!, /^[A-Za-z0-9_-]{20,}$/);
    assert.match(q.get('nonce')!, /^[A-Za-z0-9_-]{20,}$/);

    const cookie = setCookies(res).find((c) => c.startsWith('svc_oidc='))!;
    assert.ok(cookie, 'state cookie set');
    assert.match(cookie, /HttpOnly/i);
    assert.match(cookie, /SameSite=Lax/i);
    assert.match(cookie, /Path=\/api\/auth\/oidc(;|$)/);
    assert.match(cookie, /Max-Age=600/);
    assert.doesNotMatch(cookie, /Secure/);
    const value = cookie.slice('svc_oidc='.length).split(';')[0];
    for (const secret of [q.get('state')!, q.get('nonce')!]) assert.ok(!value.includes(secret), 'state and nonce are not readable in the cookie');
    assert.ok(!Buffer.from(value, 'base64url').toString('latin1').includes(q.get('state')!), 'not merely encoded');

    // Only the service's key opens it, and what it holds matches the request.
    const opened = openState(stateCookieKey(SECRET_KEY), value, t.clock.now().getTime());
    assert.ok(opened.ok);
    assert.equal(opened.value.state, q.get('state'));
    assert.equal(opened.value.nonce, q.get('nonce'));
    assert.equal(createHash('sha256').update(opened.value.codeVerifier).digest('base64url'), q.get('code_challenge'));
    assert.equal(opened.value.returnTo, '/');
    assert.equal(openState(stateCookieKey(randomBytes(64).toString('base64')), value, t.clock.now().getTime()).ok, false, 'another key cannot open it');
  });

  test('each login starts a fresh state, nonce and verifier', async () => {
    const a = await newBrowser().get('/api/auth/oidc/login');
    const b = await newBrowser().get('/api/auth/oidc/login');
    const qa = new URL(a.headers.location as string).searchParams;
    const qb = new URL(b.headers.location as string).searchParams;
    for (const k of ['state', 'nonce', 'code_challenge']) assert.notEqual(qa.get(k), qb.get(k), k);
  });

  test('return_to keeps a path on this origin and ignores anything else', async () => {
    const key = stateCookieKey(SECRET_KEY);
    const returnOf = async (rt: string) => {
      const b = newBrowser();
      await b.get(`/api/auth/oidc/login?return_to=${encodeURIComponent(rt)}`);
      const o = openState(key, b.cookies.get('svc_oidc'), t.clock.now().getTime());
      assert.ok(o.ok);
      return o.value.returnTo;
    };
    assert.equal(await returnOf('/workspaces/default?tab=members'), '/workspaces/default?tab=members');
    for (const bad of ['https://evil.example/', '//evil.example/x', '/\\evil.example', 'relative']) assert.equal(await returnOf(bad), '/', bad);
  });
});

describe('sign-in and synchronisation', () => {
  test('a first sign-in creates the user and the identity-provider groups, sets cookies, redirects to post_login_redirect', async () => {
    const { b, res } = await ssoSignIn('alice');
    assert.equal(res.statusCode, 302, res.body);
    assert.equal(res.headers.location, '/');
    const cookies = setCookies(res);
    const session = cookies.find((c) => c.startsWith('svc_session='))!;
    assert.match(session, /HttpOnly/i);
    assert.match(session, /Max-Age=86400/);
    assert.ok(cookies.some((c) => c.startsWith('svc_csrf=')), 'CSRF cookie');
    assert.ok(cookies.some((c) => /^svc_oidc=;/.test(c) && /Path=\/api\/auth\/oidc/.test(c)), 'state cookie cleared');

    const m = await me(b);
    assert.deepEqual(m.user, { ...m.user, email: 'alice@example.test', name: 'Alice Liddell', sub: 'alice', is_local: false });
    assert.deepEqual(m.groups, [{ name: 'analysts', idp_managed: true }, { name: 'team-a', idp_managed: true }]);
    assert.deepEqual(m.platform_roles, []);
    assert.deepEqual(m.workspaces, [], 'no access until a grant');

    const rows = await query<{ name: string; idp_managed: boolean }>(t.db.url, 'SELECT name, idp_managed FROM groups ORDER BY name');
    assert.deepEqual(rows, [{ name: 'analysts', idp_managed: true }, { name: 'team-a', idp_managed: true }]);
    const audit = await query<{ action: string; target: string }>(t.db.url, "SELECT action, target FROM audit_events WHERE kind = 'governance' AND actor = 'alice@example.test' ORDER BY id");
    assert.deepEqual(audit.map((a) => a.action), ['user.create', 'group.create', 'group.create', 'group.member.add', 'group.member.add']);
  });

  test('a second sign-in with changed groups adds and removes memberships and refreshes email and name', async () => {
    op.setGroups('alice', ['analysts', 'team-b']);
    op.setProfile('alice', { email: 'alice.liddell@example.test', name: 'Alice L.' });
    try {
      const { b, res } = await ssoSignIn('alice');
      assert.equal(res.statusCode, 302, res.body);
      const m = await me(b);
      assert.equal(m.user.email, 'alice.liddell@example.test');
      assert.equal(m.user.name, 'Alice L.');
      assert.deepEqual(m.groups, [{ name: 'analysts', idp_managed: true }, { name: 'team-b', idp_managed: true }]);
      const users = await query<{ n: string }>(t.db.url, "SELECT count(*) AS n FROM users WHERE sub = 'alice'");
      assert.equal(users[0].n, '1', 'the same user, found by sub');
      const teamA = await query<{ n: string }>(t.db.url, "SELECT count(*) AS n FROM group_members m JOIN groups g ON g.id = m.group_id WHERE g.name = 'team-a'");
      assert.equal(teamA[0].n, '0', 'membership removed; the group itself stays (grants may reference it)');
      const audit = await query<{ action: string; target: string }>(t.db.url, "SELECT action, target FROM audit_events WHERE kind = 'governance' AND actor = 'alice.liddell@example.test' ORDER BY id");
      assert.deepEqual(audit.map((a) => `${a.action} ${a.target}`), [
        'user.update user:alice.liddell@example.test', 'group.create group:team-b', 'group.member.add group:team-b', 'group.member.remove group:team-a',
      ]);
    } finally {
      op.setGroups('alice', ['analysts', 'team-a']);
      op.setProfile('alice', { email: 'alice@example.test', name: 'Alice Liddell' });
    }
  });

  test('a sign-in with no groups removes every identity-provider membership', async () => {
    op.setGroups('frank', ['analysts']);
    const first = await ssoSignIn('frank');
    assert.deepEqual((await me(first.b)).groups, [{ name: 'analysts', idp_managed: true }]);
    op.setGroups('frank', []);
    const second = await ssoSignIn('frank');
    assert.equal(second.res.statusCode, 302);
    assert.deepEqual((await me(second.b)).groups, []);
  });

  test('names that are not strings or not group names are ignored; a leading slash is kept as given', async () => {
    const { b, res } = await ssoSignIn('erin');
    assert.equal(res.statusCode, 302, res.body);
    assert.deepEqual((await me(b)).groups, [{ name: '/path/group', idp_managed: true }, { name: 'data-team', idp_managed: true }]);
  });

  test('a local group with the name of a claimed group is left alone: no membership, no grant reaches the user', async () => {
    const admin = await adminBrowser();
    assert.equal((await admin.post('/api/users', { email: 'dave@example.test', password: 'dave-password-1' })).statusCode, 201);
    const created = await admin.post('/api/groups', { name: 'shared' });
    assert.equal(created.statusCode, 201, created.body);
    const localId = created.json().id as string;
    assert.equal((await admin.put('/api/groups/shared/members/dave@example.test')).statusCode, 200);
    const grant = await admin.put(`/api/workspaces/default/members/groups/${localId}`, { role: 'ws_viewer' });
    assert.equal(grant.statusCode, 200, grant.body);

    op.setGroups('bob', ['analysts', 'shared']);
    const { b, res } = await ssoSignIn('bob');
    assert.equal(res.statusCode, 302, res.body);
    const m = await me(b);
    assert.deepEqual(m.groups, [{ name: 'analysts', idp_managed: true }, { name: 'shared', idp_managed: true }]);
    assert.deepEqual(m.workspaces, [], 'the local group\'s grant does not reach the SSO user');
    const members = await query<{ email: string }>(t.db.url,
      'SELECT u.email FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = $1 ORDER BY u.email', [localId]);
    assert.deepEqual(members.map((r) => r.email), ['dave@example.test'], 'the local group keeps exactly its members');
    const both = await query<{ idp_managed: boolean }>(t.db.url, "SELECT idp_managed FROM groups WHERE name = 'shared' ORDER BY idp_managed");
    assert.deepEqual(both.map((r) => r.idp_managed), [false, true], 'two groups of that name');

    // Dropping the claim later does not touch the local group either.
    op.setGroups('bob', ['analysts']);
    await ssoSignIn('bob');
    const after = await query<{ email: string }>(t.db.url, 'SELECT u.email FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = $1', [localId]);
    assert.deepEqual(after.map((r) => r.email), ['dave@example.test']);
  });

  test('no access until a grant to one of the user\'s groups; then the workspace appears', async () => {
    op.setGroups('erin', ['data-team']);
    const { b } = await ssoSignIn('erin');
    assert.deepEqual((await me(b)).workspaces, []);
    assert.equal((await b.get('/api/workspaces/default')).statusCode, 404);

    const admin = await adminBrowser();
    const grant = await admin.put('/api/workspaces/default/members/groups/data-team', { role: 'ws_editor' });
    assert.equal(grant.statusCode, 200, grant.body);
    assert.equal(grant.json().change, 'created');
    assert.deepEqual((await me(b)).workspaces.map((w) => [w.slug, w.role]), [['default', 'ws_editor']]);
    assert.equal((await b.get('/api/workspaces/default')).statusCode, 200);

    // Leaving the group at the provider takes the access away at the next sign-in.
    op.setGroups('erin', []);
    const again = await ssoSignIn('erin');
    assert.deepEqual((await me(again.b)).workspaces, []);
  });

  test('two first sign-ins of the same person at once make one user with one set of memberships', async () => {
    const a = newBrowser();
    const b = newBrowser();
    const cbA = await toCallback(a, 'gina');
    const cbB = await toCallback(b, 'gina');
    const [ra, rb] = await Promise.all([a.get(cbA), b.get(cbB)]);
    assert.equal(ra.statusCode, 302, ra.body);
    assert.equal(rb.statusCode, 302, rb.body);
    const users = await query<{ id: string }>(t.db.url, "SELECT id FROM users WHERE sub = 'gina'");
    assert.equal(users.length, 1);
    const groups = await query<{ name: string }>(t.db.url, 'SELECT g.name FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = $1 ORDER BY g.name', [users[0].id]);
    assert.deepEqual(groups.map((g) => g.name), ['analysts', 'racers']);
    assert.deepEqual((await me(a)).groups.map((g) => g.name), ['analysts', 'racers']);
  });

  test('an email held by a local account refuses the sign-in with a clear page; nothing is merged', async () => {
    const admin = await adminBrowser();
    assert.equal((await admin.post('/api/users', { email: 'carol@example.test', password: 'carol-password-1' })).statusCode, 201);
    const { res } = await ssoSignIn('carol');
    assertFailurePage(res, 400, /An account with this email already exists/);
    const rows = await query<{ sub: string | null; is_local: boolean }>(t.db.url, "SELECT sub, is_local FROM users WHERE lower(email) = 'carol@example.test'");
    assert.deepEqual(rows, [{ sub: null, is_local: true }], 'the local account is untouched');
  });
});

describe('failed sign-ins land on a page that says what went wrong', () => {
  test('a tampered state cookie', async () => {
    const b = newBrowser();
    const cb = await toCallback(b, 'bob');
    const v = b.cookies.get('svc_oidc')!;
    b.cookies.set('svc_oidc', `${v.slice(0, 20)}${v[20] === 'A' ? 'B' : 'A'}${v.slice(21)}`);
    const res = await b.get(cb);
    assertFailurePage(res, 400, START_AGAIN);
    const code = new URL(cb, ORIGIN).searchParams.get('code')!;
    assert.ok(!res.body.includes(code), 'the code is not echoed');
    assert.ok(setCookies(res).some((c) => /^svc_oidc=;/.test(c)), 'the state cookie is cleared');
  });

  test('an expired state cookie (over 600 s old)', async () => {
    const b = newBrowser();
    const cb = await toCallback(b, 'bob');
    t.clock.advance(601_000);
    assertFailurePage(await b.get(cb), 400, START_AGAIN);
  });

  test('no state cookie at all', async () => {
    const b = newBrowser();
    const cb = await toCallback(b, 'bob');
    b.cookies.delete('svc_oidc');
    assertFailurePage(await b.get(cb), 400, START_AGAIN);
  });

  test('a state that does not match the cookie (a response meant for another browser)', async () => {
    const victim = newBrowser();
    const attacker = newBrowser();
    const cb = await toCallback(attacker, 'bob');
    await victim.get('/api/auth/oidc/login');
    const res = await victim.get(cb);
    assertFailurePage(res, 400, 'does not belong to the sign-in this browser started');
    const state = new URL(cb, ORIGIN).searchParams.get('state')!;
    assert.ok(!res.body.includes(state));
  });

  test('a replayed callback: the code was already used', async () => {
    const b = newBrowser();
    const cb = await toCallback(b, 'bob');
    const cookie = b.cookies.get('svc_oidc')!;
    assert.equal((await b.get(cb)).statusCode, 302);
    b.cookies.set('svc_oidc', cookie);
    const res = await b.get(cb);
    assertFailurePage(res, 400, /did not accept the sign-in: invalid_grant/);
  });

  test('the provider\'s error is shown, escaped', async () => {
    const b = newBrowser();
    const login = await b.get('/api/auth/oidc/login');
    const state = new URL(login.headers.location as string).searchParams.get('state')!;
    const qs = new URLSearchParams({ error: 'access_denied', error_description: '<script>alert(1)</script> denied', state, iss: op.issuer });
    const res = await b.get(`/api/auth/oidc/callback?${qs}`);
    assertFailurePage(res, 400, 'The identity provider refused the sign-in: access_denied (&lt;script&gt;alert(1)&lt;/script&gt; denied)');
    assert.ok(!res.body.includes('<script>'));
  });

  test('a provider error without the browser\'s state is not shown (no text injection)', async () => {
    const b = newBrowser();
    await b.get('/api/auth/oidc/login');
    const res = await b.get('/api/auth/oidc/callback?error=access_denied&error_description=Call%20this%20number');
    assertFailurePage(res, 400, 'does not belong to the sign-in this browser started');
    assert.ok(!res.body.includes('Call this number'));
  });

  test('malformed callback parameters still get the page, not JSON', async () => {
    const b = newBrowser();
    await b.get('/api/auth/oidc/login');
    assertFailurePage(await b.get('/api/auth/oidc/callback?state=a&state=b'), 400, 'does not belong to the sign-in this browser started');
  });
});

describe('claims and the state cookie, unit by unit', () => {
  test('the groups claim named by oidc.groups_claim, email required, name from the best claim present', () => {
    const { profile, ignoredGroups } = profileFromClaims(
      { sub: 's1', email: ' x@example.test ', given_name: 'Ada', family_name: 'Lovelace', roles: ['a', 'a', 'b', 7, {}], groups: ['ignored'] }, 'roles');
    assert.deepEqual(profile, { sub: 's1', email: 'x@example.test', name: 'Ada Lovelace', groups: ['a', 'b'] });
    assert.equal(ignoredGroups, 2);
    assert.equal(profileFromClaims({ sub: 's', email: 'e@x.test', preferred_username: 'ada' }, 'groups').profile.name, 'ada');
    assert.deepEqual(profileFromClaims({ sub: 's', email: 'e@x.test', groups: 'one-string' }, 'groups').profile.groups, []);
    assert.throws(() => profileFromClaims({ sub: 's' }, 'groups'), SsoClaimsError);
    assert.throws(() => profileFromClaims({ sub: 's', email: 'not an email' }, 'groups'), SsoClaimsError);
  });

  test('a sealed state opens only unchanged, with the same key, within 600 s', () => {
    const key = stateCookieKey(SECRET_KEY);
    const now = Date.parse('2026-06-01T12:00:00Z');
    const v = sealState(key, { state: 's', nonce: 'n', codeVerifier: 'v', createdAt: now, returnTo: '/' });
    assert.ok(openState(key, v, now + 599_000).ok);
    assert.deepEqual(openState(key, v, now + 601_000), { ok: false, reason: 'expired' });
    assert.deepEqual(openState(key, undefined, now), { ok: false, reason: 'missing' });
    const raw = Buffer.from(v, 'base64url');
    for (let i = 0; i < raw.length; i += 7) {
      const bad = Buffer.from(raw);
      bad[i] ^= 1;
      assert.equal(openState(key, bad.toString('base64url'), now).ok, false, `byte ${i} flipped`);
    }
    assert.equal(openState(key, v.slice(0, -2), now).ok, false, 'truncated');
    assert.equal(openState(key, 'not base64!', now).ok, false);
  });
});

describe('back-channel logout', () => {
  const post = (payload: string, contentType = 'application/x-www-form-urlencoded') =>
    t.app.inject({ method: 'POST', url: '/api/auth/oidc/backchannel-logout', headers: { 'content-type': contentType }, payload });
  const form = (token: string) => new URLSearchParams({ logout_token: token }).toString();

  test('revokes every session of the sub (two sign-ins); another user\'s session survives', async () => {
    const one = await ssoSignIn('alice');
    const two = await ssoSignIn('alice');
    const other = await ssoSignIn('bob');
    for (const s of [one, two, other]) assert.equal((await s.b.get('/api/me')).statusCode, 200);
    const before = await query<{ n: string }>(t.db.url, "SELECT count(*) AS n FROM sessions WHERE sub = 'alice'");
    assert.ok(Number(before[0].n) >= 2);

    const res = await post(form(await op.logoutToken('alice')));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.deepEqual(res.json(), {});
    assert.equal((await one.b.get('/api/me')).statusCode, 401);
    assert.equal((await two.b.get('/api/me')).statusCode, 401);
    assert.equal((await other.b.get('/api/me')).statusCode, 200, 'bob is still signed in');
    const left = await query<{ n: string }>(t.db.url, "SELECT count(*) AS n FROM sessions WHERE sub = 'alice'");
    assert.equal(left[0].n, '0');
  });

  test('a logout token made by the provider itself is accepted', async () => {
    const s = await ssoSignIn('alice');
    const res = await post(form(await op.providerLogoutToken('alice')));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await s.b.get('/api/me')).statusCode, 401);
  });

  test('a token naming only the provider session (sid) ends the sessions of that sid', async () => {
    const s1 = await ssoSignIn('alice');
    const s2 = await ssoSignIn('alice');
    const sids = await query<{ sid: string | null }>(t.db.url, "SELECT sid FROM sessions WHERE sub = 'alice' ORDER BY created_at, sid");
    assert.equal(sids.length, 2);
    assert.ok(sids.every((r) => typeof r.sid === 'string' && r.sid.length > 0), 'the ID token\'s sid is stored');
    const sidOfFirst = (await query<{ sid: string }>(t.db.url, 'SELECT sid FROM sessions WHERE id_hash = $1', [createHash('sha256').update(s1.b.cookies.get('svc_session')!).digest()]))[0].sid;
    const res = await post(form(await op.logoutToken('alice', { omitSub: true, sid: sidOfFirst })));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await s1.b.get('/api/me')).statusCode, 401);
    assert.equal((await s2.b.get('/api/me')).statusCode, 200, 'another provider session of the same person stays');
    await post(form(await op.logoutToken('alice')));
  });

  test('signing out at the provider: its own back-channel call ends every session of the person', async () => {
    const one = await ssoSignIn('alice');
    const two = await ssoSignIn('alice');
    const other = await ssoSignIn('bob');
    assert.equal(await signOutAtProvider(op.issuer, one.providerJar), 303);
    assert.equal((await one.b.get('/api/me')).statusCode, 401);
    assert.equal((await two.b.get('/api/me')).statusCode, 401, 'every session of the sub, not only the provider session that signed out');
    assert.equal((await other.b.get('/api/me')).statusCode, 200);
  });

  test('an unknown subject is a 200 no-op', async () => {
    const other = await ssoSignIn('bob');
    const res = await post(form(await op.logoutToken('nobody-by-that-sub')));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await other.b.get('/api/me')).statusCode, 200);
  });

  test('bad tokens get 400 and revoke nothing', async () => {
    const s = await ssoSignIn('alice');
    const cases: Array<[string, string | Promise<string>, RegExp]> = [
      ['wrong signature', op.logoutToken('alice', { signWithOtherKey: true }), /signature verification failed/],
      ['wrong audience', op.logoutToken('alice', { aud: 'someone-else' }), /"aud" claim check failed/],
      ['wrong issuer', op.logoutToken('alice', { iss: 'http://127.0.0.1:1/other' }), /"iss" claim check failed/],
      ['expired', op.logoutToken('alice', { expSecs: -300 }), /expired/],
      ['missing events', op.logoutToken('alice', { omitEvents: true }), /missing "events" claim/],
      ['with a nonce', op.logoutToken('alice', { nonce: 'n-123' }), /"nonce" claim is not allowed/],
      ['missing iat', op.logoutToken('alice', { omitClaims: ['iat'] }), /missing "iat" claim/],
      ['missing jti', op.logoutToken('alice', { omitClaims: ['jti'] }), /missing "jti" claim/],
      ['neither sub nor sid', op.logoutToken('alice', { omitSub: true }), /neither "sub" nor "sid"/],
      ['not a JWT', 'not-a-jwt', /not a signed JWT/],
      ['unsigned (alg none)', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: op.issuer, aud: CLIENT_ID, sub: 'alice' })).toString('base64url')}.`, /not a signed JWT/],
    ];
    for (const [name, tokenP, reason] of cases) {
      const token = await tokenP;
      const res = await post(form(token));
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      const body = res.json();
      assert.equal(body.error, 'bad_request', name);
      assert.match(body.message, /^invalid logout token: /, name);
      assert.match(body.message, reason, `${name}: ${body.message}`);
      assert.ok(!body.message.includes(token.slice(0, 20)) || token.length < 20, `${name}: no token contents`);
    }
    for (const [name, payload, type] of [
      ['no logout_token field', 'something=else', 'application/x-www-form-urlencoded'],
      ['empty body', '', 'application/x-www-form-urlencoded'],
      ['repeated field', 'logout_token=a&logout_token=b', 'application/x-www-form-urlencoded'],
    ] as const) {
      const res = await post(payload, type);
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.match(res.json().message, /^invalid logout token: /, name);
    }
    assert.equal((await s.b.get('/api/me')).statusCode, 200, 'alice is still signed in');
  });

  test('needs neither a session cookie nor a CSRF header, and ignores one if sent', async () => {
    const s = await ssoSignIn('alice');
    const token = await op.logoutToken('alice');
    // Sent with the session cookie but no CSRF header: the route is exempt from CSRF.
    const res = await s.b.post('/api/auth/oidc/backchannel-logout', form(token), { csrf: false });
    assert.notEqual(res.statusCode, 403, res.body);
  });
});

describe('return_to that is not plain ASCII', () => {
  test('a non-Latin-1 path lands percent-encoded; an invalid one falls back; the authorization code is logged nowhere', async () => {
    const app = await startTestApp(ssoEnv(op.issuer, { SVC_LOG__FILTER: 'trace' }));
    try {
      const signIn = async (returnTo: string) => {
        const b = new Browser(app, `198.51.100.${200 + ipSeq++ % 50}`);
        const login = await b.get(`/api/auth/oidc/login?return_to=${encodeURIComponent(returnTo)}`);
        assert.equal(login.statusCode, 302, login.body);
        const back = await signInAtProvider(login.headers.location as string, 'alice');
        const res = await b.get(`/api/auth/oidc/callback${back.search}`);
        return { res, code: back.searchParams.get('code')! };
      };
      const cases: Array<[string, string]> = [
        ['/ui/flows/caf\u00e9-\u6570\u636e?q=\u00fc#\u20ac', '/ui/flows/caf%C3%A9-%E6%95%B0%E6%8D%AE?q=%C3%BC#%E2%82%AC'],
        ['/ui/%zz', '/ui/%zz'],
        ['/\u2028line', '/'],
      ];
      const codes: string[] = [];
      for (const [returnTo, location] of cases) {
        const { res, code } = await signIn(returnTo);
        codes.push(code);
        assert.equal(res.statusCode, 302, `${JSON.stringify(returnTo)}: ${res.body}`);
        assert.equal(res.headers.location, location, JSON.stringify(returnTo));
        assert.ok(setCookies(res).some((c) => /^svc_session=[^;]+/.test(c)), 'signed in');
      }
      const logs = app.logs();
      assert.ok(logs.includes('signed in through single sign-on'), 'the trace-level log was captured');
      for (const code of codes) assert.ok(!logs.includes(code), 'the authorization code is in no log line');
      assert.doesNotMatch(logs, /[?&]code=/);
    } finally {
      await app.close();
    }
  });

  test('safeReturnPath: encodes what a header cannot carry, refuses what cannot be a path on this origin', () => {
    assert.equal(safeReturnPath('/a b'), undefined);
    assert.equal(safeReturnPath('/ui/\ud800x'), undefined, 'a lone surrogate');
    assert.equal(safeReturnPath('/x\u0085y'), undefined, 'a C1 control');
    assert.equal(safeReturnPath('/%C3%A9'), '/%C3%A9', 'already encoded stays as is');
    assert.equal(safeReturnPath('/\u00e9'), '/%C3%A9');
    assert.equal(safeReturnPath(`/${'\u4e00'.repeat(2047)}`), undefined, 'over 6144 characters once encoded');
  });

  test('a state cookie holding a return path the browser cannot be sent to (an older release, a foreign key) lands on the default', async () => {
    const b = newBrowser();
    const login = await b.get('/api/auth/oidc/login');
    const back = await signInAtProvider(login.headers.location as string, 'bob');
    const key = stateCookieKey(SECRET_KEY);
    const opened = openState(key, b.cookies.get('svc_oidc'), t.clock.now().getTime());
    assert.ok(opened.ok);
    b.cookies.set('svc_oidc', sealState(key, { ...opened.value, returnTo: '/caf\u00e9\r\nSet-Cookie: x=y' }));
    const res = await b.get(`/api/auth/oidc/callback${back.search}`);
    assert.equal(res.statusCode, 302, res.body);
    assert.equal(res.headers.location, '/');
  });
});

describe('configuration', () => {
  test('with single sign-on disabled the three routes answer 404 and stay in the OpenAPI document', async () => {
    const off = await startTestApp();
    try {
      for (const [method, url] of [['GET', '/api/auth/oidc/login'], ['GET', '/api/auth/oidc/callback?code=x&state=y'], ['POST', '/api/auth/oidc/backchannel-logout']] as const) {
        const res = await off.app.inject({ method, url, ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'logout_token=x' } : {}) });
        assert.equal(res.statusCode, 404, `${method} ${url}`);
        assert.deepEqual(res.json(), { error: 'not_found', message: 'single sign-on is not enabled' });
      }
      const paths = (off.app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths;
      assert.ok(paths['/api/auth/oidc/login']?.get);
      assert.ok(paths['/api/auth/oidc/callback']?.get);
      assert.ok(paths['/api/auth/oidc/backchannel-logout']?.post);
    } finally {
      await off.close();
    }
  });

  test('an unreachable provider gives the failure page with 502 (and 503 to logout tokens); discovery is tried again later', async () => {
    const gone = await startOidcProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [REDIRECT_URL], accounts: {} });
    await gone.stop();
    const app = await startTestApp(ssoEnv(gone.issuer));
    try {
      const res = await app.app.inject({ method: 'GET', url: '/api/auth/oidc/login' });
      assertFailurePage(res, 502, 'The identity provider could not be reached.');
      assert.ok(!setCookies(res).some((c) => /^svc_oidc=[^;]+/.test(c)), 'no state cookie');
      const bcl = await app.app.inject({ method: 'POST', url: '/api/auth/oidc/backchannel-logout', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ logout_token: await op.logoutToken('alice') }).toString() });
      assert.equal(bcl.statusCode, 503, bcl.body);
      // The provider comes back on the same address: the next login discovers it.
      const back = await startOidcProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [REDIRECT_URL], accounts: {}, port: gone.port });
      try {
        const again = await app.app.inject({ method: 'GET', url: '/api/auth/oidc/login' });
        assert.equal(again.statusCode, 302, again.body);
        assert.equal(new URL(again.headers.location as string).origin, gone.issuer);
      } finally {
        await back.stop();
      }
    } finally {
      await app.close();
    }
  });

  test('an issuer configured with a different spelling (trailing slash) is refused with a clear page', async () => {
    const app = await startTestApp(ssoEnv(`${op.issuer}/`));
    try {
      const res = await app.app.inject({ method: 'GET', url: '/api/auth/oidc/login' });
      assertFailurePage(res, 502, /misconfigured: the identity provider&#39;s issuer does not match/);
    } finally {
      await app.close();
    }
  });

  test('with session.secure the state cookie is __Host-svc_oidc (Secure, Path=/, no Domain), and a sign-in goes through with it', async () => {
    const app = await startTestApp(ssoEnv(op.issuer, { SVC_SESSION__SECURE: 'true' }));
    try {
      const b = new Browser(app, '198.51.100.250');
      const res = await b.get('/api/auth/oidc/login');
      assert.equal(res.statusCode, 302);
      const cookie = setCookies(res).find((c) => c.startsWith('__Host-svc_oidc='))!;
      assert.ok(cookie, setCookies(res).join('\n'));
      assert.match(cookie, /; Secure/);
      assert.match(cookie, /; Path=\/(;|$)/);
      assert.doesNotMatch(cookie, /Domain=/i);
      assert.ok(!setCookies(res).some((c) => c.startsWith('svc_oidc=')));
      const back = await signInAtProvider(res.headers.location as string, 'frank');
      const done = await b.get(`/api/auth/oidc/callback${back.search}`);
      assert.equal(done.statusCode, 302, done.body);
      assert.match(setCookies(done).find((c) => c.startsWith('__Host-svc_oidc='))!, /Max-Age=0|Expires=Thu, 01 Jan 1970/, 'cleared after use');
      for (const name of ['svc_session', 'svc_csrf']) assert.match(setCookies(done).find((c) => c.startsWith(`${name}=`))!, /; Secure/, name);
    } finally {
      await app.close();
    }
  });
});
