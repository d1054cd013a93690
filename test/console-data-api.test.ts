// The console's Data API screen walked as a user in Debian's Chromium against a real `svc serve`
// (embedded DuckDB): publish an endpoint with its SQL in the SQL editor, see a refusal with the
// server's message, edit it into version 2, open it: copy its URL, read the curl call (its token request
// is the one the test's program sends), try it from the form typed by its parameters;
// see a consumer's call in the access log under the client's name, delete it; a ws_viewer reads
// the list, opens and tries an endpoint, with no form, no edit and no access log. axe-core on the
// screen; screenshots to test-results/ui-data-api-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { pasteInto, signIn, startSvc, type Svc } from './helpers/console.js';
import { addMember, call } from './helpers/console-apps.js';

const VIEWER = { email: 'viewer@example.test', password: 'viewer-password-1' };
let browser: TestBrowser; let svc: Svc;
before(async () => {
  svc = await startSvc({ SVC_ENGINES__PROVISIONER: 'none', SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64') });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); });

test('Data API: publish, a refusal, edit into version 2, the access log, delete; read-only for a viewer', async () => {
  const { page, errors, context } = await browser.newPage();
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Data API' }).click();
  await page.getByRole('heading', { name: 'Data API', level: 1 }).waitFor();
  await page.locator('#no-endpoints').waitFor();
  await page.locator('#no-calls').waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'data API: no serious accessibility violation');

  await page.getByLabel('Name', { exact: true }).fill('answer');
  await page.locator('#ep-sql').waitFor();
  await pasteInto(page, '#ep-sql', 'SELECT $n AS answer');
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.locator('.form-error.visible').getByText(/\$n/).waitFor(); // a parameter the declarations do not have
  await page.getByLabel('Parameters (JSON)').fill('[{"name": "n", "type": "integer", "default": 42}]');
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByRole('status').filter({ hasText: 'Published answer version 1.' }).waitFor();
  const row = page.locator('#endpoints-table tr[data-endpoint="answer"]');
  assert.match(await row.innerText(), /answer\s+1\s+embedded\s+n: integer/);
  // Issue 28, bug 6: the Actions cell sits inside its row (it was a flex box outside the table's
  // layout), and the confirmation above did not push the page down (messages float).
  const inRow = await row.evaluate((tr) => {
    const r = tr.getBoundingClientRect();
    const cell = tr.querySelector('td.actions')!.getBoundingClientRect();
    return { display: getComputedStyle(tr.querySelector('td.actions')!).display, inside: cell.top >= r.top - 1 && cell.bottom <= r.bottom + 1 };
  });
  assert.deepEqual(inRow, { display: 'table-cell', inside: true });
  assert.equal(await page.locator('#messages').evaluate((m) => getComputedStyle(m).position), 'fixed');

  await row.getByRole('button', { name: 'Edit answer' }).click();
  await page.locator('#ep-sql').getByText('SELECT $n AS answer').waitFor();
  await pasteInto(page, '#ep-sql', 'SELECT $n + 1 AS answer');
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByRole('status').filter({ hasText: 'Published answer version 2.' }).waitFor();
  assert.match(await row.innerText(), /answer\s+2\s+embedded/);

  // Opened: the URL with a Copy button, the curl call, and the try-it form typed from the parameters.
  await row.getByRole('button', { name: 'Open answer' }).click();
  const detail = page.locator('#endpoint-detail');
  const url = await detail.locator('#endpoint-url').innerText();
  assert.match(url, /^https?:\/\/[^/]+\/data-api\/default\/answer$/, 'on data_api.public_url');
  await detail.getByRole('button', { name: 'Copy endpoint URL' }).click();
  await page.getByRole('status').filter({ hasText: 'Copied endpoint URL.' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url);
  const curl = await detail.locator('#endpoint-curl').innerText();
  assert.match(curl, /-d grant_type=client_credentials/);
  assert.ok(curl.endsWith(`curl -H "Authorization: Bearer $TOKEN" '${url}?n=42'`), curl);
  assert.equal(await page.getByLabel(/^n integer/).getAttribute('type'), 'number', 'an integer parameter is a number field');
  assert.equal(await page.getByLabel(/^n integer/).inputValue(), '42', 'its default is filled in');
  await page.getByLabel(/^n integer/).fill('6');
  await detail.getByRole('button', { name: 'Try it' }).click();
  await page.locator('#try-result').getByText('1 row.').waitFor();
  assert.deepEqual(await page.locator('#try-result #result-table tbody tr').first().locator('td').allInnerTexts(), ['7']);
  assert.deepEqual(await seriousViolations(page), [], 'an opened endpoint: no serious accessibility violation');
  await browser.screenshot(page, 'data-api-00-endpoint');

  // A consumer's call shows in the access log, under the client's name.
  const client = (await call(page, 'POST', '/api/workspaces/default/data-api/clients', { name: 'reader', endpoints: ['answer'] })).json as Record<string, string>;
  const token = await fetch(`${svc.base}/oauth/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
    // The token request as the curl call above writes it (audience and scope included).
    body: new URLSearchParams({ grant_type: 'client_credentials', audience: 'svc-data-api', scope: 'data-api:answer' }),
  }).then(async (r) => { assert.equal(r.status, 200, await r.clone().text()); return (await r.json() as { access_token: string }).access_token; });
  const res = await fetch(`${svc.base}/data-api/default/answer?n=1`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200, await res.clone().text());
  // The log is written in batches about a second after the call: refresh until it shows.
  const logRow = page.locator('#access-log-table tbody tr').first();
  for (let i = 0; i < 60 && (await logRow.count()) === 0; i++) {
    await page.getByRole('button', { name: 'Refresh log' }).click();
    await page.waitForTimeout(500);
  }
  assert.match(await logRow.innerText(), /reader\s+GET answer v2\s+200\s+1/);
  assert.equal(await logRow.locator('span[title]').getAttribute('title'), client.client_id, 'the id is on hover');
  assert.deepEqual(await seriousViolations(page), [], 'data API with a log: no serious accessibility violation');
  await browser.screenshot(page, 'data-api-01-endpoints');

  // A ws_viewer: the list only.
  await addMember(page, VIEWER, 'api-viewers', 'ws_viewer');
  const v = await browser.newPage();
  await signIn(v.page, svc.base, VIEWER, '#/w/default/data-api');
  await v.page.locator('#endpoints-table tr[data-endpoint="answer"]').waitFor();
  assert.deepEqual(await v.page.locator('#endpoints-table button').evaluateAll((b) => b.map((x) => x.getAttribute('aria-label'))), ['Copy the URL of answer', 'Open answer'], 'a viewer copies, opens and tries, nothing else');
  assert.equal(await v.page.getByRole('heading', { name: 'Publish an endpoint' }).count(), 0);
  assert.equal(await v.page.getByRole('heading', { name: 'Access log' }).count(), 0);
  await browser.screenshot(v.page, 'data-api-02-viewer');

  page.once('dialog', (d) => { void d.accept(); });
  await row.getByRole('button', { name: 'Delete answer' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted endpoint answer.' }).waitFor();
  await page.locator('#no-endpoints').waitFor();
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  assert.deepEqual(v.errors, [], 'no console errors for the viewer');
});
