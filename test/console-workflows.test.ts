// The console's workflow screens, walked as a user in Debian's Chromium against a real `svc serve`
// with its worker, the local_container runner on podman and an S3 server: write a flow with a
// mistake and see it marked on its line, fix it, save, compare revisions, see its topology, run it
// with inputs and watch its logs arrive, kill a long run, browse and download a run's files, and
// filter the executions list through the URL. axe-core on each screen; screenshots to
// test-results/ui-wf-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { downloadText, pasteInto, signIn, startSvc, type Svc } from './helpers/console.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';
import { ensurePodman } from './helpers/podman.js';

let browser: TestBrowser; let svc: Svc; let s3: TestS3;

before(async () => {
  const host = await ensurePodman();
  s3 = await startS3();
  svc = await startSvc({
    ...storageEnv(s3),
    SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__KILL_POLL_MS: '100',
    SVC_WORKFLOW__CONTAINER_RUNNER: 'local_container', SVC_ENGINES__LOCAL_CONTAINER__HOST: host,
    SVC_WORKFLOW__PLUGIN_HOST__IMAGE: 'localhost/svc-plugin-host:unused',
    SVC_WORKFLOW__PLUGIN_CONFIGURATIONS: '[{type="script", values={"allowed-images"=["localhost/svc-test:*"]}}]',
  });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); await s3?.stop(); });

const setSource = (page: Page, text: string) => pasteInto(page, '#flow-source', text);

async function noSeriousViolations(page: Page, screen: string): Promise<void> {
  assert.deepEqual(await seriousViolations(page), [], `${screen}: no serious accessibility violation`);
}

const BROKEN = `id: greet
namespace: team.console
inputs:
  - id: name
    type: STRING
    required: true
  - id: times
    type: INT
    defaults: 1
tasks:
  - id: hello
    type: log
  - id: pause
    type: sleep
    duration: PT2S
  - id: bye
    type: log
    message: "done after {{ inputs.times }}"
`;
const FIXED = BROKEN.replace('    type: log\n  - id: pause', '    type: log\n    message: "hello {{ inputs.name }}"\n  - id: pause');

