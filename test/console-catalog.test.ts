// The console's catalog browser walked in Debian's Chromium against a real `svc serve` with the
// catalog on, a real S3 server (s3rver) and the policy service on. Tables and views are made by an
// engine's way in, the Iceberg REST routes (iceberg-js and plain HTTP). The administrator opens
// the namespace tree, a namespace's tables and views, a table (columns, partitioning, snapshots)
// and follows its link to the SQL console with a query written; a view shows its SQL. A viewer,
// from whom a policy hides hr.salaries, is never shown it, and its address shows the refusal.
// axe-core on each screen, at 1280 px and on a narrow window; screenshots to
// test-results/ui-catalog-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog } from 'iceberg-js';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { pasteInto, signIn, startSvc, type Svc } from './helpers/console.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';

const TOKEN = 'catalog-admin-token-console-0123456789';
const VIEWER = { email: 'vera@example.test', password: 'vera-password-1' };
const schema = {
  type: 'struct', 'schema-id': 0, fields: [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'ts', type: 'timestamptz', required: false, doc: 'when it happened' },
    { id: 3, name: 'tags', type: { type: 'list', 'element-id': 4, element: 'string', 'element-required': false }, required: false },
  ],
};
let browser: TestBrowser; let svc: Svc; let s3: TestS3;

async function catalogPost(path: string, body: string) {
  const res = await fetch(`${svc.base}/catalog/${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
  assert.equal(res.status, 200, await res.clone().text());
}
const append = (id: string, seq: number, parent: string | null, op: string) =>
  `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":${id},${parent ? `"parent-snapshot-id":${parent},` : ''}"sequence-number":${seq},` +
  `"timestamp-ms":${1780000000000 + seq * 3_600_000},"manifest-list":"s3://warehouse/lake/default/x/snap-${id}.avro","summary":{"operation":"${op}","added-records":"${seq * 10}"},"schema-id":0}},` +
  `{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":${id}}]}`;

before(async () => {
  s3 = await startS3('warehouse');
  svc = await startSvc({
    SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: TOKEN, SVC_CATALOG__WAREHOUSE: 's3://warehouse/lake', SVC_POLICY_SERVICE__ENABLED: 'true',
    ...storageEnv(s3),
  });
  const db = svc.server.services.db;
  const ws = await db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  const vera = await createLocalUser(db, { email: VIEWER.email, password: VIEWER.password });
  await grantWorkspaceRoleToUser(db, ws.id, vera.id, 'ws_viewer', null, new Date());
  await createPolicy(db, CLI_ACTOR, 'default', {
    name: 'salaries are private', resources: { catalog: ['default'], schema: ['hr'], table: ['salar*'] }, deny: [{ roles: ['ws_viewer'], accesses: ['select'] }],
  }, new Date());
  const cat = new IcebergRestCatalog({ baseUrl: `${svc.base}/catalog/`, catalogName: 'default', auth: { type: 'bearer', token: TOKEN } });
  for (const ns of [['hr'], ['hr', 'eu'], ['web']]) await cat.createNamespace({ namespace: ns }, { properties: { owner: `${ns.join('.')}-team` } });
  await cat.createTable({ namespace: ['hr'] }, { name: 'salaries', schema: schema as never });
  await cat.createTable({ namespace: ['hr'] }, { name: 'teams', schema: schema as never });
  await cat.createTable({ namespace: ['web'] }, {
    name: 'events', schema: schema as never, properties: { 'write.format.default': 'parquet' },
    'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' }] } as never,
  });
  await cat.createTable({ namespace: ['hr', 'eu'] }, { name: 'My Table', schema: schema as never });
  await catalogPost('v1/default/namespaces/web/tables/events', append('1001', 1, null, 'append'));
  await catalogPost('v1/default/namespaces/web/tables/events', append('1002', 2, '1001', 'overwrite'));
  await catalogPost('v1/default/namespaces/web/views', JSON.stringify({
    name: 'daily', schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] }, properties: { comment: 'daily counts' },
    'view-version': { 'version-id': 1, 'timestamp-ms': 1780000000000, 'schema-id': 0, summary: {}, representations: [{ type: 'sql', sql: 'SELECT count(*) AS n FROM web.events', dialect: 'trino' }], 'default-namespace': ['web'] },
  }));
  browser = await launchBrowser({ viewport: { width: 1280, height: 900 } });
});
after(async () => { await browser?.close(); await svc?.close(); await s3?.stop(); });

