// The console's administration screens of a workspace walked as users in Debian's Chromium against
// a real `svc serve` with the policy service on and a master key: connections (register with a
// write-only secret that never comes back, the server's refusal of a credential in the settings,
// delete), policies (the editor: resources, principals, access types; the server's message on the
// item it names; edit; delete), tags (a refused type, tag, fill a policy's resources from it,
// remove), and a Data API client made on the Data API screen whose secret, shown once, gets a
// token that calls the endpoint. A ws_viewer reads connections and is offered none of it. axe-core
// on each screen; screenshots to test-results/ui-admin-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { ADMIN, signIn, startSvc, type Svc } from './helpers/console.js';
import { addMember, call } from './helpers/console-apps.js';

const VIEWER = { email: 'conn-viewer@example.test', password: 'viewer-password-1' };
let browser: TestBrowser; let svc: Svc;
before(async () => {
  svc = await startSvc({
    SVC_POLICY_SERVICE__ENABLED: 'true', SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
    SVC_ENGINES__PROVISIONER: 'none', SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64'),
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); });

const wsLink = (page: Page, name: string) => page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name, exact: true });
const status = (page: Page, text: string | RegExp) => page.getByRole('status').filter({ hasText: text }).waitFor();

test('Connections: register with a write-only secret, a refused setting, delete', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await wsLink(page, 'Connections').click();
  await page.getByRole('heading', { name: 'Connections', level: 1 }).waitFor();
  await page.locator('#no-connections').waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'connections: no serious accessibility violation');

  // A database offers host, port, database and user as settings and a password as its secret.
  await page.getByLabel('Name', { exact: true }).fill('warehouse');
  for (const [i, v] of ['db.internal', '5432', 'sales', 'svc'].entries()) await page.locator(`#config-value-${i}`).fill(v);
  assert.deepEqual(await page.locator('#config-rows input[id^="config-key-"]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value)), ['host', 'port', 'database', 'user']);
  // A credential among the settings: the server refuses it, its message in the form.
  await page.getByRole('button', { name: 'Add a setting' }).click();
  await page.getByLabel('Setting 5', { exact: true }).fill('password');
  await page.getByLabel('Value 5', { exact: true }).fill('oops-in-the-clear');
  await page.getByLabel('Password', { exact: true }).fill('s3cr3t-pw');
  await page.getByRole('button', { name: 'Register connection' }).click();
  await page.locator('.form-error.visible').getByText('Config key password looks like a credential: put credentials in "secret", which is stored sealed.').waitFor();
  await page.getByRole('button', { name: 'Remove setting 5 (password)' }).click();
  await page.getByRole('button', { name: 'Register connection' }).click();
  await status(page, 'Registered connection warehouse; its secret is sealed and will not be shown.');
  // Settings are listed by name (the database keeps no order).
  const row = page.locator('#connections-table tr[data-connection="warehouse"]');
  assert.match(await row.innerText(), /warehouse\s+database\s+database\s+sales\s+host\s+db\.internal\s+port\s+5432\s+user\s+svc\s+sealed/);
  assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '', 'the password is cleared once sent');
  // The secret never comes back: not on the page, not in the API's answer.
  assert.doesNotMatch(await page.content(), /s3cr3t-pw/);
  const got = await call(page, 'GET', '/api/workspaces/default/connections/warehouse');
  assert.deepEqual(got.json, { name: 'warehouse', kind: 'database', config: { host: 'db.internal', port: 5432, database: 'sales', user: 'svc' }, has_secret: true, created_at: got.json!.created_at });

  // Storage: named credentials, each value a password input.
  await page.getByLabel('Kind').selectOption('storage');
  await page.getByLabel('Name', { exact: true }).fill('lake');
  await page.locator('#config-value-1').fill('raw');
  assert.equal(await page.getByLabel('Secret value 2', { exact: true }).getAttribute('type'), 'password');
  await page.getByLabel('Secret value 1', { exact: true }).fill('AKIA-test');
  await page.getByLabel('Secret value 2', { exact: true }).fill('storage-secret-1');
  await page.getByRole('button', { name: 'Register connection' }).click();
  await status(page, 'Registered connection lake');
  assert.match(await page.locator('#connections-table tr[data-connection="lake"]').innerText(), /lake\s+storage\s+bucket\s+raw\s+sealed/);
  assert.deepEqual(await seriousViolations(page), [], 'connections listed: no serious accessibility violation');
  await browser.screenshot(page, 'admin-01-connections');

  page.once('dialog', (d) => { assert.match(d.message(), /^Delete connection lake and its sealed secret\?/); void d.accept(); });
  await page.getByRole('button', { name: 'Delete lake' }).click();
  await status(page, 'Deleted connection lake.');
  assert.equal(await page.locator('#connections-table tr[data-connection="lake"]').count(), 0);
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('Policies and tags: the editor, the server\'s message on the item it names, edit, delete', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);

  // A tag first: a refused type, then PII on a column.
  await wsLink(page, 'Tags').click();
  await page.getByRole('heading', { name: 'Tags', level: 1 }).waitFor();
  await page.locator('#no-tags').waitFor();
  await page.getByLabel('Type').fill('personal data!');
  await page.getByLabel('Catalog').fill('lake');
  await page.getByRole('button', { name: 'Tag resources' }).click();
  await page.locator('.form-error.visible').getByText(/^Invalid tag type "personal data!"/).waitFor();
  await page.getByLabel('Type').fill('PII');
  await page.getByLabel('Schema').fill('sales');
  await page.getByLabel('Table').fill('customers');
  await page.getByLabel('Column').fill('email, phone');
  await page.getByRole('button', { name: 'Add an attribute' }).click();
  await page.getByLabel('Attribute 1', { exact: true }).fill('level');
  await page.getByLabel('Value 1', { exact: true }).fill('high');
  await page.getByRole('button', { name: 'Tag resources' }).click();
  await status(page, 'Tagged catalog lake › schema sales › table customers › column email, phone as PII; tag version 1.');
  assert.match(await page.locator('#tags-table tr[data-tag="PII"]').innerText(), /PII\s+level=high\s+catalog lake › schema sales › table customers › column email, phone/);
  assert.deepEqual(await seriousViolations(page), [], 'tags: no serious accessibility violation');
  await browser.screenshot(page, 'admin-02-tags');

  await wsLink(page, 'Policies').click();
  await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
  await page.locator('#no-policies').waitFor();
  assert.match(await page.locator('#service-versions').innerText(), /policy version 0, tag version 1/);
  assert.deepEqual(await seriousViolations(page), [], 'policies: no serious accessibility violation');

  const form = page.locator('#policy-form');
  // Principals are suggested from the workspace's members (here the administrator's direct role).
  assert.deepEqual(await page.locator('#policy-users option').evaluateAll((els) => els.map((e) => (e as HTMLOptionElement).value)), [ADMIN.email]);
  assert.equal(await page.locator('#allow-item-1').getByLabel('Users').getAttribute('list'), 'policy-users');
  await form.getByLabel('Name').fill('analysts read sales');
  // Resources filled from the tagged resource, then widened to the whole table.
  await form.getByLabel('Fill resources from a tagged resource').selectOption({ label: 'PII: catalog lake › schema sales › table customers › column email, phone' });
  assert.equal(await form.getByLabel('Column').inputValue(), 'email, phone');
  await form.getByLabel('Table').fill('*');
  await form.getByLabel('Column').fill('');
  // An allow item with access types but nobody to grant them to: the server's message, on that item.
  const allow1 = page.locator('#allow-item-1');
  await allow1.getByRole('checkbox', { name: 'select' }).check();
  await allow1.getByRole('checkbox', { name: 'show' }).check();
  await page.getByRole('button', { name: 'Create policy' }).click();
  await page.locator('.form-error.visible').getByText('Allow[0] needs users, groups or roles.').waitFor();
  assert.equal(await allow1.getAttribute('aria-invalid'), 'true');
  assert.equal(await allow1.locator('.error-text').innerText(), 'Allow[0] needs users, groups or roles.');
  await browser.screenshot(page, 'admin-03-policy-refused');
  await allow1.getByLabel('Groups').fill('analysts');
  await allow1.getByRole('checkbox', { name: 'ws_viewer' }).check();
  await page.getByRole('button', { name: 'Create policy' }).click();
  await status(page, 'Created policy analysts read sales.');
  const row = page.locator('#policies-table tr[data-policy="analysts read sales"]');
  assert.match(await row.innerText(), /catalog lake › schema sales › table \*\s+group analysts, role ws_viewer: select, show\s+none\s+1/);
  assert.match(await page.locator('#service-versions').innerText(), /policy version 1/);
  assert.equal(await page.locator('#policy-form #policy-name').inputValue(), '', 'the create form is emptied');

  // Edit: the form holds the policy; a deny item is added and Save replaces it.
  await row.getByRole('button', { name: 'Edit analysts read sales' }).click();
  await page.getByRole('heading', { name: 'Edit policy analysts read sales' }).waitFor();
  assert.equal(await form.getByLabel('Schema').inputValue(), 'sales');
  assert.equal(await page.locator('#allow-item-1').getByRole('checkbox', { name: 'show' }).isChecked(), true);
  await page.getByRole('button', { name: 'Add a deny item' }).click();
  const deny1 = page.locator('#deny-item-1');
  await deny1.getByLabel('Users').fill('intern@example.test');
  await deny1.getByRole('checkbox', { name: 'select' }).check();
  await form.getByLabel('Enabled (engines enforce it)').uncheck();
  await page.getByRole('button', { name: 'Save policy' }).click();
  await status(page, 'Saved policy analysts read sales.');
  assert.match(await row.innerText(), /analysts read sales disabled[\s\S]*group analysts, role ws_viewer: select, show\s+intern@example\.test: select\s+2/);
  await page.getByRole('heading', { name: 'Create a policy' }).waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'policies listed: no serious accessibility violation');
  await browser.screenshot(page, 'admin-04-policies');

  page.once('dialog', (d) => { assert.match(d.message(), /^Delete policy analysts read sales\?/); void d.accept(); });
  await row.getByRole('button', { name: 'Delete analysts read sales' }).click();
  await status(page, 'Deleted policy analysts read sales; policy version 3.');
  await page.locator('#no-policies').waitFor();

  await wsLink(page, 'Tags').click();
  page.once('dialog', (d) => { void d.accept(); });
  await page.getByRole('button', { name: /^Remove PII on catalog lake/ }).click();
  await status(page, /^Removed tag PII on .*; tag version 2\.$/);
  await page.locator('#no-tags').waitFor();

  // Column masks and row filters are listed with their items, and edited in the editor (test/console-policy-masks.test.ts).
  assert.equal((await call(page, 'POST', '/api/workspaces/default/policies', { name: 'hash emails', resources: { catalog: ['lake'], schema: ['crm'], table: ['people'], column: ['email'] }, masks: [{ roles: ['ws_viewer'], type: 'MASK_HASH' }] })).status, 201);
  assert.equal((await call(page, 'POST', '/api/workspaces/default/policies', { name: 'eu rows', resources: { catalog: ['lake'], schema: ['crm'], table: ['orders'] }, row_filters: [{ groups: ['eu-sales'], filter: "region = 'eu'" }] })).status, 201);
  await wsLink(page, 'Policies').click();
  const masked = page.locator('#policies-table tr[data-policy="hash emails"]');
  assert.match(await masked.innerText(), /column email\s+role ws_viewer: mask MASK_HASH\s+1/);
  assert.match(await page.locator('#policies-table tr[data-policy="eu rows"]').innerText(), /group eu-sales: only rows where region = 'eu'/);
  assert.equal(await masked.getByRole('button', { name: 'Edit hash emails' }).count(), 1);
  assert.deepEqual(await seriousViolations(page), [], 'masks and row filters listed: no serious accessibility violation');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('Data API: a client made on screen, its secret shown once, calls the endpoint', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  assert.equal((await call(page, 'PUT', '/api/workspaces/default/data-api/endpoints/answer', { engine: 'embedded', sql: 'SELECT 42 AS answer', params: [] })).status, 201);
  await wsLink(page, 'Data API').click();
  await page.getByRole('heading', { name: 'Create a client' }).waitFor();
  const form = page.locator('#data-api-client-form');
  await form.getByLabel('Client name').fill('reporting');
  // No endpoint ticked: the server's message in the form.
  await form.getByRole('button', { name: 'Create client' }).click();
  await form.locator('.form-error.visible').getByText(/endpoints/i).waitFor();
  await form.getByRole('checkbox', { name: 'answer' }).check();
  await form.getByRole('button', { name: 'Create client' }).click();
  await status(page, 'Created client reporting. Copy its secret now: it is not shown again.');
  const panel = page.locator('#secret-panel');
  const facts = await panel.locator('#client-facts').innerText();
  assert.match(facts, /Audience\s+svc-data-api/);
  assert.match(facts, /Scopes\s+\S*answer/);
  const clientId = /Client id\s+(\S+)/.exec(facts)![1];
  const secret = await panel.getByLabel('Client secret').inputValue();
  assert.ok(secret.length >= 20);
  assert.deepEqual(await seriousViolations(page), [], 'data API client: no serious accessibility violation');
  await browser.screenshot(page, 'admin-05-data-api-client');

  // The secret works: a token for the Data API, and a call with it.
  const token = await fetch(`${svc.base}/oauth/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'client_credentials', audience: 'svc-data-api' }),
  }).then(async (r) => { assert.equal(r.status, 200, await r.clone().text()); return (await r.json() as { access_token: string }).access_token; });
  const res = await fetch(`${svc.base}/data-api/default/answer`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200, await res.clone().text());
  assert.match(await res.text(), /42/);

  // Once stored, the secret is gone from the page.
  await panel.getByRole('button', { name: 'I have stored it' }).click();
  assert.equal(await page.locator('#secret-panel').count(), 0);
  assert.doesNotMatch(await page.content(), new RegExp(secret));
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('A ws_viewer reads connections and is offered no administration', async () => {
  const { page } = await browser.newPage();
  await signIn(page, svc.base);
  await addMember(page, VIEWER, 'conn-viewers', 'ws_viewer');
  assert.equal((await call(page, 'POST', '/api/workspaces/default/connections', { name: 'readonly-db', kind: 'database', config: { host: 'h' }, secret: 'pw' })).status, 201);

  // A narrow window: the screen still works (the tables scroll inside their own region).
  const v = await browser.newPage();
  await v.page.setViewportSize({ width: 480, height: 900 });
  await signIn(v.page, svc.base, VIEWER, '#/w/default/connections');
  const row = v.page.locator('#connections-table tr[data-connection="readonly-db"]');
  await row.waitFor();
  assert.deepEqual(await v.page.locator('#connections-table thead th').allInnerTexts(), ['Name', 'Kind', 'Settings', 'Secret', 'Created']);
  assert.equal(await v.page.locator('#connections-table').getByRole('button').count(), 0, 'no Delete for a viewer');
  assert.equal(await v.page.getByRole('heading', { name: 'Register a connection' }).count(), 0, 'no form for a viewer');
  // On a narrow window the navigation is behind Menu (issue 28).
  await v.page.getByRole('button', { name: 'Menu' }).click();
  const nav = v.page.getByRole('navigation', { name: 'Workspace default' });
  assert.equal(await nav.getByRole('link', { name: 'Connections' }).count(), 1);
  assert.equal(await nav.getByRole('link', { name: 'Policies' }).count(), 0, 'no Policies for a viewer');
  assert.equal(await nav.getByRole('link', { name: 'Tags' }).count(), 0, 'no Tags for a viewer');
  assert.deepEqual(await seriousViolations(v.page), [], 'viewer connections: no serious accessibility violation');
  await browser.screenshot(v.page, 'admin-06-viewer-narrow');

  // A typed link is answered without a request the server would refuse.
  await v.page.goto(`${svc.base}/#/w/default/policies`);
  await v.page.getByText('This screen needs the ws_admin role in default.').waitFor();
  await v.page.goto(`${svc.base}/#/w/default/data-api`);
  await v.page.getByRole('heading', { name: 'Data API', level: 1 }).waitFor();
  await v.page.locator('#endpoints-table, #no-endpoints').first().waitFor();
  assert.equal(await v.page.getByRole('heading', { name: 'Create a client' }).count(), 0, 'no client form for a viewer');
  assert.deepEqual(v.errors, [], 'no console errors for the viewer');
});

test('With the policy service off, Policies and Tags say so instead of failing', async () => {
  const off = await startSvc();
  try {
    const { page, errors } = await browser.newPage();
    await signIn(page, off.base, undefined, '#/w/default/policies');
    await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
    assert.match(await page.locator('#service-off').innerText(), /policy service is off on this server.*policy_service\.enabled/);
    assert.equal(await page.locator('#policy-form').count(), 0, 'no editor for a service that is not there');
    await wsLink(page, 'Tags').click();
    await page.locator('#service-off').waitFor();
    assert.equal(await page.locator('#tag-form').count(), 0);
    assert.equal(await page.locator('.message.error.visible').count(), 0, 'no error message: the off service is a state, not a failure');
    assert.deepEqual(errors, [], 'no console errors (the failed loads of the unmounted routes are not counted)');
  } finally { await off.close(); }
});
