// The console's administration screens in Debian's Chromium against a real `svc serve`: create an
// OAuth client and see its secret once (it works at the token endpoint, and is gone once stored),
// rotate and delete it, and read the audit log filtered through its URL. axe-core on each screen;
// screenshots to test-results/ui-admin-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';

let browser: TestBrowser; let svc: Svc;
before(async () => {
  svc = await startSvc({ SVC_SECURITY__SECRET_KEY: randomBytes(64).toString('base64') });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); });

test('create an OAuth client and see its secret once; rotate, delete; the audit log with filters', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'OAuth clients' }).click();
  await page.getByRole('heading', { name: 'OAuth clients' }).waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'clients: no serious accessibility violation');

  await page.getByLabel('Name').fill('etl-bot');
  await page.getByLabel('Audiences').fill('svc-api, warehouse');
  await page.getByRole('button', { name: 'Create client' }).click();
  await page.getByRole('status').filter({ hasText: 'Created client etl-bot. Copy its secret now: it is not shown again.' }).waitFor();
  const secret = await page.getByLabel('Client secret').inputValue();
  assert.ok(secret.length >= 20, 'the secret is shown');
  const row = page.locator('#clients-table tr[data-client="etl-bot"]');
  const clientId = (await row.locator('code').innerText()).trim();
  assert.match(await row.innerText(), /svc-api, warehouse\s+client credentials/);
  assert.doesNotMatch(await page.locator('#clients-table').innerText(), new RegExp(secret), 'the list never shows the secret');
  await browser.screenshot(page, 'admin-01-client-secret');

  // The secret shown is the client's: the token endpoint grants with it.
  const grant = await fetch(`${svc.base}/oauth/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'client_credentials', audience: 'svc-api' }),
  });
  assert.equal(grant.status, 200, await grant.clone().text());

  // Once stored, it is gone, and a reload does not bring it back.
  await page.getByRole('button', { name: 'I have stored it' }).click();
  assert.equal(await page.locator('#secret-panel').count(), 0);
  await page.reload();
  await row.waitFor();
  assert.equal(await page.locator('#secret-panel').count(), 0);
  assert.equal(await page.content().then((h) => h.includes(secret)), false);

  page.once('dialog', (d) => { assert.match(d.message(), /^Rotate the secret of etl-bot/); void d.accept(); });
  await page.getByRole('button', { name: 'Rotate secret of etl-bot' }).click();
  await page.getByRole('status').filter({ hasText: 'Rotated the secret of etl-bot.' }).waitFor();
  const rotated = await page.getByLabel('Client secret').inputValue();
  assert.notEqual(rotated, secret);
  page.once('dialog', (d) => { void d.accept(); });
  await page.getByRole('button', { name: 'Delete etl-bot' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted client etl-bot.' }).waitFor();
  assert.equal(await row.count(), 0);

  // The audit log: governance events, filtered through the URL.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('heading', { name: 'Audit log' }).waitFor();
  await page.locator('#audit-table tbody tr').first().waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'audit: no serious accessibility violation');
  await page.getByLabel('Kind').selectOption('governance');
  await page.getByLabel('Actor, action, target or workspace').fill(clientId);
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL((u) => u.hash === `#/audit?kind=governance&q=${encodeURIComponent(clientId)}`);
  const rows = page.locator('#audit-table tbody tr');
  // The unfiltered rows stay on screen until the filtered answer arrives: wait for it to replace them.
  await rows.filter({ hasNotText: 'governance' }).first().waitFor({ state: 'detached' });
  await rows.first().waitFor();
  const text = await page.locator('#audit-table tbody').innerText();
  for (const line of text.split('\n').filter((l) => l.trim())) assert.match(line, /governance/, line);
  assert.match(text, /admin@example\.test/);
  assert.equal(await rows.count(), 3, text);
  assert.match(text, /client\.delete[\s\S]*client\.rotate[\s\S]*client\.create/, 'newest first');
  await browser.screenshot(page, 'admin-02-audit');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