test('Catalog: namespace tree, tables and views, a table page with its query link, a view; a hidden table is never shown', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Catalog' }).click();
  await page.getByRole('heading', { name: 'Catalog', level: 1 }).waitFor();
  const tree = page.getByRole('navigation', { name: 'Namespaces' });
  await tree.getByRole('link', { name: 'web' }).waitFor();
  assert.deepEqual(await tree.locator(':scope > ul > li[data-namespace] > a').allInnerTexts(), ['hr', 'web']);
  assert.match(await page.locator('#choose-namespace').innerText(), /Choose a namespace/);
  assert.deepEqual(await seriousViolations(page), [], 'catalog: no serious accessibility violation');

  // hr opens in the tree to show hr.eu, and its tables on the right.
  await tree.getByRole('link', { name: 'hr' }).click();
  await page.getByRole('heading', { name: 'Namespace hr' }).waitFor();
  await tree.locator('li[data-namespace="hr.eu"]').waitFor();
  assert.equal(await tree.getByRole('link', { name: 'hr', exact: true }).getAttribute('aria-current'), 'page');
  // the heading shows while the namespace's tables load (a CI run read the list before they came)
  await page.locator('#tables-list a', { hasText: 'teams' }).waitFor();
  assert.deepEqual(await page.locator('#tables-list a').allInnerTexts(), ['salaries', 'teams']);
  await page.locator('#no-views').waitFor();
  assert.match(await page.locator('#namespace-properties').innerText(), /owner\s+hr-team/);
  await browser.screenshot(page, 'catalog-01-namespace');

  await tree.getByRole('link', { name: 'web' }).click();
  await page.getByRole('heading', { name: 'Namespace web' }).waitFor();
  await page.locator('#views-list').getByRole('link', { name: 'daily' }).waitFor();
  await page.locator('#tables-list').getByRole('link', { name: 'events' }).click();

  // The table page: columns, partitioning, snapshots newest first, properties.
  await page.getByRole('heading', { name: 'Table web.events', level: 1 }).waitFor();
  // The heading shows while the table loads: wait for its columns before reading them.
  await page.locator('#columns tbody tr').first().waitFor();
  assert.deepEqual(await page.locator('#columns tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('th, td')].map((c) => (c as HTMLElement).innerText))), [
    ['id', 'long', 'no', ''], ['ts', 'timestamptz', 'yes', 'when it happened'], ['tags', 'list<string>', 'yes', ''],
  ]);
  assert.deepEqual(await page.locator('#partition-fields tbody tr').first().locator('th, td').allInnerTexts(), ['ts_day', 'ts', 'day']);
  await page.locator('#unsorted').waitFor();
  const snaps = page.locator('#snapshots > li');
  assert.deepEqual(await snaps.evaluateAll((li) => li.map((x) => x.getAttribute('data-snapshot'))), ['1002', '1001']);
  assert.match(await snaps.first().innerText(), /^overwrite .*current\s+snapshot 1002 after 1001/s);
  await snaps.first().getByText('Summary').click();
  // The chevron sits beside "Summary", not at the far right of the page (issue 28, bug 6).
  const chevron = await snaps.first().locator('summary').evaluate((s) => ({ float: getComputedStyle(s, '::after').float, right: s.getBoundingClientRect().right }));
  assert.equal(chevron.float, 'none');
  assert.match(await snaps.first().locator('dl').innerText(), /added-records\s+20/);
  assert.match(await page.locator('#refs').innerText(), /main\s+branch\s+1002/);
  assert.match(await page.locator('#properties').innerText(), /write\.format\.default\s+parquet/);
  assert.deepEqual(await seriousViolations(page), [], 'table page: no serious accessibility violation');
  await browser.screenshot(page, 'catalog-02-table');

  // The link opens the SQL console with the query written, not run.
  await page.getByRole('button', { name: 'Query in the SQL console' }).click();
  await page.getByRole('heading', { name: 'SQL console' }).waitFor();
  await page.locator('#sql-source').waitFor();
  assert.equal((await page.locator('#sql-source').innerText()).trim(), 'SELECT * FROM iceberg.web.events LIMIT 100');
  assert.equal(await page.locator('#query-state').innerText(), 'No query run yet.', 'nothing ran');

  // The view page: its SQL and schema.
  await page.goto(`${svc.base}/#/w/default/catalog/views/web/daily`);
  await page.getByRole('heading', { name: 'View web.daily', level: 1 }).waitFor();
  assert.equal(await page.locator('figure[data-dialect="trino"] pre').innerText(), 'SELECT count(*) AS n FROM web.events');
  assert.deepEqual(await page.locator('#columns tbody tr th').allInnerTexts(), ['n']);
  assert.match(await page.locator('#properties').innerText(), /comment\s+daily counts/);
  assert.deepEqual(await seriousViolations(page), [], 'view page: no serious accessibility violation');
  await browser.screenshot(page, 'catalog-03-view');
  await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'web' }).click();
  await page.getByRole('heading', { name: 'Namespace web' }).waitFor();

  // A viewer on a narrow window: the policy hides hr.salaries, from the list and at its address.
  const v = await browser.newPage();
  await v.page.setViewportSize({ width: 420, height: 900 });
  await signIn(v.page, svc.base, VIEWER, '#/w/default/catalog?ns=hr');
  await v.page.getByRole('heading', { name: 'Namespace hr' }).waitFor();
  await v.page.locator('#tables-list').getByRole('link', { name: 'teams' }).waitFor();
  assert.deepEqual(await v.page.locator('#tables-list a').allInnerTexts(), ['teams'], 'salaries is not shown to the viewer');
  assert.deepEqual(await seriousViolations(v.page), [], 'viewer catalog: no serious accessibility violation');
  await browser.screenshot(v.page, 'catalog-04-viewer-narrow');
  await v.page.goto(`${svc.base}/#/w/default/catalog/tables/hr/salaries`);
  const problem = v.page.locator('#catalog-problem');
  await problem.waitFor();
  assert.equal(await problem.innerText(), 'Forbidden: policy "salaries are private" denies select on default.hr.salaries to vera@example.test.');
  assert.equal(await v.page.locator('#columns').count(), 0);
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  assert.deepEqual(v.errors, [], 'no console errors for the viewer');
});

