// The bed of the sso-*.test.ts files: a real OpenID provider (the `oidc-provider` package on a
// loopback port) and the service configured for single sign-on against it, listening on its own
// port so that the provider's back-channel logout calls reach it; and the steps of a sign-in.
//
// A file calls useSsoApp() once at its top; its hooks fill `op`, `t`, ORIGIN and REDIRECT_URL,
// which the file reads through ES module live bindings (so the tests name them as before the
// split, when they were the file's own variables).
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestApp, Browser, type TestApp } from './app.js';
import { startOidcProvider, signInAtProvider, CookieJar, type OidcProviderHandle } from './oidc-provider.js';
import { freePort } from './net.js';
import { initAdministrator } from '../../src/bootstrap/init.js';

export const CLIENT_ID = 'svc-test';
export const CLIENT_SECRET = randomBytes(24).toString('base64url');
export const SECRET_KEY = randomBytes(64).toString('base64');
// Requests to the service go through inject(); it also listens on this port so that the
// provider's own back-channel logout calls reach it.
export let ORIGIN = '';
export let REDIRECT_URL = '';
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };
export const START_AGAIN = 'The sign-in request expired or was already used. Start again.';

export let op: OidcProviderHandle;
export let t: TestApp;
let ipSeq = 1;

export function ssoEnv(issuer: string, extra: Record<string, string> = {}): Record<string, string> {
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

/** Starts the bed (once per file, at its top level): the hooks of the whole file. */
export function useSsoApp(): void {
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
}

export const newBrowser = () => new Browser(t, `198.51.100.${ipSeq++}`);

export async function adminBrowser(): Promise<Browser> {
  const b = newBrowser();
  const res = await b.login(ADMIN.email, ADMIN.password);
  assert.equal(res.statusCode, 200, res.body);
  return b;
}

/** Starts the sign-in at the service, signs `sub` in at the provider, returns the callback URL. */
export async function toCallback(b: Browser, sub: string, jar = new CookieJar()): Promise<string> {
  const login = await b.get('/api/auth/oidc/login');
  assert.equal(login.statusCode, 302, login.body);
  const back = await signInAtProvider(login.headers.location as string, sub, jar);
  assert.equal(`${back.origin}${back.pathname}`, REDIRECT_URL);
  return `/api/auth/oidc/callback${back.search}`;
}

export async function ssoSignIn(sub: string, b = newBrowser()) {
  const providerJar = new CookieJar();
  const cb = await toCallback(b, sub, providerJar);
  const res = await b.get(cb);
  return { b, res, cb, providerJar };
}

export function setCookies(res: { headers: Record<string, unknown> }): string[] {
  return ([] as string[]).concat((res.headers['set-cookie'] as string[] | string | undefined) ?? []);
}

export function assertFailurePage(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, sentence: string | RegExp) {
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

export async function me(b: Browser) {
  const r = await b.get('/api/me');
  assert.equal(r.statusCode, 200, r.body);
  return r.json() as { user: { email: string; name: string | null; sub: string | null; is_local: boolean }; groups: Array<{ name: string; idp_managed: boolean }>; platform_roles: string[]; workspaces: Array<{ slug: string; role: string }> };
}