test('write a flow with a mistake, fix it, save, revisions, topology, run with inputs, live logs', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Flows' }).click();
  await page.getByRole('heading', { name: 'Flows', exact: true }).waitFor();
  await page.locator('#no-flows').waitFor();
  await noSeriousViolations(page, 'flows list');

  await page.getByRole('link', { name: 'New flow' }).click();
  await page.getByRole('heading', { name: 'New flow' }).waitFor();
  await page.locator('#flow-source').waitFor();
  await page.getByText('No problems.').waitFor();

  // The mistake: a log task without its message. The server's validation marks line 11.
  await setSource(page, BROKEN);
  const problems = page.locator('#problems');
  await problems.getByText('tasks[0].message').waitFor();
  assert.match(await problems.innerText(), /Line 11: tasks\[0\]\.message required/);
  assert.equal(await page.locator('#problems-summary').innerText(), '1 problem.');
  const marked = page.locator('.cm-line', { has: page.locator('.cm-lintRange-error') });
  await marked.first().waitFor();
  assert.match(await marked.first().innerText(), /- id: hello/);
  await browser.screenshot(page, 'wf-01-flow-mistake');
  await noSeriousViolations(page, 'flow editor');

  await setSource(page, FIXED);
  await page.getByText('No problems.').waitFor();
  assert.equal(await page.locator('.cm-lintRange-error').count(), 0);
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('status').filter({ hasText: 'Created flow team.console.greet (revision 1).' }).waitFor();
  await page.getByRole('heading', { name: 'team.console.greet' }).waitFor();
  assert.match(page.url(), /#\/w\/default\/flows\/team\.console\/greet$/);

  // A second revision, then the diff between them.
  await page.getByText('No problems.').waitFor();
  await setSource(page, FIXED.replace('done after', 'finished after'));
  await page.getByText('unsaved changes').waitFor();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved revision 2.' }).waitFor();
  await page.getByRole('link', { name: 'Revisions' }).click();
  await page.locator('#revisions-table tbody tr').nth(1).waitFor();
  assert.equal(await page.locator('#revisions-table tbody tr').count(), 2);
  await page.locator('#revision-diff').waitFor();
  await page.locator('.cm-deletedChunk').getByText('done after').waitFor();
  assert.match(await page.locator('.cm-changedLine').first().innerText(), /finished after/);
  await browser.screenshot(page, 'wf-02-revisions-diff');
  await noSeriousViolations(page, 'revisions');

  await page.getByRole('link', { name: 'Topology' }).click();
  const topo = page.locator('#topology');
  await topo.waitFor();
  assert.match(await topo.innerText(), /hello\s+log[\s\S]*pause\s+sleep[\s\S]*bye\s+log/);
  await noSeriousViolations(page, 'topology');

  // Run with inputs from the generated form: the required one is asked for.
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByLabel('name (required)').fill('Ana');
  assert.equal(await page.getByLabel('times').inputValue(), '1');
  await page.getByLabel('times').fill('3');
  await browser.screenshot(page, 'wf-03-run-form');
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('heading', { name: /^Execution / }).waitFor();
  // Live: the first task's line is shown while the execution is still running (it sleeps 2 s).
  const logs = page.locator('#logs');
  await logs.getByText('hello Ana').waitFor();
  await page.locator('#execution-state').getByText('RUNNING').waitFor();
  await browser.screenshot(page, 'wf-04-execution-running');
  await page.locator('#execution-state').getByText('SUCCESS').waitFor();
  await logs.getByText('finished after 3').waitFor();
  assert.match(await page.locator('#execution-inputs').innerText(), /"name": "Ana"[\s\S]*"times": 3/);
  assert.match(await page.locator('#task-runs').innerText(), /hello\s+SUCCESS[\s\S]*pause\s+SUCCESS[\s\S]*bye\s+SUCCESS/);
  await page.getByRole('button', { name: 'Re-run' }).waitFor();
  await browser.screenshot(page, 'wf-05-execution-done');
  await noSeriousViolations(page, 'execution');

  // Log filters: level and text.
  await page.getByLabel('Search').fill('hello');
  assert.equal(await logs.locator('.log-line').count(), 1);
  await page.getByLabel('Search').fill('');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('kill a long run; executions filtered through the URL', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.goto(`${svc.base}/#/w/default/flows/new`);
  await page.locator('#flow-source').waitFor();
  await setSource(page, `id: long
namespace: team.console
tasks:
  - id: wait
    type: sleep
    duration: PT10M
`);
  await page.getByText('No problems.').waitFor();
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('heading', { name: 'team.console.long' }).waitFor();
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('button', { name: 'Start' }).click();
  await page.locator('#execution-state').getByText('RUNNING').waitFor();
  page.once('dialog', (d) => { assert.match(d.message(), /^Kill execution/); void d.accept(); });
  await page.getByRole('button', { name: 'Kill' }).click();
  await page.getByRole('status').filter({ hasText: /Kill requested: the execution is (KILLING|KILLED)\./ }).waitFor();
  await page.locator('#execution-state').getByText('KILLED').waitFor();
  assert.match(await page.locator('#task-runs').innerText(), /wait\s+killed\s+KILLED/, 'the task run shows its state and why');
  await browser.screenshot(page, 'wf-06-killed');

  // The executions list, filtered through its URL and through its form.
  await page.goto(`${svc.base}/#/w/default/executions?state=KILLED`);
  const rows = page.locator('#executions-table tbody tr');
  await rows.first().waitFor();
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().innerText(), /team\.console\.long[\s\S]*KILLED/);
  assert.equal(await page.getByLabel('State').inputValue(), 'KILLED');
  await page.getByLabel('State').selectOption('');
  await page.getByLabel('Flow id').fill('greet');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/executions\?flowId=greet$/);
  await rows.filter({ hasText: 'team.console.greet' }).first().waitFor();
  assert.equal(await rows.count(), 1);
  await browser.screenshot(page, 'wf-08-executions');
  await noSeriousViolations(page, 'executions list');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});

test('a script task writes a file: the execution page lists it and the link downloads it', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  // Script tasks need the workspace switch (an administrator's API call, not a console screen yet).
  const csrf = (await page.context().cookies()).find((c) => c.name === 'svc_csrf')!.value;
  assert.equal(await page.evaluate(async (token) => (await fetch('/api/workspaces/default', {
    method: 'PATCH', headers: { 'content-type': 'application/json', 'x-svc-csrf': token }, body: JSON.stringify({ workflow_containers: true }),
  })).status, csrf), 200);

  // A script task writes a file; the execution page lists it and the link downloads it.
  await page.goto(`${svc.base}/#/w/default/flows/new`);
  await page.locator('#flow-source').waitFor();
  await setSource(page, `id: files
namespace: team.console
tasks:
  - id: write
    type: script
    image: localhost/svc-test:1
    outputFiles: ["report.txt"]
    commands:
      - echo "report for {{ execution.id }}" > report.txt
`);
  await page.getByText('No problems.').waitFor();
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('heading', { name: 'team.console.files' }).waitFor();
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('button', { name: 'Start' }).click();
  await page.locator('#execution-state').getByText(/SUCCESS|FAILED/).waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('#execution-state').innerText(), 'SUCCESS', await page.locator('#main').innerText());
  const link = page.locator('#execution-files').getByRole('link', { name: /report\.txt$/ });
  await link.waitFor();
  const body = (await downloadText(page, link)).text;
  assert.match(body, /^report for [0-9a-f-]{36}\n$/);
  await browser.screenshot(page, 'wf-07-files');

  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
