// The console's Apps screen in Debian's Chromium against a real listening service and its apps
// listener (docs/apps.md "Opening an app"): create an app, write and publish its source, open it
// in run mode and in edit mode inside the iframe through the ticket flow, and check from inside
// the iframe that the ticket was redeemed (its own `__Host-` cookie answers GET /_svc/session);
// a copied ticket URL opened on its own redeems nothing; a viewer is offered Open only; without
// apps.origin the screen shows the server's 503 message. axe-core on each screen; screenshots to
// test-results/ui-apps-*.png.
//
// Two origins on loopback: the service at http://localhost:<port> and the apps origin at
// http://localhost:<apps port>. They are different origins (the port is part of an origin: the
// framing policy, postMessage's target origin and the redeem's Origin check all see them apart)
// but the same site, as `svc.example.com` and `apps.example.com` are in production, which matters
// because the app cookie is SameSite=Strict and a cross-site iframe would never send it
// (127.0.0.1 beside localhost are two sites, and the frame would stay signed out). The cookie is
// `__Host-` and Secure on plain http: Chromium treats http://localhost as potentially trustworthy
// and accepts Secure cookies from it (it would refuse them from http://<any other host>). One
// difference from production: cookies are not isolated by port, so on loopback the service's
// cookies also reach the apps listener, which reads none but its own, and the reverse.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { ADMIN, signIn, startSvc, type Svc } from './helpers/console.js';
import { appsEnv, call, pasteSource, redeemedFrame, storageEnv } from './helpers/console-apps.js';
import { startS3, type TestS3 } from './helpers/s3.js';

const VIEWER = { email: 'viewer@example.test', password: 'viewer-password-1' };
const SOURCE = 'import marimo\napp = marimo.App()\n\n@app.cell\ndef hello():\n    print("sales by region")\n';

let browser: TestBrowser; let s3: TestS3;
before(async () => { s3 = await startS3(); browser = await launchBrowser(); });
after(async () => { await browser?.close(); await s3?.stop(); });

