// Single sign-on end to end against a real OpenID provider (test/helpers/sso.ts): the login
// redirect, the callback with user and group synchronisation, the failure page, and the claims
// and state cookie unit by unit. The service runs in-process through inject(); the provider's
// redirects back to it are replayed as requests to the callback route.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { query } from './helpers/db.js';
import { CLIENT_ID, SECRET_KEY, ORIGIN, REDIRECT_URL, START_AGAIN, op, t, newBrowser, adminBrowser, toCallback, ssoSignIn, setCookies, assertFailurePage, me, useSsoApp } from './helpers/sso.js';
import { openState, sealState, stateCookieKey } from '../src/auth/state-cookie.js';
import { profileFromClaims, SsoClaimsError } from '../src/identity/sso.js';

useSsoApp();

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
