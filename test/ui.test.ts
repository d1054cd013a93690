// The browser UI in Debian's Chromium (playwright-core) against a real listening `svc serve`
// (startServer) on a fresh database: the static file routes and their headers, local sign-in by
// keyboard, the Groups screen, and single sign-on through a real OpenID provider (oidc-provider)
// followed by a workspace grant on the Members screen. Screenshots: test-results/ui-*.png.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Page, Request } from 'playwright-core';
import { createGroup } from '../src/access/governance.js';
import { freePort } from './helpers/net.js';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { ADMIN, startSvc, type Svc } from './helpers/console.js';
import { seriousViolations } from './helpers/a11y.js';

const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Raw GET, so paths like /ui/../x reach the server without client-side normalisation. */
function rawGet(port: number, target: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Records the state-changing API requests of a page, with the CSRF header they carried. */
function recordMutations(page: Page): Array<{ method: string; url: string; csrf: string | undefined }> {
  const seen: Array<{ method: string; url: string; csrf: string | undefined }> = [];
  page.on('request', (r: Request) => {
    if (r.method() !== 'GET' && new URL(r.url()).pathname.startsWith('/api/')) {
      seen.push({ method: r.method(), url: new URL(r.url()).pathname, csrf: r.headers()['x-svc-csrf'] });
    }
  });
  return seen;
}

async function cookie(page: Page, name: string): Promise<string | undefined> {
  return (await page.context().cookies()).find((c) => c.name === name)?.value;
}

/** Which element has the keyboard focus: its id, or tag and text. */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    if (!el) return '';
    return el.id ? `#${el.id}` : `${el.tagName.toLowerCase()}:${(el.textContent ?? '').trim()}`;
  });
}

let browser: TestBrowser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

