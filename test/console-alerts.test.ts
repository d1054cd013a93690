// The console's Alerts screens walked as a user in Debian's Chromium against a real `svc serve`
// (automation worker, embedded DuckDB) and an in-test webhook receiver on loopback (allowed by
// automation.webhook_allow_hosts): create an alert and see its signing secret once, run it now and
// watch it trigger, read its evaluations and deliveries, open the link the notification carried
// (`#/workspaces/<ws>/alerts/<id>`), edit its condition, and see the state in the list. axe-core
// on each screen; screenshots to test-results/ui-alerts-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';

let browser: TestBrowser; let svc: Svc; let hook: Server; let hookUrl: string;
const received: Array<{ event: string; body: { alert: { url: string } } }> = [];
before(async () => {
  hook = createServer((req, res) => {
    let t = ''; req.setEncoding('utf8');
    req.on('data', (d) => { t += d; });
    req.on('end', () => { received.push({ event: String(req.headers['svc-event']), body: JSON.parse(t) }); res.end('ok'); });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
  svc = await startSvc({
    SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'), SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]',
    SVC_ENGINES__PROVISIONER: 'none',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); hook?.close(); });

test('Alerts: create (secret once), run now and trigger, evaluations and deliveries, the notification link opens it, edit', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Alerts' }).click();
  await page.getByRole('heading', { name: 'Alerts', level: 1 }).waitFor();
  await page.locator('#no-alerts').waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'alerts: no serious accessibility violation');

  await page.getByRole('link', { name: 'New alert' }).click();
  await page.getByRole('heading', { name: 'New alert' }).waitFor();
  await page.getByLabel('Name').fill('big-sales');
  await page.getByLabel('SQL').fill('SELECT 1 AS n');
  await page.getByLabel('Threshold', { exact: true }).fill('0');
  await page.getByLabel('Schedule (cron)').fill('0 0 1 1 *'); // yearly: only Run now evaluates it here
  await page.getByLabel(/^Recipients/).fill(hookUrl);
  assert.deepEqual(await seriousViolations(page), [], 'new alert: no serious accessibility violation');
  await page.getByRole('button', { name: 'Create alert' }).click();
  await page.getByRole('heading', { name: 'big-sales' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Created alert big-sales.' }).waitFor();
  assert.match(await page.getByLabel(/^Signing secret/).inputValue(), /^whsec_/);
  const id = new URL(page.url()).hash.split('/').pop()!;
  assert.match(await page.locator('#alert-state').innerText(), /State: ok/);
  await browser.screenshot(page, 'alerts-01-created');
  await page.getByRole('button', { name: 'I have stored it' }).click();
  assert.equal(await page.locator('#secret-panel').count(), 0);

  // Run now: the condition holds, the state becomes triggered and the webhook is notified.
  await page.getByRole('button', { name: 'Run now' }).click();
  await page.locator('#alert-state').getByText('triggered').waitFor({ timeout: 60_000 }).catch(async (e) => { throw new Error(`${e}: ${await page.locator('body').innerText()}`); });
  await page.locator('#evaluations-table tbody tr').first().locator('td').first().getByText('triggered', { exact: true }).waitFor({ timeout: 60_000 });
  await page.locator('#deliveries-table tbody tr').first().getByText('delivered', { exact: true }).waitFor({ timeout: 60_000 });
  assert.match(await page.locator('#deliveries-table tbody').innerText(), /alert\.triggered\s+webhook http:\/\/127\.0\.0\.1:\d+\s+delivered\s+1\s+200/);
  // The evaluated value against the threshold over time (issue 28), and a breadcrumb back.
  await page.locator('#value-chart canvas').first().waitFor();
  assert.equal(await page.locator('#value-chart figcaption').innerText(), 'Evaluated rows against the threshold (> 0)');
  // (the numbers are in the folded "Data of the chart" table)
  assert.deepEqual(await page.locator('#value-chart .chart-data tbody tr').first().locator('td').evaluateAll((c) => c.map((x) => x.textContent)), ['1']);
  assert.deepEqual(await page.locator('#value-chart .chart-legend li').allInnerTexts(), ['rows', 'threshold 0']);
  await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'Alerts' }).waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'alert page: no serious accessibility violation');
  await browser.screenshot(page, 'alerts-02-triggered');

  // The notification's link opens this alert in the console.
  const note = received.find((r) => r.event === 'alert.triggered');
  assert.ok(note, 'the receiver got alert.triggered');
  const link = new URL(note.body.alert.url);
  assert.equal(link.hash, `#/workspaces/default/alerts/${id}`);
  await page.goto(`${svc.base}/${link.hash}`);
  await page.getByRole('heading', { name: 'big-sales' }).waitFor();
  assert.match(await page.locator('#alert-state').innerText(), /State: triggered/);

  // Edit the condition; the recipients stay as they were.
  await page.getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Threshold', { exact: true }).fill('5');
  await page.getByRole('button', { name: 'Save alert' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved alert big-sales.' }).waitFor();
  await page.locator('dl.facts').getByText('rows > 5').waitFor();
  assert.match(await page.locator('dl.facts').innerText(), /webhook http:\/\/127\.0\.0\.1:\d+/);

  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Alerts' }).click();
  const row = page.locator('#alerts-table tr[data-alert="big-sales"]');
  await row.waitFor();
  assert.match(await row.innerText(), /big-sales\s+triggered\s+rows > 5\s+0 0 1 1 \* UTC/);
  await browser.screenshot(page, 'alerts-03-list');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
