// The console's workspace screens beyond flows and executions, walked as a user in Debian's
// Chromium against a real `svc serve` with its worker and an S3 server: the attempts of a task run
// that retried; the triggers with their last and next fire times; namespace files (browse,
// upload, edit, delete); secrets (names only, set and delete by a ws_admin). axe-core on each screen; screenshots to test-results/ui-ws-*.png.
import { test, before, after } from 'node:test';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { pasteInto, signIn, startSvc, type Svc } from './helpers/console.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';

let browser: TestBrowser; let svc: Svc; let s3: TestS3;

before(async () => {
  s3 = await startS3();
  svc = await startSvc({
    ...storageEnv(s3),
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__SCHEDULER_ENABLED: 'true',
    SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
    // Every test signs in from the same loopback address: more than the default 5 per window.
    SVC_RATE_LIMIT__LOGIN_MAX_ATTEMPTS: '50',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); await s3?.stop(); });

/** A same-origin API call from the signed-in page (session cookie and CSRF header), for setup. */
async function call(page: Page, method: string, path: string, body?: string, type = 'application/json'): Promise<{ status: number; text: string }> {
  const csrf = (await page.context().cookies()).find((c) => c.name === 'svc_csrf')?.value ?? '';
  return page.evaluate(async ({ method, path, body, type, csrf }) => {
    const r = await fetch(path, { method, headers: body === undefined ? { 'x-svc-csrf': csrf } : { 'content-type': type, 'x-svc-csrf': csrf }, body });
    return { status: r.status, text: await r.text() };
  }, { method, path, body, type, csrf });
}

async function noSeriousViolations(page: Page, screen: string): Promise<void> {
  assert.deepEqual(await seriousViolations(page), [], `${screen}: no serious accessibility violation`);
}

test('the execution page lists each attempt of a task run that retried', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  const created = await call(page, 'POST', '/workflows/v1/default/flows', `id: flaky
namespace: team.attempts
tasks:
  - id: first
    type: log
    message: starting
  - id: shaky
    type: fail
    message: "not this time"
    retry:
      maxAttempts: 3
      interval: PT0S
`, 'application/x-yaml');
  assert.equal(created.status, 201, created.text);
  await page.goto(`${svc.base}/#/w/default/flows/team.attempts/flaky`);
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('button', { name: 'Start' }).click();
  await page.locator('#execution-state').getByText('FAILED').waitFor({ timeout: 60_000 });
  const shaky = page.locator('#attempts tbody tr[data-task="shaky"]');
  await shaky.nth(2).waitFor();
  assert.equal(await shaky.count(), 3, 'three attempts of the retried task');
  const texts = await shaky.allInnerTexts();
  assert.match(texts[0], /shaky\s+1\s+FAILED\s+first try/);
  assert.match(texts[1], /shaky\s+2\s+FAILED\s+retry/);
  assert.match(texts[2], /shaky\s+3\s+FAILED\s+retry/);
  assert.equal(await page.locator('#attempts tbody tr[data-task="first"]').count(), 1, 'the log task ran once');
  assert.match(await page.locator('#task-runs tr[data-task="shaky"]').innerText(), /not this time[\s\S]*FAILED\s+3/);
  await browser.screenshot(page, 'ws-01-attempts');
  await noSeriousViolations(page, 'execution with attempts');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('the triggers screen shows when each trigger last fired and when a schedule fires next', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  const save = async (source: string, expect = 201) => {
    const r = await call(page, 'POST', '/workflows/v1/default/flows', source, 'application/x-yaml');
    assert.equal(r.status, expect, r.text);
  };
  await save(`id: upstream
namespace: team.triggers
tasks:
  - id: hi
    type: log
    message: upstream ran
`);
  // The flow with a 2-second schedule; more triggers follow it in `rest`.
  const often = (rest: string) => `id: often
namespace: team.triggers
tasks:
  - id: tick
    type: log
    message: tick
triggers:
  - id: every2s
    type: schedule
    cron: "*/2 * * * * *"
${rest}`;
  await save(often(`  - id: newyear
    type: schedule
    cron: "0 0 1 1 *"
    timezone: Europe/Paris
  - id: after-upstream
    type: flow
    conditions:
      namespace: team.triggers
      flowId: upstream
`));

  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Triggers' }).click();
  await page.getByRole('heading', { name: 'Triggers', exact: true }).waitFor();
  const row = (id: string) => page.locator(`#triggers-table tr[data-trigger="team.triggers.often.${id}"]`);
  await row('newyear').waitFor();
  assert.equal(await page.locator('#scheduler-off').count(), 0, 'the scheduler is on in this service');
  // The yearly schedule fires next on 1 January at midnight in Paris: the server computed it.
  const y = new Date().getUTCFullYear();
  const newYear = Date.now() < Date.UTC(y, 11, 31, 23) ? Date.UTC(y, 11, 31, 23) : Date.UTC(y + 1, 11, 31, 23);
  assert.equal(await row('newyear').locator('.next-fire time').getAttribute('datetime'), new Date(newYear).toISOString());
  assert.match(await row('newyear').innerText(), /newyear\s+team\.triggers\.often\s+schedule\s+0 0 1 1 \*\s+Europe\/Paris\s+—/);
  assert.match(await row('after-upstream').innerText(), /team\.triggers\.upstream ends SUCCESS\s+—\s+on event/);
  // Every time is shown in the schedule's own time zone, named beside it.
  assert.match(await row('newyear').locator('.next-fire').innerText(), /^1 Jan \d{4}, 00:00:00 Europe\/Paris$/);

  // The 2-second schedule fires (the screen refreshes itself) and its next fire is after its last.
  const fired = row('every2s').locator('.last-fired a');
  await fired.waitFor({ timeout: 60_000 });
  const last = Date.parse((await fired.locator('time').getAttribute('datetime'))!);
  const next = Date.parse((await row('every2s').locator('.next-fire time').getAttribute('datetime'))!);
  assert.ok(next > last && next - last <= 4000 && next % 2000 === 0, `next ${next} follows last ${last} on the 2-second grid`);

  // The flow trigger fires when upstream succeeds.
  const run = await call(page, 'POST', '/workflows/v1/default/executions/team.triggers/upstream', '{"inputs":{}}');
  assert.equal(run.status, 201, run.text);
  await row('after-upstream').locator('.last-fired a').waitFor({ timeout: 60_000 });
  await browser.screenshot(page, 'ws-02-triggers');
  await noSeriousViolations(page, 'triggers');

  // Its link opens the execution it started, which names the trigger.
  await row('after-upstream').locator('.last-fired a').click();
  await page.locator('#execution-trigger').getByText('flow trigger after-upstream after execution').waitFor();
  assert.ok(await page.locator('#main').getByRole('link', { name: 'team.triggers.often' }).count() >= 1);

  // Disable from the screen: the flow's source gets `disabled: true` (a new revision); a disabled
  // schedule has no next fire time (and stops firing); Enable takes it off again.
  await page.goto(`${svc.base}/#/w/default/triggers`);
  await row('newyear').getByRole('button', { name: 'Disable newyear of team.triggers.often' }).click();
  await page.getByRole('status').filter({ hasText: /Disabled trigger newyear of team\.triggers\.often \(revision \d+\)\./ }).waitFor();
  await row('newyear').getByText('(disabled)').waitFor();
  assert.equal(await row('newyear').locator('.next-fire time').count(), 0);
  const source = JSON.parse((await call(page, 'GET', '/workflows/v1/default/flows/team.triggers/often')).text).source as string;
  assert.match(source, /- id: newyear\n {4}type: schedule\n {4}cron: "0 0 1 1 \*"\n {4}timezone: Europe\/Paris\n {4}disabled: true/);
  await row('newyear').getByRole('button', { name: 'Enable newyear of team.triggers.often' }).click();
  await page.getByRole('status').filter({ hasText: /Enabled trigger newyear/ }).waitFor();
  await row('newyear').locator('.next-fire time').waitFor();
  const saved = await call(page, 'PUT', '/workflows/v1/default/flows/team.triggers/often', often('    disabled: true\n'), 'application/x-yaml');
  assert.equal(saved.status, 200, saved.text);
  await page.goto(`${svc.base}/#/w/default/triggers`);
  await row('every2s').getByText('(disabled)').waitFor();
  assert.equal(await row('every2s').locator('.next-fire time').count(), 0);
  assert.equal(await row('newyear').count(), 0, 'a trigger removed from the flow is gone');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('namespace files: upload into a folder, browse, edit as text, delete', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Files' }).click();
  await page.getByRole('heading', { name: 'Namespace files' }).waitFor();
  // Counts the upload forms the screen shows (see the end of this block).
  await page.evaluate(`(() => {
    const seen = window.uploadInputs = [];
    new MutationObserver(() => {
      const input = document.querySelector('#upload-file');
      if (input && !seen.includes(input)) seen.push(input);
    }).observe(document.body, { subtree: true, childList: true });
  })()`);
  await page.getByLabel('Namespace', { exact: true }).fill('team.files');
  await page.getByRole('button', { name: 'Show files' }).click();
  await page.locator('#no-files').waitFor();
  assert.match(page.url(), /#\/w\/default\/files\?namespace=team\.files$/);

  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'app.yaml', mimeType: 'text/yaml', buffer: Buffer.from('greeting: hello\n') });
  await page.getByLabel('Path in team.files (optional)').fill('conf/app.yaml');
  await page.getByRole('button', { name: 'Upload' }).click();
  await page.getByRole('status').filter({ hasText: 'Uploaded conf/app.yaml (16 bytes).' }).waitFor();
  // The first render after "Show files" showed the last namespace's listing, with an upload
  // form the listing's arrival replaced: a file chosen in it was lost ("Choose a file to upload.",
  // and this test waited for ever). One form from the namespace's own listing on.
  assert.equal(await page.evaluate('window.uploadInputs.length'), 1, 'the upload form is shown once, not replaced');
  const text = page.locator('#file-text');
  await text.getByText('greeting: hello').waitFor();
  // Opened in the code editor, highlighted as YAML (by its extension): the key is a token of its own.
  assert.ok(await text.locator('span', { hasText: /^greeting$/ }).count() >= 1, 'the YAML key is highlighted');
  // The root shows the folder; the folder shows the file.
  await page.locator('#files-table tr[data-folder="conf"]').getByRole('link', { name: 'conf/' }).click();
  await page.locator('#files-table tr[data-file="conf/app.yaml"]').waitFor();
  assert.match(await page.locator('#files-table tr[data-file="conf/app.yaml"]').innerText(), /app\.yaml\s+16 bytes/);
  await page.locator('#files-table').getByRole('link', { name: 'app.yaml' }).click();
  await text.waitFor();

  await pasteInto(page, '#file-text', 'greeting: bonjour\nlines: 2\n');
  await page.getByRole('button', { name: 'Save file' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved conf/app.yaml.' }).waitFor();
  const stored = await call(page, 'GET', '/workflows/v1/default/namespaces/team.files/files/content?path=conf%2Fapp.yaml');
  assert.equal(stored.text, 'greeting: bonjour\nlines: 2\n', 'the edit is what the server stores');
  await page.locator('#files-table tr[data-file="conf/app.yaml"]').getByText('27 bytes').waitFor();
  await browser.screenshot(page, 'ws-03-namespace-file');
  await noSeriousViolations(page, 'namespace files');

  // A path the server refuses shows its message in the form.
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'x.txt', mimeType: 'text/plain', buffer: Buffer.from('x') });
  await page.getByLabel('Path in team.files (optional)').fill('../escape.txt');
  await page.getByRole('button', { name: 'Upload' }).click();
  await page.locator('form .form-error').filter({ hasText: /invalid file path/i }).waitFor();

  page.once('dialog', (d) => { assert.match(d.message(), /^Delete conf\/app\.yaml from team\.files/); void d.accept(); });
  await page.getByRole('button', { name: 'Delete file' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted conf/app.yaml.' }).waitFor();
  await page.locator('#no-files').waitFor();
  // The picker offers the namespaces of the workspace's flows (and their parents).
  await page.getByLabel('Namespaces of flows').locator('option', { hasText: /^team\.triggers$/ }).waitFor({ state: 'attached' });
  const picked = await page.getByLabel('Namespaces of flows').locator('option').allInnerTexts();
  assert.ok(picked.includes('team') && picked.includes('team.triggers'), picked.join(', '));
  await page.getByLabel('Namespaces of flows').selectOption('team.triggers');
  await page.waitForURL(/files\?namespace=team\.triggers$/);
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('secrets: names only; a ws_admin sets, replaces and deletes one', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Secrets' }).click();
  await page.getByRole('heading', { name: 'Secrets', exact: true }).waitFor();
  await page.locator('#no-secrets').waitFor();
  const value = `s3cr3t-${randomBytes(6).toString('hex')}`;
  await page.getByLabel('Name', { exact: true }).fill('DB_PASSWORD');
  await page.getByLabel('Value', { exact: true }).fill(value);
  await page.getByRole('button', { name: 'Set secret' }).click();
  await page.getByRole('status').filter({ hasText: 'Set secret DB_PASSWORD.' }).waitFor();
  await page.locator('#secrets-table tr[data-secret="DB_PASSWORD"]').waitFor();
  assert.equal(await page.getByLabel('Value', { exact: true }).inputValue(), '', 'the value is cleared from the form');
  assert.equal((await page.content()).includes(value), false, 'the value is nowhere in the page');
  await page.getByLabel('Name', { exact: true }).fill('DB_PASSWORD');
  await page.getByLabel('Value', { exact: true }).fill(`${value}-2`);
  await page.getByRole('button', { name: 'Set secret' }).click();
  await page.getByRole('status').filter({ hasText: 'Secret DB_PASSWORD now has the new value.' }).waitFor();
  assert.equal(await page.locator('#secrets-table tbody tr').count(), 1);
  await browser.screenshot(page, 'ws-04-secrets');
  await noSeriousViolations(page, 'secrets');
  page.once('dialog', (d) => { void d.accept(); });
  await page.getByRole('button', { name: 'Delete secret DB_PASSWORD' }).click();
  await page.getByRole('status').filter({ hasText: 'Deleted secret DB_PASSWORD.' }).waitFor();
  await page.locator('#no-secrets').waitFor();
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('a ws_viewer signs in and is offered nothing a viewer may not do', async () => {
  const adm = await browser.newPage();
  await signIn(adm.page, svc.base);
  const ok = async (method: string, path: string, body?: string, type?: string) => {
    const r = await call(adm.page, method, path, body, type);
    assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  };
  const viewer = { email: 'viewer@example.test', password: 'viewer-password-1' };
  await ok('POST', '/api/users', JSON.stringify({ ...viewer, name: 'Vera Viewer' }));
  await ok('POST', '/api/groups', JSON.stringify({ name: 'readers' }));
  await ok('PUT', `/api/groups/readers/members/${encodeURIComponent(viewer.email)}`);
  await ok('PUT', '/api/workspaces/default/members/groups/readers', JSON.stringify({ role: 'ws_viewer' }));
  await ok('POST', '/workflows/v1/default/flows', `id: longrun
namespace: team.viewer
tasks:
  - id: wait
    type: sleep
    duration: PT10M
`, 'application/x-yaml');
  await ok('PUT', '/workflows/v1/default/namespaces/team.viewer/files/content?path=notes.txt', 'read me', 'application/octet-stream');
  await ok('PUT', '/workflows/v1/default/secrets/API_TOKEN', JSON.stringify({ value: 'not-for-viewers' }));
  const started = await call(adm.page, 'POST', '/workflows/v1/default/executions/team.viewer/longrun', '{"inputs":{}}');
  assert.equal(started.status, 201, started.text);
  const execId = (JSON.parse(started.text) as { id: string }).id;

  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base, viewer);
  const main = page.getByRole('navigation', { name: 'Main' });
  for (const admin of ['Groups', 'OAuth clients', 'Audit log', 'Queues']) assert.equal(await main.getByRole('link', { name: admin }).count(), 0, `no ${admin} link`);
  const wsNav = page.getByRole('navigation', { name: 'Workspace default' });
  for (const s of ['Flows', 'Executions', 'Triggers', 'Files', 'Secrets']) await wsNav.getByRole('link', { name: s, exact: true }).waitFor();
  assert.equal(await wsNav.getByRole('link', { name: 'Members' }).count(), 0, 'no Members link');

  await wsNav.getByRole('link', { name: 'Flows', exact: true }).click();
  await page.locator('#main').getByRole('link', { name: 'longrun', exact: true }).click();
  await page.getByRole('heading', { name: 'team.viewer.longrun' }).waitFor();
  await page.getByText('Your role in default reads flows; ws_editor changes them.').waitFor();
  for (const b of ['Run', 'Delete', 'Save', 'Create flow']) assert.equal(await page.getByRole('button', { name: b, exact: true }).count(), 0, `no ${b} button`);
  assert.equal(await page.locator('#flow-source [contenteditable="true"]').count(), 0, 'the editor is read-only');
  await browser.screenshot(page, 'ws-05-viewer-flow');
  await noSeriousViolations(page, 'flow as a viewer');
  await page.goto(`${svc.base}/#/w/default/flows`);
  await page.getByRole('heading', { name: 'Flows', exact: true }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'New flow' }).count(), 0, 'no New flow link');

  // A running execution: no Kill (and no Re-run).
  await page.goto(`${svc.base}/#/w/default/executions/${execId}`);
  await page.locator('#execution-state').getByText('RUNNING').waitFor({ timeout: 60_000 });
  assert.equal(await page.getByRole('button', { name: 'Kill' }).count(), 0, 'no Kill button');
  assert.equal(await page.getByRole('button', { name: 'Re-run' }).count(), 0, 'no Re-run button');

  await page.goto(`${svc.base}/#/w/default/files?namespace=team.viewer&path=notes.txt`);
  await page.locator('#file-text').getByText('read me').waitFor();
  assert.equal(await page.locator('#file-text').getAttribute('contenteditable'), 'false', 'read-only for a viewer');
  for (const b of ['Save file', 'Delete file', 'Upload']) assert.equal(await page.getByRole('button', { name: b }).count(), 0, `no ${b} button`);

  await page.goto(`${svc.base}/#/w/default/secrets`);
  await page.locator('#secrets-table tr[data-secret="API_TOKEN"]').waitFor();
  await page.locator('#secrets-admin-only').waitFor();
  assert.equal(await page.getByRole('button', { name: /Set secret|Delete secret/ }).count(), 0, 'no Set or Delete');
  await browser.screenshot(page, 'ws-06-viewer-secrets');
  await noSeriousViolations(page, 'secrets as a viewer');

  // An administration screen opened by its address says it needs the role.
  await page.goto(`${svc.base}/#/groups`);
  await page.getByText('This screen needs the platform_admin role.').waitFor();

  await ok('POST', `/workflows/v1/default/executions/${execId}/kill`);
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
  assert.deepEqual(adm.errors, [], 'no console errors on the administrator page');
});