describe('UI with single sign-on off', () => {
  let svc: Svc;
  before(async () => {
    svc = await startSvc();
    const admin = await svc.server.services.db.selectFrom('users').select(['id', 'email']).where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
    await createGroup(svc.server.services.db, admin, 'ops-local');
  });
  after(async () => { await svc?.close(); });

  test('static routes: headers, caching, 404 body, no path traversal', async () => {
    const page = await fetch(`${svc.base}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
    assert.equal(page.headers.get('content-security-policy'), CSP);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('referrer-policy'), 'same-origin');
    assert.equal(page.headers.get('cache-control'), 'no-store');
    const html = await page.text();
    // The built page links its script and stylesheet by content-hashed name (Vite), nothing inline.
    const script = /<script type="module" crossorigin src="(\/ui\/assets\/index-[A-Za-z0-9_-]{8,}\.js)"><\/script>/.exec(html)?.[1];
    const style = /<link rel="stylesheet" crossorigin href="(\/ui\/assets\/index-[A-Za-z0-9_-]{8,}\.css)">/.exec(html)?.[1];
    assert.ok(script && style, html);
    assert.doesNotMatch(html, /<script>|<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle="|\son[a-z]+="|https?:\/\//i, 'no inline script, style or handler (CSP), no CDN');

    for (const [asset, type, cache] of [[script, /^text\/javascript/, 'public, max-age=31536000, immutable'], [style, /^text\/css/, 'public, max-age=31536000, immutable'],
      ['/ui/favicon.svg', /^image\/svg\+xml/, 'no-cache']] as const) {
      const res = await fetch(`${svc.base}${asset}`, { headers: { 'accept-encoding': 'identity' } });
      assert.equal(res.status, 200, asset);
      assert.match(res.headers.get('content-type') ?? '', type);
      assert.equal(res.headers.get('cache-control'), cache, asset);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('content-security-policy'), CSP);
      const body = await res.text();
      assert.ok(body.length > 0);
      const etag = res.headers.get('etag');
      assert.match(etag ?? '', /^(W\/)?"[A-Za-z0-9_-]+"$/);
      // (raw: fetch() adds `Cache-Control: no-cache` to conditional requests, an end-to-end reload)
      const again = await rawGet(svc.port, asset, { 'if-none-match': etag!, 'accept-encoding': 'identity' });
      assert.equal(again.status, 304, `${asset} revalidates`);
      assert.equal(again.body, '');
    }
    // Pre-compressed at build time: a browser accepting brotli gets the .br file, decoded here.
    const br = await rawGet(svc.port, script, { 'accept-encoding': 'br' });
    assert.equal(br.status, 200);
    assert.equal(br.headers['content-encoding'], 'br');
    assert.match(String(br.headers['content-type']), /^(text|application)\/javascript/);
    assert.ok(Number(br.headers['content-length']) < (await (await fetch(`${svc.base}${script}`, { headers: { 'accept-encoding': 'identity' } })).text()).length / 2);

    const missing = await fetch(`${svc.base}/ui/nope.js`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: 'not_found', message: 'no such asset: /ui/nope.js' });

    for (const target of ['/ui/../package.json', '/ui/..%2fpackage.json', '/ui/%2e%2e/%2e%2e/package.json', '/ui/%2e%2e%2f%2e%2e%2fpackage.json',
      '/ui/..\\package.json', '/ui/.hidden.js', '/ui//etc/passwd', '/ui/%2fetc%2fpasswd', '/ui/', '/ui/.build-stamp', '/ui/index.html', '/ui/assets/../../../package.json']) {
      const res = await rawGet(svc.port, target);
      assert.equal(res.status, 404, `${target} is refused`);
      assert.equal(JSON.parse(res.body).error, 'not_found', target);
      assert.doesNotMatch(res.body, /"name": "svc"|root:/, target);
    }
    // A NUL in the path is refused (by the input guard or the asset name check), never served.
    const nul = await rawGet(svc.port, '/ui/favicon.svg%00.css');
    assert.ok(nul.status === 400 || nul.status === 404, String(nul.status));
    assert.equal(typeof JSON.parse(nul.body).message, 'string');
    assert.doesNotMatch(nul.body, /<svg/);
  });

  test('local sign-in by keyboard, wrong password, home, Groups screen grant and revoke, sign out', async () => {
    const { page, errors, failed } = await browser.newPage();
    const mutations = recordMutations(page);
    await page.goto(`${svc.base}/`);

    // The plain form (no SSO button), with the email field focused.
    await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Sign in with single sign-on' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Break-glass sign-in' }).count(), 0);
    assert.equal(await focused(page), '#email');
    await browser.screenshot(page, 'local-01-sign-in');
    assert.deepEqual(await seriousViolations(page), [], 'sign-in: no serious accessibility violation');

    // Wrong password: typed, Tab to the password, Enter submits; the API's message is shown.
    await page.keyboard.type(ADMIN.email);
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), '#password');
    await page.keyboard.type('not-the-password');
    await page.keyboard.press('Enter');
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: /invalid email or password/i }).waitFor();
    assert.equal(await focused(page), '#password', 'focus returns to the password field');
    assert.equal(await page.locator('#password').inputValue(), '');
    await browser.screenshot(page, 'local-02-wrong-password');

    await page.keyboard.type(ADMIN.password);
    await page.keyboard.press('Enter');
    await page.locator('#signed-in-as').getByText('Administrator').waitFor();
    assert.equal(await page.locator('#alert').textContent(), '', `the error is cleared; failed requests: ${JSON.stringify(failed)}`);
    const workspaces = page.locator('#workspaces');
    await workspaces.waitFor();
    assert.match(await workspaces.innerText(), /default\s+default\s+ws_admin/);
    assert.match(await page.locator('#platform-roles').innerText(), /platform_admin/);
    assert.equal(await page.getByRole('link', { name: 'Members of' }).count(), 1);
    await browser.screenshot(page, 'local-03-home');
    assert.deepEqual(await seriousViolations(page), [], 'home: no serious accessibility violation');

    // Groups screen: grant and revoke platform_admin on an existing group (by id).
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Groups' }).click();
    await page.getByRole('heading', { name: 'Groups', exact: true }).waitFor();
    const row = page.locator('#groups-table tr[data-group="ops-local"]');
    assert.match(await row.innerText(), /ops-local\s+local\s+0\s+no/);
    await page.getByRole('button', { name: 'Grant platform_admin to ops-local' }).click();
    await page.getByRole('status').filter({ hasText: 'Granted platform_admin to group ops-local.' }).waitFor();
    assert.match(await row.innerText(), /\byes\b/);
    assert.equal(await focused(page), (await page.getByRole('button', { name: 'Revoke platform_admin from ops-local' }).getAttribute('id').then((id) => `#${id}`)), 'focus stays on the row');
    await browser.screenshot(page, 'local-04-groups-granted');

    page.once('dialog', (d) => { assert.match(d.message(), /Revoke platform_admin from group ops-local/); void d.accept(); });
    await page.getByRole('button', { name: 'Revoke platform_admin from ops-local' }).click();
    await page.getByRole('status').filter({ hasText: 'Revoked platform_admin from group ops-local.' }).waitFor();
    assert.match(await row.innerText(), /\bno\b/);

    // Grant to an identity-provider group by name: the confirmation is required.
    await page.getByLabel('Group name').fill('platform-admins');
    await page.getByLabel('Group name').press('Enter');
    assert.equal(await page.locator('#groups-table tr[data-group="platform-admins"]').count(), 0, 'not granted without the confirmation');
    await page.getByLabel(/I confirm that my organisation controls this group/).check();
    await page.getByRole('button', { name: 'Grant platform_admin', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Granted platform_admin to group platform-admins.' }).waitFor();
    assert.match(await page.locator('#groups-table tr[data-group="platform-admins"]').innerText(), /platform-admins\s+identity provider\s+0\s+yes/);
    await browser.screenshot(page, 'local-05-groups');
    assert.deepEqual(await seriousViolations(page), [], 'groups: no serious accessibility violation');

    // Errors of the API are shown: a second local group with that name makes the name ambiguous.
    const admin = await svc.server.services.db.selectFrom('users').select(['id', 'email']).where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
    await createGroup(svc.server.services.db, admin, 'platform-admins');
    await page.getByLabel('Group name').fill('platform-admins');
    await page.getByLabel(/I confirm that my organisation controls this group/).check();
    await page.getByRole('button', { name: 'Grant platform_admin', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: /both a local and an identity-provider group; use its id/ }).waitFor();
    await browser.screenshot(page, 'local-06-groups-error');

    // Every state-changing request carried the CSRF cookie's value in the header.
    const csrf = await cookie(page, 'svc_csrf');
    assert.ok(csrf);
    const changes = mutations.filter((m) => m.url !== '/api/auth/login');
    assert.ok(changes.length >= 4, JSON.stringify(mutations));
    for (const m of changes) assert.equal(m.csrf, csrf, `${m.method} ${m.url} sends the CSRF header`);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'You have signed out.' }).waitFor();
    assert.equal(await cookie(page, 'svc_session'), undefined);
    assert.equal(mutations.at(-1)?.url, '/api/auth/logout');
    assert.equal(mutations.at(-1)?.csrf, csrf);
    assert.equal(await page.evaluate(() => fetch('/api/me').then((r) => r.status)), 401);
    await browser.screenshot(page, 'local-07-signed-out');
    assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  });
});

// ---------------------------------------------------------------------------------------------
// Single sign-on through a real OpenID provider. The provider helper and the SSO routes are
// written by another capability; this scenario uses their interface.

interface OidcProviderHandle {
  issuer: string;
  port: number;
  setGroups(sub: string, groups: string[]): void;
  stop(): Promise<void>;
}
type StartOidcProvider = (opts: {
  clientId: string; clientSecret: string; redirectUris: string[]; backchannelLogoutUri?: string;
  accounts: Record<string, { email: string; name: string; groups: string[] }>;
}) => Promise<OidcProviderHandle>;

const PROVIDER_HELPER = new URL('./helpers/oidc-provider.ts', import.meta.url);
const SSO_USER = { sub: 'sso-ana', email: 'ana@example.test', name: 'Ana Analyst', groups: ['analysts'] };

/** Signs in on the provider's development interaction pages: login (the sub), then consent. */
async function providerSignIn(page: Page, base: string, sub: string, shot: (name: string) => Promise<unknown>): Promise<void> {
  const login = page.locator('input[name="login"]');
  await login.waitFor();
  await shot('sso-02-provider-login');
  await login.fill(sub);
  const password = page.locator('input[name="password"]');
  if (await password.count()) await password.fill('any-password');
  await Promise.all([page.waitForNavigation(), login.press('Enter')]);
  for (let i = 0; i < 5 && !page.url().startsWith(base); i++) {
    // Consent (or any further interaction step): its submit button continues the flow.
    const submit = page.locator('button[type="submit"], button[autofocus], input[type="submit"]').first();
    await submit.waitFor();
    if (i === 0) await shot('sso-03-provider-consent');
    await Promise.all([page.waitForNavigation(), submit.click()]);
  }
  await page.waitForURL((u) => u.toString().startsWith(base));
}

describe('UI with single sign-on on', () => {
  let svc: Svc | undefined;
  let provider: OidcProviderHandle | undefined;

  before(async () => {
    if (!existsSync(PROVIDER_HELPER)) return;
    const { startOidcProvider } = (await import('./helpers/oidc-provider.js')) as { startOidcProvider: StartOidcProvider };
    const port = await freePort();
    const redirect = `http://127.0.0.1:${port}/api/auth/oidc/callback`;
    const clientId = 'svc-ui-test';
    const clientSecret = randomBytes(24).toString('base64url');
    provider = await startOidcProvider({
      clientId, clientSecret, redirectUris: [redirect],
      accounts: { [SSO_USER.sub]: { email: SSO_USER.email, name: SSO_USER.name, groups: SSO_USER.groups } },
    });
    svc = await startSvc({
      SVC_OIDC__ENABLED: 'true',
      SVC_OIDC__ISSUER_URL: provider.issuer,
      SVC_OIDC__CLIENT_ID: clientId,
      SVC_OIDC__CLIENT_SECRET: clientSecret,
      SVC_OIDC__REDIRECT_URL: redirect,
      SVC_OIDC__SCOPES: '["openid","email","profile","groups"]',
      SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64'),
    }, port);
  });
  after(async () => { await svc?.close(); await provider?.stop(); });

  test('signs in through the provider, a platform admin grants the group a role on the Members screen, sign out', async () => {
    assert.ok(existsSync(PROVIDER_HELPER), 'test/helpers/oidc-provider.ts (the OpenID provider of the tests) is missing');
    assert.ok(svc && provider);
    const base = svc.base;

    // The SSO user: the sign-in page offers single sign-on; the local form is behind a link.
    const sso = await browser.newPage();
    const ssoMutations = recordMutations(sso.page);
    await sso.page.goto(`${base}/`);
    await sso.page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    assert.equal(await sso.page.locator('#local-form').isHidden(), true, 'the local form is hidden behind the break-glass link');
    await browser.screenshot(sso.page, 'sso-01-sign-in');

    await sso.page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    await providerSignIn(sso.page, base, SSO_USER.sub, (n) => browser.screenshot(sso.page, n));
    await sso.page.locator('#signed-in-as').getByText(SSO_USER.name).waitFor();
    await sso.page.locator('#no-workspaces').waitFor();
    assert.match(await sso.page.locator('#no-workspaces').innerText(), /no workspaces/);
    assert.match(await sso.page.locator('#my-groups').innerText(), /analysts\s+identity provider/);
    assert.equal(await sso.page.getByRole('link', { name: 'Groups' }).count(), 0, 'no Groups screen without platform_admin');
    await browser.screenshot(sso.page, 'sso-04-home-no-workspaces');

    // The platform admin, in a second browser session, signs in through the break-glass form
    // using only the keyboard: Tab past the skip link and the SSO button, Enter opens the form.
    const adm = await browser.newPage();
    const admMutations = recordMutations(adm.page);
    await adm.page.goto(`${base}/`);
    await adm.page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    await adm.page.keyboard.press('Tab');
    assert.equal(await focused(adm.page), '#skip-link');
    await adm.page.keyboard.press('Tab');
    assert.equal(await focused(adm.page), '#sso-login');
    await adm.page.keyboard.press('Tab');
    assert.equal(await focused(adm.page), '#break-glass');
    await adm.page.keyboard.press('Enter');
    assert.equal(await adm.page.locator('#break-glass').getAttribute('aria-expanded'), 'true');
    assert.equal(await focused(adm.page), '#email');
    await adm.page.keyboard.type(ADMIN.email);
    await adm.page.keyboard.press('Tab');
    await adm.page.keyboard.type(ADMIN.password);
    await browser.screenshot(adm.page, 'sso-05-break-glass-form');
    await adm.page.keyboard.press('Enter');
    await adm.page.locator('#signed-in-as').getByText('Administrator').waitFor();

    // Members screen of workspace default: add group analysts as ws_viewer.
    await adm.page.getByRole('link', { name: 'Members of default' }).click();
    await adm.page.getByRole('heading', { name: /Members of/ }).waitFor();
    await browser.screenshot(adm.page, 'sso-06-members-before');
    await adm.page.getByLabel('Group name').fill('analysts');
    await adm.page.getByLabel('Role', { exact: true }).selectOption('ws_viewer');
    await adm.page.getByRole('button', { name: 'Add group' }).click();
    await adm.page.getByRole('status').filter({ hasText: 'Added group analysts to default as ws_viewer.' }).waitFor();
    const row = adm.page.locator('#members-table tr[data-group="analysts"]');
    assert.match(await row.innerText(), /analysts\s+identity provider/);
    assert.equal(await adm.page.getByLabel('Role of analysts', { exact: true }).inputValue(), 'ws_viewer');
    await browser.screenshot(adm.page, 'sso-07-members-added-viewer');
    assert.deepEqual(await seriousViolations(adm.page), [], 'members: no serious accessibility violation');

    // Change it to ws_editor.
    await adm.page.getByLabel('Role of analysts', { exact: true }).selectOption('ws_editor');
    await adm.page.getByRole('button', { name: 'Save role of analysts' }).click();
    await adm.page.getByRole('status').filter({ hasText: 'Group analysts now has ws_editor in default.' }).waitFor();
    assert.equal(await adm.page.getByLabel('Role of analysts', { exact: true }).inputValue(), 'ws_editor');
    await browser.screenshot(adm.page, 'sso-08-members-changed-editor');
    const admCsrf = await cookie(adm.page, 'svc_csrf');
    const admChanges = admMutations.filter((m) => m.url !== '/api/auth/login');
    assert.deepEqual(admChanges.map((m) => m.method), ['PUT', 'PUT']);
    for (const m of admChanges) assert.equal(m.csrf, admCsrf, `${m.method} ${m.url} sends the CSRF header`);

    // The SSO user reloads and sees workspace default with ws_editor.
    await sso.page.reload();
    await sso.page.locator('#signed-in-as').getByText(SSO_USER.name).waitFor();
    const ws = sso.page.locator('#workspaces');
    await ws.waitFor();
    assert.match(await ws.innerText(), /default\s+default\s+ws_editor/);
    assert.equal(await sso.page.getByRole('link', { name: 'Members of default' }).count(), 0, 'ws_editor does not manage members');
    await browser.screenshot(sso.page, 'sso-09-home-ws-editor');

    // Sign out: back to the sign-in view, the session is gone.
    await sso.page.getByRole('button', { name: 'Sign out' }).click();
    await sso.page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    await sso.page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
    await sso.page.getByRole('status').filter({ hasText: 'You have signed out.' }).waitFor();
    assert.equal(await sso.page.evaluate(() => fetch('/api/me').then((r) => r.status)), 401);
    const logout = ssoMutations.find((m) => m.url === '/api/auth/logout');
    assert.ok(logout?.csrf, 'sign-out sent the CSRF header');
    await browser.screenshot(sso.page, 'sso-10-signed-out');

    assert.deepEqual(sso.errors.filter((e) => e.startsWith(base)), [], 'no console errors for the SSO user on svc pages');
    assert.deepEqual(adm.errors, [], 'no console errors for the administrator');
  });
});
