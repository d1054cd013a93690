// Single sign-on against a real OpenID provider (test/helpers/sso.ts): return paths that are not
// plain ASCII, and the service configured otherwise than the shared bed (disabled, an
// unreachable provider, a misspelt issuer, secure cookies), each in an app of its own.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser } from './helpers/app.js';
import { startOidcProvider, signInAtProvider } from './helpers/oidc-provider.js';
import { CLIENT_ID, CLIENT_SECRET, SECRET_KEY, REDIRECT_URL, op, t, ssoEnv, newBrowser, setCookies, assertFailurePage, useSsoApp } from './helpers/sso.js';
import { openState, sealState, stateCookieKey } from '../src/auth/state-cookie.js';
import { safeReturnPath } from '../src/api/routes/oidc.js';

useSsoApp();
// The addresses of the browsers of the return_to test's own app (newBrowser numbers the bed's).
let ipSeq = 1;

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
