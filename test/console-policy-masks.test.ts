// Column masks and row filters written on the console's Policies screen, walked as a workspace
// administrator in Debian's Chromium against a real `svc serve` with the policy service on: the
// editor's kind (access policy, column mask, row filter), the resource levels each kind takes, a
// mask type with an expression only for CUSTOM, the server's refusals shown in the form (on the
// item they name), the policies listed, one edited, one deleted; and what an engine plugin
// downloads from the service after each change. axe-core on the screen; screenshots to
// test-results/ui-policy-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';
import { call } from './helpers/console-apps.js';

let browser: TestBrowser; let svc: Svc;
before(async () => {
  svc = await startSvc({ SVC_POLICY_SERVICE__ENABLED: 'true', SVC_ENGINES__PROVISIONER: 'none' });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); });

const status = (page: Page, text: string | RegExp) => page.getByRole('status').filter({ hasText: text }).waitFor();
const formError = (page: Page, text: string | RegExp) => page.locator('#policy-form .form-error.visible').getByText(text).waitFor();
/** The policies an engine plugin downloads (the plugin API is open: no policy_service.auth_token). */
async function downloaded(): Promise<Map<string, Record<string, unknown>>> {
  const r = await fetch(`${svc.base}/service/plugins/policies/download/default?lastKnownVersion=-1`);
  assert.equal(r.status, 200);
  const body = await r.json() as { policies: Record<string, unknown>[] };
  return new Map(body.policies.map((p) => [p.name as string, p]));
}
const select = (types: string[]) => types.map((type) => ({ type, isAllowed: true }));

