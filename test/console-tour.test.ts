// Every screen of the console, in both themes and at phone width (issue 28): axe-core finds no
// serious violation on any of them in the light and the dark theme, nothing widens a phone's page
// sideways, and the phone's navigation folds behind Menu with the screen first. The home overview
// with work in the workspace (a chart of executions by state, running now, recent failures with
// their error, what needs attention) and without (the way in); the sign-in page asks no /api/me
// before sign-in, and a refusal by the rate limit says when to try again. A real `svc serve` with
// its worker, the catalog and policy service on, an S3 server. Screenshots of each screen go to
// test-results/; with SVC_UI_SHOTS=1 to docs/ui/ as well (the pictures in docs/ui.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { IcebergRestCatalog } from 'iceberg-js';
import { launchBrowser, RESULTS_DIR, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { lowContrastIn } from './helpers/contrast.js';
import { ADMIN, signIn, startSvc, type Svc } from './helpers/console.js';
import { call } from './helpers/console-apps.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';

const TOKEN = 'catalog-admin-token-tour-0123456789';
const DOCS = fileURLToPath(new URL('../docs/ui/', import.meta.url));
let browser: TestBrowser; let svc: Svc; let s3: TestS3;
before(async () => {
  s3 = await startS3('warehouse');
  svc = await startSvc({
    ...storageEnv(s3), SVC_ENGINES__PROVISIONER: 'none', SVC_WORKFLOW__WORKER_ENABLED: 'true',
    SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: TOKEN, SVC_CATALOG__WAREHOUSE: 's3://warehouse/lake',
    SVC_POLICY_SERVICE__ENABLED: 'true', SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
    SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]', SVC_AUTOMATION__ENABLED: 'false',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); await s3?.stop(); });

/** The window as a person first sees it, to test-results/ui-tour-*.png, or with SVC_UI_SHOTS=1 to docs/ui/. */
async function shoot(page: Page, name: string): Promise<void> {
  const dir = process.env.SVC_UI_SHOTS === '1' ? DOCS : RESULTS_DIR;
  await mkdir(dir, { recursive: true });
  await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => undefined))));
  await page.screenshot({ path: `${dir}${process.env.SVC_UI_SHOTS === '1' ? '' : 'ui-tour-'}${name}.png` });
}
/** Switches the theme (seriousViolations waits for the colour transitions it starts). */
async function theme(page: Page, want: 'light' | 'dark'): Promise<void> {
  await page.evaluate(async (t) => {
    localStorage.setItem('svc-theme', t);
    document.documentElement.setAttribute('data-theme', t);
    await new Promise((r) => requestAnimationFrame(r));
  }, want);
}
const ok = async (page: Page, method: string, path: string, body?: unknown) => {
  const r = await call(page, method, path, body);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json as Record<string, unknown>;
};
const flow = (id: string, tasks: string) => ({ source: `id: ${id}\nnamespace: tour\ntasks:\n${tasks}` });

/**
 * Waits for what shows once a screen is ready; when it never does, says what the screen showed
 * and which requests failed (a screen whose code could not be fetched has no heading).
 */
async function ready(page: Page, selector: string, name: string, failed: string[]): Promise<void> {
  try {
    await page.locator(selector).first().waitFor({ timeout: 30_000 });
  } catch (err) {
    const shown = await page.locator('#main').innerText().catch(() => '(no #main)');
    const alert = await page.locator('#alert').innerText().catch(() => '');
    throw new Error(`${name}: ${selector} not shown. The screen showed: ${JSON.stringify(shown.slice(0, 500))}; #alert: ${JSON.stringify(alert)}; failed requests: ${JSON.stringify(failed)}`, { cause: err });
  }
}

/** Each screen: its name, its address, and what shows once it is ready. */
const SCREENS: Array<[string, string, string]> = [
  ['home', '#/', '#executions-chart svg'], ['flows', '#/w/default/flows', '#flows-table'],
  ['flow-editor', '#/w/default/flows/tour/greet', '#flow-docs-empty, #flow-docs'], ['flow-revisions', '#/w/default/flows/tour/greet/revisions', '#revisions-table'],
  ['flow-topology', '#/w/default/flows/tour/greet/topology', '#topology'], ['executions', '#/w/default/executions', '#executions-table'],
  ['execution-gantt', '#/w/default/executions/EXEC', '#gantt'], ['execution-logs', '#/w/default/executions/EXEC?tab=logs', '#logs .log-line'],
  ['execution-topology', '#/w/default/executions/EXEC?tab=topology', '#topology .graph-state'], ['execution-outputs', '#/w/default/executions/EXEC?tab=outputs', '#execution-outputs'],
  ['execution-files', '#/w/default/executions/EXEC?tab=files', '#no-files'], ['triggers', '#/w/default/triggers', '#triggers-table'],
  ['files', '#/w/default/files?namespace=tour&path=conf/app.yaml', '#file-text'], ['secrets', '#/w/default/secrets', '#secrets-table'],
  ['catalog', '#/w/default/catalog?ns=sales', '#tables-list'], ['catalog-table', '#/w/default/catalog/tables/sales/orders', '#columns'],
  ['sql', '#/w/default/sql', '#sql-source'], ['engines', '#/w/default/engines', '#engines-off'], ['apps', '#/w/default/apps', 'h1'],
  ['data-api', '#/w/default/data-api', '#endpoints-table'], ['alerts', '#/w/default/alerts', '#alerts-table'], ['alert', '#/w/default/alerts/ALERT', '#evaluations-table, .empty'],
  ['reports', '#/w/default/reports', 'h1'], ['connections', '#/w/default/connections', 'h1'], ['policies', '#/w/default/policies', 'h1'],
  ['tags', '#/w/default/tags', 'h1'], ['members', '#/workspaces/default/members', 'h1'], ['groups', '#/groups', 'h1'], ['clients', '#/clients', 'h1'], ['audit', '#/audit', '#audit-table'],
];

