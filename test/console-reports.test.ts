// The console's Reports screens (the alerts screens parameterised by kind) walked as a user in
// Debian's Chromium against a real `svc serve` (automation worker, embedded DuckDB) and an in-test
// webhook receiver on loopback: create a CSV report and see its signing secret once, run it now
// and see its evaluation delivered and the delivery to the receiver, open the link the
// notification carried (`#/workspaces/<ws>/reports/<id>`, once "Page not found"), find it in the
// list, delete it; a viewer is offered none of the changes. axe-core on each screen; screenshots to test-results/ui-reports-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';
import { addMember, call } from './helpers/console-apps.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

let browser: TestBrowser; let svc: Svc; let hook: Receiver<{ report?: { url: string } }>; let hookUrl: string;
before(async () => {
  hook = await startReceiver();
  hookUrl = hook.url;
  svc = await startSvc({
    SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'), SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]',
    SVC_ENGINES__PROVISIONER: 'none',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); hook?.close(); });

const a11y = async (page: import('playwright-core').Page, screen: string) =>
  assert.deepEqual(await seriousViolations(page), [], `${screen}: no serious accessibility violation`);

test('Reports: create (secret once), run now and deliver, evaluations and deliveries, the notification link opens it, delete', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  const wsNav = page.getByRole('navigation', { name: 'Workspace default' });
  await wsNav.getByRole('link', { name: 'Reports' }).click();
  await page.getByRole('heading', { name: 'Reports', level: 1 }).waitFor();
  await page.locator('#no-reports').waitFor();
  assert.equal(await wsNav.getByRole('link', { name: 'Reports' }).getAttribute('aria-current'), 'page');
  await a11y(page, 'reports');

  await page.getByRole('link', { name: 'New report' }).click();
  await page.getByRole('heading', { name: 'New report' }).waitFor();
  await page.getByLabel('Name').fill('daily-sales');
  await page.getByLabel('SQL').fill("SELECT 1 AS n, 'a' AS s");
  await page.getByLabel('Send').selectOption('csv');
  assert.equal(await page.getByLabel('Threshold').count(), 0, 'a report has no condition');
  await page.getByLabel('Schedule (cron)').fill('0 0 1 1 *'); // yearly: only Run now runs it here
  await page.getByLabel(/^Recipients/).fill(hookUrl);
  await a11y(page, 'new report');
  await page.getByRole('button', { name: 'Create report' }).click();
  await page.getByRole('heading', { name: 'daily-sales' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Created report daily-sales.' }).waitFor();
  assert.match(await page.getByLabel(/^Signing secret/).inputValue(), /^whsec_/);
  const id = new URL(page.url()).hash.split('/').pop()!;
  assert.match(page.url(), new RegExp(`#/w/default/reports/${id}$`));
  assert.match(await page.locator('dl.facts').innerText(), /Content\s+CSV of the result/);
  await page.getByRole('button', { name: 'I have stored it' }).click();

  // Run now: the report is evaluated and delivered to the receiver.
  await page.getByRole('button', { name: 'Run now' }).click();
  await page.locator('#evaluations-table tbody tr').first().getByText('delivered', { exact: true }).waitFor({ timeout: 60_000 });
  await page.locator('#deliveries-table tbody tr').first().getByText('delivered', { exact: true }).waitFor({ timeout: 60_000 });
  assert.match(await page.locator('#deliveries-table tbody').innerText(), /report\s+webhook http:\/\/127\.0\.0\.1:\d+\s+delivered\s+1\s+200/);
  await a11y(page, 'report page');
  await browser.screenshot(page, 'reports-01-delivered');

  // The notification's link opens this report in the console.
  const note = hook.received.find((r) => r.event === 'report');
  assert.ok(note?.body.report, 'the receiver got the report');
  const link = new URL(note.body.report.url);
  assert.equal(link.hash, `#/workspaces/default/reports/${id}`);
  await page.goto(`${svc.base}/${link.hash}`);
  await page.getByRole('heading', { name: 'daily-sales' }).waitFor();
  assert.equal(await page.getByText('Page not found').count(), 0);

  await wsNav.getByRole('link', { name: 'Reports' }).click();
  const row = page.locator('#reports-table tr[data-alert="daily-sales"]');
  await row.waitFor();
  assert.match(await row.innerText(), /daily-sales\s+ok\s+CSV of the result\s+0 0 1 1 \* UTC/);
  await a11y(page, 'reports list');
  await browser.screenshot(page, 'reports-02-list');

  // Delete, after the confirmation.
  await row.getByRole('link', { name: 'daily-sales' }).click();
  await page.getByRole('heading', { name: 'daily-sales' }).waitFor();
  page.once('dialog', (d) => void d.accept());
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('heading', { name: 'Reports', level: 1 }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Deleted report daily-sales.' }).waitFor();
  await page.locator('#no-reports').waitFor();
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('Reports: a viewer reads a report and is offered neither New report nor Run now, Edit, Delete', async () => {
  const adm = await browser.newPage();
  await signIn(adm.page, svc.base);
  const viewer = { email: 'viewer@example.test', password: 'viewer-password-1' };
  await addMember(adm.page, viewer, 'report-readers', 'ws_viewer');
  const made = await call(adm.page, 'POST', '/api/workspaces/default/reports', {
    name: 'weekly', engine: 'embedded', sql: 'SELECT 1', cron: '0 0 1 1 *', content: { type: 'table' }, recipients: [{ type: 'webhook', url: hookUrl }],
  });
  assert.equal(made.status, 201);
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base, viewer);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Reports' }).click();
  await page.locator('#reports-table').getByRole('link', { name: 'weekly' }).click();
  await page.getByRole('heading', { name: 'weekly' }).waitFor();
  assert.match(await page.locator('dl.facts').innerText(), /Content\s+table of the result/);
  for (const name of ['Run now', 'Edit', 'Delete']) assert.equal(await page.getByRole('button', { name }).count(), 0, `no ${name}`);
  await page.goto(`${svc.base}/#/w/default/reports`);
  await page.locator('#reports-table').waitFor();
  assert.equal(await page.getByRole('link', { name: 'New report' }).count(), 0);
  await a11y(page, 'reports (viewer)');
  assert.deepEqual(errors, []);
});