describe('the Apps screen', () => {
  let svc: Svc; let base: string; let apps: string;
  before(async () => {
    const o = await appsEnv();
    ({ base, apps } = o);
    svc = await startSvc({ ...storageEnv(s3), ...o.env }, o.port);
  });
  after(async () => { await svc?.close(); });

  test('create, publish, open in run and edit mode through the ticket; a copied link opens nothing; a viewer only opens', async () => {
    const { page, errors } = await browser.newPage();
    await signIn(page, base);
    await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Apps' }).click();
    await page.getByRole('heading', { name: 'Apps', level: 1 }).waitFor();
    await page.locator('#no-apps').waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'apps list: no serious accessibility violation');

    // A bad name is refused with the server's message, in the form.
    await page.getByLabel('Name').fill('Sales Dashboard');
    await page.evaluate(() => document.querySelector('#app-name')!.removeAttribute('pattern'));
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.locator('.form-error.visible').filter({ hasText: /lower-case letters, digits and -/ }).waitFor();

    await page.getByLabel('Name').fill('sales-dashboard');
    await page.getByLabel('Description').fill('Sales by region');
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { name: 'sales-dashboard', level: 1 }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Created app sales-dashboard.' }).waitFor();
    assert.match(await page.locator('#app-published').innerText(), /Not published yet/);
    // Nothing to run before the first publish: Open is not offered.
    assert.equal(await page.getByRole('link', { name: 'Open', exact: true }).count(), 0);

    await pasteSource(page, '#app-source', SOURCE);
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved the draft.' }).waitFor();
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('status').filter({ hasText: 'Published version 1. Viewers now run it.' }).waitFor();
    assert.match(await page.locator('#app-published').innerText(), /Published version 1/);
    assert.deepEqual(await seriousViolations(page), [], 'app page: no serious accessibility violation');
    await browser.screenshot(page, 'apps-01-source');
    const appId = /#\/w\/default\/apps\/([0-9a-f-]{36})$/.exec(page.url())![1];
    // The draft went to the object store: the server answers what the editor saved.
    assert.equal((await call(page, 'GET', `/api/workspaces/default/apps/${appId}/versions/1`)).json?.source, SOURCE);

    // The list: name, description, published version; Open, Edit, Delete for an editor.
    await page.getByRole('link', { name: 'Apps' }).first().click();
    const row = page.locator('#apps-table tr[data-app="sales-dashboard"]');
    await row.waitFor();
    assert.match(await row.innerText(), /sales-dashboard\s+Sales by region\s+version 1/);
    await browser.screenshot(page, 'apps-02-list');

    // Run mode: the ticket POST carries the CSRF header; the iframe on the apps origin gets the
    // secret by postMessage and redeems; its own cookie then answers /_svc/session.
    const ticketCall = page.waitForRequest((r) => r.url().endsWith(`/api/workspaces/default/apps/${appId}/tickets`));
    await row.getByRole('link', { name: 'Open sales-dashboard' }).click();
    const req = await ticketCall;
    assert.equal(req.method(), 'POST');
    assert.ok(req.headers()['x-svc-csrf'], 'the ticket request carries the CSRF header');
    assert.deepEqual(JSON.parse(req.postData()!), { mode: 'run' });
    const src = await page.locator('#app-frame').getAttribute('src');
    assert.ok(src!.startsWith(`${apps}/_svc/open?t=`), src!);
    assert.doesNotMatch(src!, /secret/, 'the secret is never in the URL');
    const run = await redeemedFrame(page, apps);
    assert.equal(run.session.status, 200, JSON.stringify(run.session.body));
    assert.deepEqual(run.session.body, { workspace: 'default', app: appId, version: 1, mode: 'run' });
    await page.getByRole('heading', { name: /sales-dashboard \(run mode, version 1\)/ }).waitFor();
    assert.deepEqual(await seriousViolations(page, { iframes: false }), [], 'app frame: no serious accessibility violation');
    await browser.screenshot(page, 'apps-03-run');

    // The app cookie is the apps origin's own: HttpOnly, so no script of either page reads it.
    const cookies = await page.context().cookies(apps);
    const appCookie = cookies.find((c) => c.name === '__Host-svc_app');
    assert.ok(appCookie, JSON.stringify(cookies.map((c) => c.name)));
    assert.deepEqual([appCookie.httpOnly, appCookie.secure, appCookie.sameSite, appCookie.path], [true, true, 'Strict', '/']);
    assert.equal(await run.frame.evaluate(() => document.cookie.includes('svc_app')), false);

    // Edit mode binds no version.
    await page.getByRole('link', { name: 'Edit mode' }).click();
    await page.getByRole('heading', { name: /sales-dashboard \(edit mode\)/ }).waitFor();
    const edit = await redeemedFrame(page, apps);
    assert.deepEqual(edit.session.body, { workspace: 'default', app: appId, version: null, mode: 'edit' });

    // A copied ticket URL opens nothing on its own: a fresh ticket, opened top-level in another
    // person's browser, never redeems (no parent hands it the secret) and leaves no session.
    const fresh = await call(page, 'POST', `/api/workspaces/default/apps/${appId}/tickets`, { mode: 'run' });
    assert.equal(fresh.status, 201, JSON.stringify(fresh.json));
    const other = await browser.newPage();
    await other.page.goto(String(fresh.json!.url));
    await other.page.getByText('Opening app…').waitFor();
    const alone = await other.page.evaluate(async () => (await fetch('/_svc/session')).status);
    assert.equal(alone, 401, 'the copied link minted no session');
    assert.equal(other.page.url(), String(fresh.json!.url), 'the page is still the ticket page');
    await browser.screenshot(other.page, 'apps-04-copied-link');
    // The ticket is still unspent: only the holder of the secret could have redeemed it.
    const redeem = await fetch(`${apps}/_svc/redeem`, {
      method: 'POST', headers: { 'content-type': 'application/json', origin: apps }, body: JSON.stringify({ ticket: fresh.json!.ticket, secret: fresh.json!.secret }),
    });
    assert.equal(redeem.status, 204);

    // Framing is enforced by the browser: the same console served from another origin
    // (http://127.0.0.1:<port>, not apps.service_origin) frames the ticket URL, and Chromium
    // refuses it by the apps origin's frame-ancestors, so the frame never says it is ready and
    // never gets the secret.
    const foreign = await browser.newPage();
    const foreignBase = `http://127.0.0.1:${svc.port}`;
    await signIn(foreign.page, foreignBase);
    const refused = foreign.page.waitForEvent('console', (m) => /frame-ancestors/.test(m.text()), { timeout: 30_000 });
    await foreign.page.goto(`${foreignBase}/#/w/default/apps/${appId}/run`);
    assert.match((await refused).text(), new RegExp(`Framing '${apps}/' violates .*"frame-ancestors ${base}"`));
    const blocked = await (await foreign.page.locator('#app-frame').elementHandle())!.contentFrame();
    assert.doesNotMatch(blocked!.url(), /^http:\/\/localhost/, 'the apps origin never loaded in a foreign parent');
    assert.equal(await foreign.page.locator('#app-frame-status').innerText(), 'Opening sales-dashboard…', 'the secret was never handed over');
    // Once the ticket expired (apps.ticket_ttl_secs, 30 s) without the handover, the screen says why.
    await foreign.page.locator('.form-error.visible').filter({ hasText: `apps.service_origin is this page's origin (${foreignBase})` }).waitFor({ timeout: 120_000 });
    await browser.screenshot(foreign.page, 'apps-05-foreign-parent-refused');

    // A viewer sees published apps only and is offered Open and nothing else.
    assert.equal((await call(page, 'POST', '/api/users', { email: VIEWER.email, password: VIEWER.password, name: 'Vera Viewer' })).status, 201);
    assert.equal((await call(page, 'POST', '/api/groups', { name: 'app-viewers' })).status, 201);
    assert.equal((await call(page, 'PUT', `/api/groups/app-viewers/members/${encodeURIComponent(VIEWER.email)}`)).status, 200);
    assert.equal((await call(page, 'PUT', '/api/workspaces/default/members/groups/app-viewers', { role: 'ws_viewer' })).status, 200);
    assert.equal((await call(page, 'POST', '/api/workspaces/default/apps', { name: 'draft-only' })).status, 201);
    const v = await browser.newPage();
    await signIn(v.page, base, VIEWER);
    await v.page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Apps' }).click();
    const vrow = v.page.locator('#apps-table tr[data-app="sales-dashboard"]');
    await vrow.waitFor();
    assert.equal(await v.page.locator('#apps-table tr[data-app="draft-only"]').count(), 0, 'a viewer never sees an unpublished app');
    assert.deepEqual(await vrow.locator('td.app-actions').getByRole('link').allInnerTexts(), ['Open']);
    assert.equal(await vrow.getByRole('button').count(), 0, 'no Delete for a viewer');
    assert.equal(await vrow.locator('th a').count(), 0, 'no link to the draft editor for a viewer');
    assert.equal(await v.page.getByRole('button', { name: 'Create app' }).count(), 0);
    assert.deepEqual(await seriousViolations(v.page), [], 'viewer apps list: no serious accessibility violation');
    await vrow.getByRole('link', { name: 'Open sales-dashboard' }).click();
    const vrun = await redeemedFrame(v.page, apps);
    assert.equal(vrun.session.body.mode, 'run');
    assert.equal(await v.page.getByRole('link', { name: 'Edit mode' }).count(), 0);
    // Edit mode typed into the address bar is refused by the console before any ticket is asked.
    await v.page.goto(`${base}/#/w/default/apps/${appId}/edit`);
    await v.page.locator('.form-error.visible').filter({ hasText: 'Edit mode needs the ws_editor role in default.' }).waitFor();
    assert.equal(await v.page.locator('#app-frame').count(), 0);
    await browser.screenshot(v.page, 'apps-06-viewer-edit-refused');

    // Delete asks first, then the app is gone from the list.
    await page.goto(`${base}/#/w/default/apps`);
    page.once('dialog', (d) => { assert.match(d.message(), /^Delete app sales-dashboard\?/); void d.accept(); });
    await row.getByRole('button', { name: 'Delete sales-dashboard' }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted app sales-dashboard.' }).waitFor();
    assert.equal(await row.count(), 0);
    assert.deepEqual([...errors, ...v.errors], [], 'no console errors (CSP violations, exceptions)');
  });
});

describe('the Apps screen without apps.origin', () => {
  let svc: Svc;
  before(async () => { svc = await startSvc(storageEnv(s3)); });
  after(async () => { await svc?.close(); });

  test('Open shows the server\'s 503 message where it happened and frames nothing', async () => {
    const { page, errors } = await browser.newPage();
    await signIn(page, svc.base, ADMIN);
    const created = await call(page, 'POST', '/api/workspaces/default/apps', { name: 'report', source: 'x = 1\n' });
    assert.equal(created.status, 201);
    const id = String(created.json!.id);
    assert.equal((await call(page, 'POST', `/api/workspaces/default/apps/${id}/publish`)).status, 201);
    await page.goto(`${svc.base}/#/w/default/apps`);
    await page.locator('#apps-table tr[data-app="report"]').getByRole('link', { name: 'Open report' }).click();
    await page.locator('.form-error.visible').filter({ hasText: 'Data apps are not served: apps.origin is empty.' }).waitFor();
    assert.equal(await page.locator('#app-frame').count(), 0);
    assert.deepEqual(await seriousViolations(page), [], 'app frame error: no serious accessibility violation');
    await browser.screenshot(page, 'apps-07-not-enabled');
    assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  });
});
