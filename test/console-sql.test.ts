// The console's SQL console walked as a user in Debian's Chromium against a real `svc serve` with
// the embedded DuckDB engine (provisioner none) and an S3 server for results: run a query and
// see its rows, the truncated and preview notices, download the result as CSV (and JSON and
// Parquet answer), see an engine's error, cancel a long query while it runs, and reopen a query
// from the history. axe-core on the screen; screenshots to test-results/ui-sql-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { downloadText, pasteInto, signIn, startSvc, type Svc } from './helpers/console.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';

let browser: TestBrowser; let svc: Svc; let s3: TestS3;
before(async () => {
  s3 = await startS3();
  svc = await startSvc({
    ...storageEnv(s3),
    SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINE__MAX_ROWS: '100', SVC_ENGINE__PREVIEW_ROWS: '5',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); await s3?.stop(); });

const BIG = 'SELECT i, i * 2 AS twice FROM range(1000) t(i) ORDER BY i';
const LONG = 'SELECT count(*) FROM range(100000000000) a';

test('SQL console: run, preview, truncated notice, downloads, an error, cancel a running query, reopen from history', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'SQL' }).click();
  await page.getByRole('heading', { name: 'SQL console' }).waitFor();
  await page.locator('#sql-source').waitFor();
  assert.equal(await page.getByLabel('Engine').inputValue(), 'embedded');
  assert.deepEqual(await seriousViolations(page), [], 'SQL console: no serious accessibility violation');

  // A result larger than the row bound: cut at 100 rows, 5 of them previewed, all downloadable.
  await pasteInto(page, '#sql-source', BIG);
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#query-state').getByText('SUCCEEDED').waitFor({ timeout: 60_000 });
  assert.match(await page.locator('#query-state').innerText(), /on embedded: SUCCEEDED 100 rows/);
  assert.match(await page.locator('#truncated-notice').innerText(), /Truncated: .* only the first 100 were kept/);
  assert.match(await page.locator('#preview-notice').innerText(), /Showing the first 5 of 100 rows/);
  assert.deepEqual(await page.locator('#result-table thead th').allInnerTexts(), ['i', 'twice']);
  assert.equal(await page.locator('#result-table tbody tr').count(), 5);
  assert.deepEqual(await page.locator('#result-table tbody tr').nth(4).locator('th, td').allInnerTexts(), ['4', '8']);
  const queryId = new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('query');
  assert.ok(queryId, 'the query is kept in the URL');
  const csv = await downloadText(page, page.locator('#downloads').getByRole('link', { name: 'CSV' }));
  assert.equal(csv.name, `query-${queryId}.csv`, "the server names the file");
  const lines = csv.text.trim().split('\n');
  assert.equal(lines.length, 101, 'a header and the 100 kept rows');
  assert.match(lines[0], /^"?i"?,"?twice"?$/);
  assert.equal(lines[100].replace(/"/g, ''), '99,198');
  for (const format of ['JSON', 'Parquet']) {
    const url = await page.locator('#downloads').getByRole('link', { name: format }).getAttribute('href');
    const res = await page.context().request.get(`${svc.base}${url}`);
    assert.equal(res.status(), 200, `${format}: ${await res.text()}`);
    if (format === 'JSON') assert.equal((await res.json() as unknown[]).length, 100);
    else assert.equal((await res.body()).subarray(0, 4).toString(), 'PAR1');
  }
  assert.deepEqual(await seriousViolations(page), [], 'SQL result: no serious accessibility violation');
  await browser.screenshot(page, 'sql-01-result');

  // The engine's error is shown where the result would be.
  await pasteInto(page, '#sql-source', 'SELEC 1');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#query-state').getByText('FAILED').waitFor({ timeout: 60_000 });
  assert.match(await page.locator('#query-error').innerText(), /syntax error/i);

  // A long query: its state is followed live, and Cancel stops it on the engine.
  await pasteInto(page, '#sql-source', LONG);
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('#query-state').getByText('RUNNING').waitFor({ timeout: 60_000 });
  assert.equal(await page.getByRole('button', { name: 'Run' }).isDisabled(), true, 'one query at a time');
  await browser.screenshot(page, 'sql-02-running');
  await page.getByRole('button', { name: 'Cancel query' }).click();
  await page.locator('#query-state').getByText('CANCELLED').waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('#query-error').innerText(), 'query was cancelled');
  assert.equal(await page.getByRole('button', { name: 'Cancel query' }).count(), 0);

  // The history: newest first; opening the first query brings back its SQL and rows.
  const history = page.locator('#history-table tbody tr');
  await page.waitForFunction(() => document.querySelectorAll('#history-table tbody tr').length === 3);
  assert.match(await history.nth(0).innerText(), /CANCELLED/);
  assert.match(await history.nth(1).innerText(), /FAILED/);
  assert.match(await history.nth(2).innerText(), /SUCCEEDED\s+100 \(truncated\)\s+you/);
  await history.nth(2).getByRole('link').click();
  await page.waitForURL((u) => u.hash === `#/w/default/sql?query=${queryId}`);
  await page.locator('#query-state').getByText('SUCCEEDED').waitFor();
  await page.locator('#sql-source').getByText('range(1000)').waitFor();
  assert.equal(await page.locator('#result-table tbody tr').count(), 5);
  await browser.screenshot(page, 'sql-03-history');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
