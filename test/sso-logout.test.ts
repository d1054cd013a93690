// Single sign-on: back-channel logout against a real OpenID provider (test/helpers/sso.ts), with
// logout tokens it signs itself and ones made for the test, and its own call when a person signs
// out there.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { query } from './helpers/db.js';
import { signOutAtProvider } from './helpers/oidc-provider.js';
import { CLIENT_ID, op, t, ssoSignIn, useSsoApp } from './helpers/sso.js';

useSsoApp();

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