test('SQL workbench: the catalog under iceberg in the tree (nested namespaces, columns and types), names inserted qualified and quoted; a hidden table is not in a viewer\'s tree', async () => {
  const { page, errors } = await browser.newPage();
  // The table page's link writes the qualified, quoted name of a table in a nested namespace.
  await signIn(page, svc.base, undefined, '#/w/default/catalog/tables/hr%1Feu/My%20Table');
  await page.getByRole('heading', { name: 'Table hr.eu.My Table', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Query in the SQL console' }).click();
  await page.locator('#sql-source').waitFor();
  assert.equal((await page.locator('#sql-source').innerText()).trim(), 'SELECT * FROM iceberg."hr.eu"."My Table" LIMIT 100');

  // The tree: namespaces under iceberg, a nested one inside its parent, a table's columns and types.
  const tree = page.locator('.schema-tree');
  await tree.locator('li[data-namespace="web"]').waitFor();
  assert.deepEqual(await tree.locator('li.tree-namespace > .tree-name').allInnerTexts(), ['hr', 'web']);
  await tree.getByRole('button', { name: 'Tables of web' }).click();
  const events = tree.locator('li[data-table="iceberg.web.events"]');
  await events.waitFor();
  await events.getByRole('button', { name: 'Columns of iceberg.web.events' }).click();
  await events.locator('li.tree-column').first().waitFor();
  assert.deepEqual(await events.locator('li.tree-column').allInnerTexts(), ['id long', 'ts timestamptz', 'tags list<string>']);
  await tree.getByRole('button', { name: 'Tables of hr', exact: true }).click();
  await tree.getByRole('button', { name: 'Tables of hr.eu' }).click();
  const mine = tree.locator('li[data-table=\'iceberg."hr.eu"."My Table"\']');
  await mine.waitFor();
  // A click inserts the name at the cursor.
  await pasteInto(page, '#sql-source', 'SELECT count(*) FROM ');
  await page.locator('#sql-source').press('End');
  await mine.getByRole('button', { name: 'My Table', exact: true }).click();
  await page.keyboard.type(' JOIN ');
  await events.getByRole('button', { name: 'events', exact: true }).click();
  assert.equal((await page.locator('#sql-source').innerText()).trim(), 'SELECT count(*) FROM iceberg."hr.eu"."My Table" JOIN iceberg.web.events');
  assert.deepEqual(await seriousViolations(page), [], 'workbench with the catalog tree: no serious accessibility violation');
  await browser.screenshot(page, 'catalog-05-workbench-tree');

  // The viewer's tree leaves out the table a policy hides from them.
  const v = await browser.newPage();
  await signIn(v.page, svc.base, VIEWER, '#/w/default/sql');
  const vtree = v.page.locator('.schema-tree');
  await vtree.getByRole('button', { name: 'Tables of hr', exact: true }).click();
  await vtree.locator('li[data-table="iceberg.hr.teams"]').waitFor();
  assert.equal(await vtree.locator('li[data-table="iceberg.hr.salaries"]').count(), 0, 'salaries is not in the viewer\'s tree');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  assert.deepEqual(v.errors, [], 'no console errors for the viewer');
});