test('Policies: a column mask and a row filter made, refused, listed, edited and deleted in the editor', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base, undefined, '#/w/default/policies');
  await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
  await page.locator('#no-policies').waitFor();
  const form = page.locator('#policy-form');

  // A column mask: its items replace allow and deny; the four resource levels stay.
  await form.getByRole('radio', { name: 'Masking policy' }).check();
  assert.equal(await form.getByRole('button', { name: 'Add an allow item' }).count(), 0);
  assert.equal(await form.locator('fieldset.policy-item').count(), 1);
  const mask1 = form.locator('#mask-item-1');
  await form.getByLabel('Name').fill('hash emails');
  for (const [level, v] of [['Catalog', 'lake'], ['Schema', 'crm'], ['Table', 'people']]) await form.getByLabel(level, { exact: true }).fill(v);
  await mask1.getByRole('checkbox', { name: 'ws_viewer' }).check();
  await mask1.getByLabel('Mask type').selectOption('MASK_HASH');
  assert.equal(await mask1.getByLabel('Mask expression').count(), 0, 'no expression for a mask type that takes none');
  assert.match(await mask1.innerText(), /They see SHA-256 hash\./);
  // No column: the server's message in the form.
  await form.getByRole('button', { name: 'Create policy' }).click();
  await formError(page, 'A mask policy names its columns: resources down to column.');
  // CUSTOM takes an expression; left empty, the server's message marks the item.
  await form.getByLabel('Column', { exact: true }).fill('email');
  await mask1.getByLabel('Mask type').selectOption('CUSTOM');
  await form.getByRole('button', { name: 'Create policy' }).click();
  await formError(page, /^Masks\[0\]: a CUSTOM mask needs an expression\.$/);
  assert.equal(await mask1.getAttribute('aria-invalid'), 'true');
  assert.match(await mask1.locator('.error-text').innerText(), /a CUSTOM mask needs an expression/);
  await mask1.getByLabel('Mask expression').fill("substr({col}, 1, 2) || '***'");
  await form.getByRole('button', { name: 'Create policy' }).click();
  await status(page, 'Created policy hash emails.');
  const masked = page.locator('#policies-table tr[data-policy="hash emails"]');
  assert.match(await masked.innerText(), /catalog lake › schema crm › table people › column email\s+role ws_viewer: mask CUSTOM substr\(\{col\}, 1, 2\) \|\| '\*\*\*'\s+1/);
  assert.equal(await form.getByRole('radio', { name: 'Masking policy' }).isChecked(), true, 'the next policy starts as the same kind');
  assert.equal(await form.getByLabel('Name').inputValue(), '', 'the create form is emptied');

  // A row filter: resources down to the table (no column input), a filter expression per item.
  await form.getByRole('radio', { name: 'Row filter policy' }).check();
  assert.equal(await form.getByLabel('Column', { exact: true }).count(), 0);
  const filter1 = form.locator('#filter-item-1');
  await form.getByLabel('Name').fill('eu rows');
  for (const [level, v] of [['Catalog', 'lake'], ['Schema', 'crm'], ['Table', 'orders']]) await form.getByLabel(level, { exact: true }).fill(v);
  await filter1.getByLabel('Groups').fill('eu-sales');
  // An empty filter: the API refuses the field, the message marks the item.
  await form.getByRole('button', { name: 'Create policy' }).click();
  await formError(page, /^Invalid body at row_filters\.0\.filter: /);
  assert.equal(await filter1.getAttribute('aria-invalid'), 'true');
  await filter1.getByLabel('Filter expression').fill("region = 'eu'");
  await form.getByRole('button', { name: 'Create policy' }).click();
  await status(page, 'Created policy eu rows.');
  assert.match(await page.locator('#policies-table tr[data-policy="eu rows"]').innerText(), /table orders\s+group eu-sales: only rows where region = 'eu'/);
  assert.match(await page.locator('#service-versions').innerText(), /policy version 2/);
  assert.deepEqual(await seriousViolations(page), [], 'masks and row filters: no serious accessibility violation');
  await browser.screenshot(page, 'policy-01-masks-filters');

  // In effect: the plugin downloads a data mask policy (type 1) and a row filter policy (type 2).
  let got = await downloaded();
  const m = got.get('hash emails')!;
  assert.equal(m.policyType, 1);
  assert.deepEqual((m.resources as Record<string, { values: string[] }>).column.values, ['email']);
  assert.deepEqual((m.dataMaskPolicyItems as Record<string, unknown>[]).map((i) => [i.roles, i.accesses, i.dataMaskInfo]),
    [[['ws_viewer'], select(['select']), { dataMaskType: 'CUSTOM', valueExpr: "substr({col}, 1, 2) || '***'" }]]);
  const f = got.get('eu rows')!;
  assert.equal(f.policyType, 2);
  assert.equal((f.resources as Record<string, unknown>).column, undefined);
  assert.deepEqual((f.rowFilterPolicyItems as Record<string, unknown>[]).map((i) => [i.groups, i.rowFilterInfo]), [[['eu-sales'], { filterExpr: "region = 'eu'" }]]);

  // Edit the mask: the form holds it (its kind fixed); CUSTOM becomes MASK_HASH and a second item nulls it for one user.
  await masked.getByRole('button', { name: 'Edit hash emails' }).click();
  await page.getByRole('heading', { name: 'Edit policy hash emails' }).waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'policy-name');
  assert.match(await form.locator('#policy-kind').innerText(), /Kind: masking policy/);
  assert.equal(await form.getByRole('radio').count(), 0);
  assert.equal(await mask1.getByLabel('Mask expression').inputValue(), "substr({col}, 1, 2) || '***'");
  await mask1.getByLabel('Mask type').selectOption('MASK_HASH');
  await form.getByRole('button', { name: 'Add a mask item' }).click();
  const mask2 = form.locator('#mask-item-2');
  await mask2.getByLabel('Users').fill('ana@example.test');
  await mask2.getByLabel('Mask type').selectOption('MASK_NULL');
  await form.getByRole('button', { name: 'Save policy' }).click();
  await status(page, 'Saved policy hash emails.');
  await page.getByRole('heading', { name: 'Create a policy' }).waitFor();
  assert.match(await masked.innerText(), /role ws_viewer: mask MASK_HASH\s+ana@example\.test: mask MASK_NULL\s+2/);
  const api = await call(page, 'GET', '/api/workspaces/default/policies');
  const saved = (api.json!.policies as Record<string, unknown>[]).find((p) => p.name === 'hash emails')!;
  assert.deepEqual(saved.masks, [{ users: [], groups: [], roles: ['ws_viewer'], type: 'MASK_HASH' }, { users: ['ana@example.test'], groups: [], roles: [], type: 'MASK_NULL' }]);
  assert.deepEqual(saved.allow, []);
  got = await downloaded();
  assert.deepEqual((got.get('hash emails')!.dataMaskPolicyItems as Record<string, unknown>[]).map((i) => i.dataMaskInfo), [{ dataMaskType: 'MASK_HASH' }, { dataMaskType: 'MASK_NULL' }]);

  // Delete the row filter: gone from the list and from what the plugin downloads.
  page.once('dialog', (d) => { assert.match(d.message(), /^Delete policy eu rows\?/); void d.accept(); });
  await page.locator('#policies-table tr[data-policy="eu rows"]').getByRole('button', { name: 'Delete eu rows' }).click();
  await status(page, 'Deleted policy eu rows; policy version 4.');
  assert.equal(await page.locator('#policies-table tr[data-policy="eu rows"]').count(), 0);
  got = await downloaded();
  assert.deepEqual([...got.keys()], ['hash emails']);
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