test('every screen: no serious violation in both themes, screenshots, and a phone width with the screen first', async () => {
  const { page, errors, failed } = await browser.newPage();
  // Nothing asks /api/me before sign-in (issue 28: a 401 in the browser's console on every load).
  const unauthorized: string[] = [];
  page.on('response', (r) => { if (r.status() === 401) unauthorized.push(r.url()); });
  await page.goto(`${svc.base}/`);
  await page.getByLabel('Email').waitFor();
  assert.deepEqual(unauthorized, [], 'no 401 before sign-in');
  for (const t of ['light', 'dark'] as const) {
    await theme(page, t);
    assert.deepEqual(await seriousViolations(page), [], `sign-in ${t}`);
    await shoot(page, `signin-${t}`);
  }
  await theme(page, 'light');
  await signIn(page, svc.base);

  // An empty workspace first: the way in.
  await page.locator('#get-started').waitFor();
  assert.deepEqual(await page.locator('#get-started').getByRole('link').allInnerTexts(), ['Create a flow', 'Open the SQL console', 'Browse the catalog']);
  await shoot(page, 'home-empty-light');

  // Work in the workspace: flows that succeed, fail and run; a file, a secret, an alert, an endpoint, a table.
  await ok(page, 'POST', '/workflows/v1/default/flows', flow('greet', '  - id: hello\n    type: log\n    message: hello\n  - id: bye\n    type: log\n    message: bye\ntriggers:\n  - id: daily\n    type: schedule\n    cron: "0 6 * * *"\n    timezone: Europe/Paris\n'));
  await ok(page, 'POST', '/workflows/v1/default/flows', flow('broken', '  - id: boom\n    type: fail\n    message: the warehouse is closed\n'));
  await ok(page, 'POST', '/workflows/v1/default/flows', flow('slow', '  - id: wait\n    type: sleep\n    duration: PT10M\n'));
  const exec = await ok(page, 'POST', '/workflows/v1/default/executions/tour/greet', { inputs: {} });
  await ok(page, 'POST', '/workflows/v1/default/executions/tour/broken', { inputs: {} });
  const slow = await ok(page, 'POST', '/workflows/v1/default/executions/tour/slow', { inputs: {} });
  await page.evaluate(async () => { const csrf = decodeURIComponent(document.cookie.split('; ').find((c) => c.startsWith('svc_csrf='))!.slice(9)); await fetch('/workflows/v1/default/namespaces/tour/files/content?path=conf/app.yaml', { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'x-svc-csrf': csrf }, body: 'greeting: hello\nlimit: 3\n' }); });
  await ok(page, 'PUT', '/workflows/v1/default/secrets/API_TOKEN', { value: 'not shown' });
  const alert = await ok(page, 'POST', '/api/workspaces/default/alerts', { name: 'late orders', engine: 'embedded', sql: 'SELECT 3 AS n', condition: { type: 'value', op: '>', threshold: 2, column: 'n' }, cron: '*/5 * * * *', recipients: [{ type: 'webhook', url: 'http://127.0.0.1:9/hook' }] });
  await ok(page, 'PUT', '/api/workspaces/default/data-api/endpoints/answer', { engine: 'embedded', sql: 'SELECT $n AS answer', params: [{ name: 'n', type: 'integer', default: 42 }], description: 'the answer' });
  const cat = new IcebergRestCatalog({ baseUrl: `${svc.base}/catalog/`, catalogName: 'default', auth: { type: 'bearer', token: TOKEN } });
  await cat.createNamespace({ namespace: ['sales'] }, { properties: { owner: 'sales-team' } });
  await cat.createTable({ namespace: ['sales'] }, { name: 'orders', schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'region', type: 'string', required: false }] } as never });
  // Wait until the runs ended (but the slow one) and the alert was evaluated once.
  await page.goto(`${svc.base}/#/w/default/executions?state=FAILED`);
  await page.locator('#executions-table tbody tr').first().waitFor({ timeout: 60_000 });
  await ok(page, 'POST', `/api/workspaces/default/alerts/${alert.id}/run`);

  // Home with work: the chart, running now, the failure with its error, what needs attention.
  await page.goto(`${svc.base}/#/`);
  await page.locator('#executions-chart svg rect').first().waitFor();
  await page.locator('#failures-list').getByText('the warehouse is closed').waitFor();
  await page.locator('#running-list').getByText('tour.slow').waitFor();
  await page.locator('#attention [data-attention="flow tour.broken"]').waitFor();
  assert.match(await page.locator('#overview-tiles').innerText(), /1\s+running now[\s\S]*1\s+failed/);
  assert.deepEqual(await page.locator('#executions-chart .chart-legend li').allInnerTexts(), ['SUCCESS', 'FAILED', 'RUNNING'].filter((s) => s));

  // Every screen is checked before the verdict, so one run names every problem.
  const problems: string[] = [];
  for (const [name, hash, selector] of SCREENS) {
    const url = `${svc.base}/${hash.replace('EXEC', String(exec.id)).replace('ALERT', String(alert.id))}`;
    await page.goto(url);
    await ready(page, selector, name, failed);
    await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached', timeout: 15_000 }).catch(() => {});
    for (const t of ['light', 'dark'] as const) {
      await theme(page, t);
      for (const v of await seriousViolations(page)) problems.push(`${name} (${t}): ${v.id} ${v.targets.slice(0, 4).join(' ')}`);
      // Tabs: white on white in the light theme went unreported by axe-core (undecided), so measured here.
      for (const low of (await page.locator('.tablist').count()) ? await lowContrastIn(page, '.tablist') : []) problems.push(`${name} (${t}) tabs: ${low}`);
      // Every token of every editor (the flow's YAML, a file, the SQL) at 4.5:1 or more (issue 28, bug 3).
      for (const ed of await page.locator('[data-editor]').evaluateAll((e) => e.map((x) => x.getAttribute('data-editor')))) {
        for (const low of await lowContrastIn(page, `[data-editor="${ed}"]`)) problems.push(`${name} (${t}) editor ${ed}: ${low}`);
      }
      await shoot(page, `${name}-${t}`);
    }
    await theme(page, 'light');
  }

  // A phone: the screen comes first (the navigation is behind Menu), nothing widens the page.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [name, hash, selector] of SCREENS) {
    await page.goto(`${svc.base}/${hash.replace('EXEC', String(exec.id)).replace('ALERT', String(alert.id))}`);
    await ready(page, selector, name, failed);
    const box = await page.locator('#main h1').first().boundingBox();
    if (!box || box.y > 200) problems.push(`${name} (phone): the heading is ${box?.y} px down`);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    if (wide !== 0) problems.push(`${name} (phone): ${wide} px wider than the window`);
    // (the phone's pictures are for the docs: taken when they are asked for)
    if (process.env.SVC_UI_SHOTS === '1') {
      for (const t of ['light', 'dark'] as const) { await theme(page, t); await shoot(page, `${name}-phone-${t}`); }
      await theme(page, 'light');
    }
  }
  await page.goto(`${svc.base}/#/w/default/flows`);
  await page.locator('#flows-table').waitFor();
  assert.equal(await page.locator('#wsnav').isVisible(), false, 'the workspace navigation is folded');
  await page.getByRole('button', { name: 'Menu' }).click();
  await page.locator('#wsnav').getByRole('link', { name: 'Executions' }).click();
  await page.getByRole('heading', { name: 'Executions', level: 1 }).waitFor();
  assert.equal(await page.locator('#wsnav').isVisible(), false, 'the menu folds again after a choice');
  assert.deepEqual(await seriousViolations(page), [], 'phone: no serious accessibility violation');
  assert.deepEqual(problems, [], 'every screen: no serious accessibility violation in either theme; the heading first and nothing too wide on a phone');
  await ok(page, 'POST', `/workflows/v1/default/executions/${slow.id}/kill`);
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('sign-in refused by the rate limit says when to try again', async () => {
  const { page } = await browser.newPage();
  await page.goto(`${svc.base}/`);
  for (let i = 0; i < 6; i++) {
    await page.getByLabel('Email').fill('someone@example.test');
    await page.getByLabel('Password').fill(`wrong-${i}`);
    await page.getByLabel('Password').press('Enter');
    await page.locator('#alert.visible').waitFor();
    if (/Too many/.test(await page.locator('#alert').innerText())) break;
  }
  assert.match(await page.locator('#alert').innerText(), /^Too many sign-in attempts\. Try again in \d+ (seconds|minutes), at \d\d:\d\d:\d\d\.$/);
  assert.ok(ADMIN.email);
});
