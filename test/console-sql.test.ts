// The SQL workbench walked as a user in Debian's Chromium against a real `svc serve` with the
// embedded DuckDB engine (provisioner none) and an S3 server for results: run a query and see its
// rows in the virtualized grid (fixed header, numbers right-aligned, a page that stays short), the
// truncated and preview notices, download the result as CSV (and JSON and Parquet answer), chart
// it in one click, see an engine's error, follow a long query's elapsed time and cancel it, find
// and reopen a query in the history tab; the scratch tables in the tree, inserted at the cursor;
// select-all, paste and Ctrl+Enter in one frame runs the new statement (issue 28, bug 1); the
// editor's tokens readable in both themes (bug 3). axe-core on the screen in both themes;
// screenshots to test-results/ui-sql-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { lowContrastIn } from './helpers/contrast.js';
import { downloadText, pasteInto, signIn, startSvc, type Svc } from './helpers/console.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';

let browser: TestBrowser; let svc: Svc; let s3: TestS3;
before(async () => {
  s3 = await startS3();
  svc = await startSvc({
    ...storageEnv(s3),
    SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINE__MAX_ROWS: '500', SVC_ENGINE__PREVIEW_ROWS: '200',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); await s3?.stop(); });

const BIG = 'SELECT i, i * 2 AS twice, \'row \' || i AS label FROM range(1000) t(i) ORDER BY i';
const LONG = 'SELECT count(*) FROM range(100000000000) a';
const state = (page: import('playwright-core').Page, s: string) => page.locator('#query-state').getByText(s).waitFor({ timeout: 60_000 });

test('SQL workbench: grid, notices, downloads, chart, an error, elapsed time and cancel, history search', async () => {
  const { page, errors } = await browser.newPage();
  const chunks: string[] = [];
  page.on('request', (r) => { if (r.url().includes('/ui/assets/')) chunks.push(r.url()); });
  await signIn(page, svc.base);
  assert.equal(chunks.filter((u) => /ChartCanvas/.test(u)).length, 0, 'the chart library is not part of the first load');
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'SQL' }).click();
  await page.getByRole('heading', { name: 'SQL console' }).waitFor();
  await page.locator('#sql-source').waitFor();
  assert.equal(await page.getByLabel('Engine').inputValue(), 'embedded');
  // The catalog is off here: the tree says so where the namespaces would be.
  assert.match(await page.locator('#catalog-off').innerText(), /catalog is not enabled/);
  assert.deepEqual(await seriousViolations(page), [], 'SQL console: no serious accessibility violation');

  // A result larger than the row bound: cut at 500 rows, 200 of them previewed in the grid.
  await pasteInto(page, '#sql-source', BIG);
  await page.getByRole('button', { name: 'Run' }).click();
  await state(page, 'SUCCEEDED');
  assert.match(await page.locator('#query-state').innerText(), /on embedded: SUCCEEDED 500 rows/);
  assert.match(await page.locator('#truncated-notice').innerText(), /Truncated: .* only the first 500 were kept/);
  assert.match(await page.locator('#preview-notice').innerText(), /Showing the first 200 of 500 rows/);
  assert.deepEqual((await page.locator('#result-table thead th').allInnerTexts()).slice(1), ['i', 'twice', 'label']);
  const grid = await page.evaluate(() => {
    const rows = document.querySelectorAll('#result-table tbody tr.grid-row');
    const num = document.querySelector('#result-table tbody tr.grid-row td.num') as HTMLElement;
    return { rows: rows.length, rowcount: document.querySelector('#result-table')!.getAttribute('aria-rowcount'), align: getComputedStyle(num).textAlign, page: document.documentElement.scrollHeight };
  });
  assert.ok(grid.rows < 60, `only the rows in view are in the page (${grid.rows})`);
  assert.equal(grid.rowcount, '201', 'screen readers are told the whole row count');
  assert.equal(grid.align, 'right', 'numbers are right-aligned');
  assert.ok(grid.page < 3000, `the page stays short with 200 rows (${grid.page} px)`);
  // Scrolling the grid to its end: the last preview row is there and the header is still in view.
  await page.locator('.grid-wrap').evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await page.locator('#result-table tbody tr[aria-rowindex="201"]').waitFor();
  assert.deepEqual(await page.locator('#result-table tbody tr[aria-rowindex="201"]').locator('th, td').allInnerTexts(), ['200', '199', '398', 'row 199']);
  const header = await page.evaluate(() => {
    const wrap = document.querySelector('.grid-wrap')!.getBoundingClientRect();
    const th = document.querySelector('#result-table thead th')!.getBoundingClientRect();
    return th.top - wrap.top;
  });
  assert.ok(header >= 0 && header < 4, `the header row stays at the top of the grid (${header})`);
  const queryId = new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('query');
  assert.ok(queryId, 'the query is kept in the URL');
  const csv = await downloadText(page, page.locator('#downloads').getByRole('link', { name: 'CSV' }));
  assert.equal(csv.name, `query-${queryId}.csv`, 'the server names the file');
  const lines = csv.text.trim().split('\n');
  assert.equal(lines.length, 501, 'a header and the 500 kept rows');
  assert.match(lines[0], /^"?i"?,"?twice"?,"?label"?$/);
  for (const format of ['JSON', 'Parquet']) {
    const url = await page.locator('#downloads').getByRole('link', { name: format }).getAttribute('href');
    const res = await page.context().request.get(`${svc.base}${url}`);
    assert.equal(res.status(), 200, `${format}: ${await res.text()}`);
    if (format === 'JSON') assert.equal((await res.json() as unknown[]).length, 500);
    else assert.equal((await res.body()).subarray(0, 4).toString(), 'PAR1');
  }
  assert.deepEqual(await seriousViolations(page), [], 'SQL result: no serious accessibility violation');
  await browser.screenshot(page, 'sql-01-result');

  // The chart in one click: bars of the first number column by the text column, then a line and points.
  await page.getByRole('tab', { name: 'Chart' }).click();
  await page.locator('#result-chart canvas').first().waitFor();
  assert.ok(chunks.some((u) => /ChartCanvas/.test(u)), 'the chart library arrives with the first chart');
  assert.equal(await page.getByLabel('X axis').inputValue(), '2', 'the text column is the X axis');
  assert.equal(await page.getByRole('checkbox', { name: 'i', exact: true }).isChecked(), true, 'the first number column is charted');
  assert.match(await page.locator('#result-chart figcaption').innerText(), /^i by label$/);
  await page.getByRole('checkbox', { name: 'twice' }).check();
  await page.getByRole('radio', { name: 'Line' }).check();
  await page.getByLabel('X axis').selectOption({ label: 'i' });
  await page.getByRole('radio', { name: 'Scatter' }).check();
  assert.match(await page.locator('#result-chart figcaption').innerText(), /^i, twice by i$/);
  assert.deepEqual(await page.locator('#result-chart .chart-legend li').allInnerTexts(), ['i', 'twice']);
  assert.deepEqual(await seriousViolations(page), [], 'chart: no serious accessibility violation');
  await browser.screenshot(page, 'sql-02-chart');
  await page.getByRole('tab', { name: 'Result' }).click();

  // The engine's error is shown where the result would be.
  await pasteInto(page, '#sql-source', 'SELEC 1');
  await page.getByRole('button', { name: 'Run' }).click();
  await state(page, 'FAILED');
  assert.match(await page.locator('#query-error').innerText(), /syntax error/i);

  // A long query: its elapsed time runs while it is followed live, and Cancel stops it on the engine.
  await pasteInto(page, '#sql-source', LONG);
  await page.getByRole('button', { name: 'Run' }).click();
  await state(page, 'RUNNING');
  assert.equal(await page.getByRole('button', { name: 'Run' }).isDisabled(), true, 'one query at a time');
  const t1 = parseFloat(await page.locator('#query-elapsed').innerText());
  await page.waitForFunction((t) => parseFloat(document.querySelector('#query-elapsed')!.textContent!) >= t + 0.5, t1);
  await browser.screenshot(page, 'sql-03-running');
  await page.getByRole('button', { name: 'Cancel query' }).click();
  await state(page, 'CANCELLED');
  assert.equal(await page.locator('#query-error').innerText(), 'query was cancelled');
  assert.equal(await page.getByRole('button', { name: 'Cancel query' }).count(), 0);
  assert.equal(await page.locator('#query-elapsed').count(), 0, 'no clock once it ended');

  // The history tab: newest first, searchable; opening the first query brings back its SQL and rows.
  await page.getByRole('tab', { name: 'History' }).click();
  const history = page.locator('#history-table tbody tr');
  await page.waitForFunction(() => document.querySelectorAll('#history-table tbody tr').length === 3);
  assert.match(await history.nth(0).innerText(), /CANCELLED/);
  assert.match(await history.nth(1).innerText(), /FAILED/);
  assert.match(await history.nth(2).innerText(), /SUCCEEDED\s+500 \(truncated\)\s+you/);
  await page.getByLabel('Search the history').fill('range(1000)');
  await page.waitForFunction(() => document.querySelectorAll('#history-table tbody tr').length === 1);
  await page.getByLabel('Search the history').fill('nothing like this');
  await page.locator('#no-history').getByText('No query matches.').waitFor();
  await page.getByLabel('Search the history').fill('twice');
  await history.nth(0).getByRole('link').click();
  await page.waitForURL((u) => u.hash === `#/w/default/sql?query=${queryId}`);
  await state(page, 'SUCCEEDED');
  await page.locator('#sql-source').getByText('range(1000)').waitFor();
  await page.locator('#result-table tbody tr.grid-row').first().waitFor();
  await browser.screenshot(page, 'sql-04-history');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('SQL workbench: select-all, paste and Ctrl+Enter in one frame runs the new statement; scratch tables insert at the cursor; dark theme', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base, undefined, '#/w/default/sql');
  await page.locator('#sql-source').waitFor();
  await page.locator('#sql-source').click();
  // Select all, delete, paste and run, as one synchronous burst (no render between the keys).
  const burst = (sql: string) => page.locator('#sql-source').evaluate((el, text) => {
    const key = (k: string, ctrl = false) => el.dispatchEvent(new KeyboardEvent('keydown', { key: k, code: k.length === 1 ? `Key${k.toUpperCase()}` : k, ctrlKey: ctrl, bubbles: true, cancelable: true }));
    key('a', true);
    key('Backspace');
    const data = new DataTransfer();
    data.setData('text/plain', text);
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    key('Enter', true);
  }, sql);
  for (const [sql, column] of [['CREATE TABLE sales AS SELECT 1 AS id, \'eu\' AS region, 9.5 AS amount', null], ['SELECT 7 AS seven', 'seven'], ['SELECT 8 AS eight', 'eight']] as const) {
    await burst(sql);
    if (column) await page.locator('#result-table thead th').getByText(column, { exact: true }).waitFor({ timeout: 30_000 });
    else await state(page, 'SUCCEEDED');
    assert.equal((await page.locator('#sql-source').innerText()).trim(), sql, 'the editor kept the new text');
  }
  // The page still takes keys: typing after the burst lands in the editor.
  await page.locator('#sql-source').press('End');
  await page.keyboard.type(' + 1');
  assert.equal((await page.locator('#sql-source').innerText()).trim(), 'SELECT 8 AS eight + 1');
  await page.getByRole('tab', { name: 'History' }).click();
  await page.waitForFunction(() => document.querySelectorAll('#history-table tbody tr').length >= 3);
  assert.deepEqual((await page.locator('#history-table tbody tr td:nth-child(2)').allInnerTexts()).slice(0, 2), ['SELECT 8 AS eight', 'SELECT 7 AS seven'], 'the statements ran are the ones typed');

  // The scratch tables: the table made above, its columns and types; a click inserts at the cursor.
  await page.locator('#scratch-tables summary').click();
  const table = page.locator('#scratch-tables li[data-table="main.sales"]');
  await table.waitFor();
  await table.getByRole('button', { name: 'Columns of main.sales' }).click();
  assert.deepEqual(await table.locator('li.tree-column').allInnerTexts(), ['id INTEGER', 'region VARCHAR', 'amount DECIMAL(2,1)']);
  await pasteInto(page, '#sql-source', 'SELECT * FROM ');
  await page.locator('#sql-source').press('End');
  await table.getByRole('button', { name: 'sales', exact: true }).click();
  await page.locator('#sql-source').press('End');
  await page.keyboard.type(' WHERE ');
  await table.getByRole('button', { name: 'region' }).click();
  assert.equal((await page.locator('#sql-source').innerText()).trim(), 'SELECT * FROM main.sales WHERE region');

  // Dark theme: the editor's tokens and the screen keep their contrast.
  await page.getByRole('button', { name: /^Theme: auto/ }).click();
  await pasteInto(page, '#sql-source', "-- sales by region\nSELECT region, sum(amount) AS total, 'x' AS s FROM main.sales WHERE id > 0 GROUP BY region");
  for (const theme of ['dark', 'light']) {
    assert.deepEqual(await lowContrastIn(page, '[data-editor="sql-source"]'), [], `SQL editor tokens readable (${theme})`);
    assert.deepEqual(await seriousViolations(page), [], `SQL console ${theme}: no serious accessibility violation`);
    await browser.screenshot(page, `sql-05-${theme}`);
    await page.locator('#theme').click();
  }
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
