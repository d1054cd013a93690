// The console's Engines screen walked as users in Debian's Chromium against a real `svc serve`
// whose engines worker provisions through the cluster provisioner to an in-test Kubernetes API
// server (test/helpers/fake-k8s-objects.ts, named as such: no cluster runs here): a ws_admin
// explains an engine before creating it (Create only for the form as explained), sees a floating
// tag refused with the server's message, creates it and watches it reach running, stops, starts
// and deletes it; a ws_viewer reads the list and is offered none of it. axe-core on each screen;
// screenshots to test-results/ui-engines-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';
import { addMember } from './helpers/console-apps.js';
import { startFakeKubernetesObjects, type FakeKubernetesObjects } from './helpers/fake-k8s-objects.js';

const VIEWER = { email: 'viewer@example.test', password: 'viewer-password-1' };
let browser: TestBrowser; let svc: Svc; let k8s: FakeKubernetesObjects; let dir: string;
before(async () => {
  k8s = await startFakeKubernetesObjects();
  // `svc serve` builds its cluster provisioner from the default kube config: point it at the fake.
  dir = mkdtempSync(join(tmpdir(), 'svc-kube-'));
  writeFileSync(join(dir, 'config'), k8s.kubeConfig().exportConfig());
  process.env.KUBECONFIG = join(dir, 'config');
  svc = await startSvc({
    SVC_ENGINES__PROVISIONER: 'cluster', SVC_CATALOG__PUBLIC_URL: 'https://svc.example.test',
    SVC_WORKFLOW__CLUSTER__NAMESPACE: 'svc-engines-ui', SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); await k8s?.close(); rmSync(dir, { recursive: true, force: true }); });

test('Engines: explain then create, live state, stop, start, delete for ws_admin; read-only for ws_viewer', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Engines' }).click();
  await page.getByRole('heading', { name: 'Engines', level: 1 }).waitFor();
  assert.match(await page.locator('#provisioner').innerText(), /Provisioner: cluster/);
  await page.locator('#no-engines').waitFor();
  assert.deepEqual(await seriousViolations(page), [], 'engines: no serious accessibility violation');

  // Explain first: Create is offered only for the form as explained.
  const create = page.getByRole('button', { name: 'Create engine' });
  await page.getByLabel('Name').fill('adhoc');
  await page.getByLabel('CPU').fill('1');
  await page.getByLabel('Memory').fill('2Gi');
  assert.equal(await create.isDisabled(), true, 'no Create before Explain');
  await page.getByRole('button', { name: 'Explain' }).click();
  const plan = page.locator('#engine-plan');
  await plan.waitFor();
  const text = await plan.innerText();
  assert.match(text, /Action\s+create/);
  assert.match(text, /docker\.io\/trinodb\/trino:476 \(pinned by version\)/);
  assert.match(text, /1 CPU, 2Gi/);
  assert.match(text, /svc\.engine=adhoc/);
  assert.equal(await create.isDisabled(), false);
  await page.getByLabel('Memory').fill('3Gi');
  assert.equal(await create.isDisabled(), true, 'a changed form must be explained again');
  assert.equal(await plan.count(), 0);
  await browser.screenshot(page, 'engines-01-explain');

  // A floating tag: the server's refusal in the form.
  await page.getByLabel('Image pinned by digest (optional)').fill('docker.io/trinodb/trino:latest');
  await page.getByRole('button', { name: 'Explain' }).click();
  await page.locator('.form-error.visible').getByText(/has a floating tag/).waitFor();
  await page.getByLabel('Image pinned by digest (optional)').fill('');

  await page.getByLabel('Memory').fill('2Gi');
  await page.getByRole('button', { name: 'Explain' }).click();
  await plan.waitFor();
  await create.click();
  await page.getByRole('status').filter({ hasText: 'Created engine adhoc; it is provisioning.' }).waitFor();
  const row = page.locator('#engines-table tr[data-engine="adhoc"]');
  await row.locator('.state').getByText('running', { exact: true }).waitFor({ timeout: 60_000 });
  assert.match(await row.innerText(), /trino 476[\s\S]*1 CPU, 2Gi[\s\S]*http:\/\/svc-engine-default-adhoc-[0-9a-f]{8}\.svc-engines-ui\.svc:8080/);
  assert.equal(await row.getByRole('button', { name: 'Start adhoc' }).count(), 0, 'no Start for a running engine');
  await browser.screenshot(page, 'engines-02-running');

  await row.getByRole('button', { name: 'Stop adhoc' }).click();
  await page.getByRole('status').filter({ hasText: 'Stopping engine adhoc.' }).waitFor();
  await row.locator('.state').getByText('stopped', { exact: true }).waitFor({ timeout: 60_000 });
  assert.match(await row.innerText(), /wanted: stopped/);
  await row.getByRole('button', { name: 'Start adhoc' }).click();
  await row.locator('.state').getByText('running', { exact: true }).waitFor({ timeout: 60_000 });

  // A ws_viewer reads the list and is offered no action and no form.
  await addMember(page, VIEWER, 'engine-viewers', 'ws_viewer');
  const v = await browser.newPage();
  await signIn(v.page, svc.base, VIEWER, '#/w/default/engines');
  const vrow = v.page.locator('#engines-table tr[data-engine="adhoc"]');
  await vrow.waitFor();
  assert.equal(await vrow.getByRole('button').count(), 0, 'no Stop, Start or Delete for a viewer');
  assert.equal(await v.page.getByRole('heading', { name: 'Add an engine' }).count(), 0, 'no create form for a viewer');
  assert.deepEqual(await v.page.locator('#engines-table thead th').allInnerTexts(), ['Engine', 'Kind', 'State', 'Resources', 'Endpoint', 'Changed']);
  assert.deepEqual(await seriousViolations(v.page), [], 'viewer engines: no serious accessibility violation');
  await browser.screenshot(v.page, 'engines-03-viewer');

  page.once('dialog', (d) => { assert.match(d.message(), /^Delete engine adhoc\?/); void d.accept(); });
  await row.getByRole('button', { name: 'Delete adhoc' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleting engine adhoc.' }).waitFor();
  // The row goes once its objects are removed (the list polls while the engine is stopping).
  await page.locator('#no-engines').waitFor({ timeout: 60_000 });
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  assert.deepEqual(v.errors, [], 'no console errors for the viewer');
});
