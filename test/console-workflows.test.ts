// The console's workflow screens, walked as a user in Debian's Chromium against a real `svc serve`
// with its worker, the local_container runner on podman and an S3 server: write a flow with a
// mistake and see it marked on its line (a problem jumps to its line; a misspelt key is marked on
// itself with "did you mean"; the docs of the task under the cursor), fix it, create and save
// (Save at the top, Ctrl+S; unsaved edits survive the flow's tabs and leaving asks first), compare
// revisions, see its topology graph, run it with inputs and watch its logs arrive in their tab,
// its Gantt and its graph with states; kill a long run; foreach runs named by their value; page
// and filter the executions list; turn on the containers switch a script task needs, then browse
// and download a run's files. axe-core on each screen; screenshots to test-results/ui-wf-*.png.
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
  // A problem is a button that moves the cursor to its line; the docs panel follows the cursor.
  await page.getByRole('button', { name: 'Go to line 11' }).click();
  assert.match(await page.locator('#flow-source .cm-activeLine').innerText(), /- id: hello/);
  await page.getByRole('heading', { name: 'Task type log' }).waitFor();
  assert.match(await page.locator('#flow-docs [data-key="message"]').innerText(), /message\s+.*required/);
  await browser.screenshot(page, 'wf-01-flow-mistake');
  await noSeriousViolations(page, 'flow editor');

  // A misspelt key: marked on itself, with the key it should be.
  await setSource(page, BROKEN.replace('    type: log\n  - id: pause', '    type: log\n    mesage: hi\n  - id: pause'));
  await problems.getByText('did you mean "message"?').waitFor();
  assert.match(await problems.innerText(), /Line 13: tasks\[0\]\.mesage unknown key "mesage": did you mean "message"\?/);
  assert.ok((await marked.allInnerTexts()).some((t) => /mesage: hi/.test(t)), 'the misspelt key\'s own line is marked');

  await setSource(page, FIXED);
  await page.getByText('No problems.').waitFor();
  assert.equal(await page.locator('.cm-lintRange-error').count(), 0);
  // Save sits at the top of the page.
  assert.ok(await page.getByRole('button', { name: 'Create flow' }).evaluate((b) => b.getBoundingClientRect().top < (document.querySelector('[data-editor="flow-source"]') as HTMLElement).getBoundingClientRect().top), 'Create flow is above the editor');
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('status').filter({ hasText: 'Created flow team.console.greet (revision 1).' }).waitFor();
  await page.getByRole('heading', { name: 'team.console.greet' }).waitFor();
  assert.match(page.url(), /#\/w\/default\/flows\/team\.console\/greet$/);

  // A second revision, then the diff between them. Unsaved, the edit survives the flow's own
  // tabs; leaving the flow asks first (and staying keeps it); Ctrl+S saves.
  await page.getByText('No problems.').waitFor();
  await setSource(page, FIXED.replace('done after', 'finished after'));
  await page.getByText('unsaved changes').waitFor();
  await page.getByRole('navigation', { name: 'Flow views' }).getByRole('link', { name: 'Topology' }).click();
  await page.locator('#topology').getByText('bye').waitFor();
  await page.getByRole('navigation', { name: 'Flow views' }).getByRole('link', { name: 'Editor' }).click();
  await page.getByText('unsaved changes').waitFor();
  await page.locator('#flow-source').getByText('finished after').waitFor();
  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); void d.dismiss(); });
  await page.getByRole('navigation', { name: 'Workspace default' }).getByRole('link', { name: 'Flows' }).click();
  assert.match(asked, /team\.console\.greet has unsaved changes/);
  assert.match(page.url(), /flows\/team\.console\/greet$/, 'staying keeps the page');
  await page.locator('#flow-source').getByText('finished after').waitFor();
  await page.locator('#flow-source').click();
  await page.keyboard.press('Control+s');
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
  // Drawn as a graph: the tasks side by side, left to right.
  const xs = await topo.locator(':scope > li > .graph-box').evaluateAll((b) => b.map((x) => x.getBoundingClientRect().left));
  assert.ok(xs[0] < xs[1] && xs[1] < xs[2], `left to right: ${xs.join(', ')}`);
  await noSeriousViolations(page, 'topology');

  // Run with inputs from the generated form: the required one is asked for.
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByLabel('name (required)').fill('Ana');
  assert.equal(await page.getByLabel('times').inputValue(), '1');
  await page.getByLabel('times').fill('3');
  await browser.screenshot(page, 'wf-03-run-form');
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('heading', { name: /^Execution / }).waitFor();
  // Live, in the Logs tab: the first task's line is shown while the execution is still running (it sleeps 2 s).
  await page.getByRole('tab', { name: 'Logs' }).click();
  await page.waitForURL(/\?tab=logs$/);
  const logs = page.locator('#logs');
  await logs.getByText('hello Ana').waitFor();
  await page.locator('#execution-state').getByText('RUNNING').waitFor();
  await browser.screenshot(page, 'wf-04-execution-running');
  await page.locator('#execution-state').getByText('SUCCESS').waitFor();
  await logs.getByText('finished after 3').waitFor();
  assert.match(await logs.locator('.log-line time').first().innerText(), /^\d\d:\d\d:\d\d\.\d{3}$/, 'log times to the millisecond');
  // Log filters: level and text.
  await page.getByLabel('Search').fill('hello');
  assert.equal(await logs.locator('.log-line').count(), 1);
  await page.getByLabel('Search').fill('');
  await noSeriousViolations(page, 'execution logs');

  // The Gantt: a bar per task run on a time axis, its details (to the millisecond) on hover.
  await page.getByRole('tab', { name: 'Gantt' }).click();
  const bars = page.locator('#gantt .gantt-bar');
  assert.equal(await bars.count(), 3);
  const lefts = await bars.evaluateAll((b) => b.map((x) => x.getBoundingClientRect().left));
  assert.ok(lefts[0] < lefts[1] && lefts[1] < lefts[2], 'later tasks start further right');
  assert.ok((await page.locator('#gantt .gantt-tick').count()) >= 2, 'a time axis');
  await bars.nth(1).hover();
  assert.match(await page.locator('#gantt-tip').innerText(), /pause\s+SUCCESS attempt 1[\s\S]*Started .*\d\d:\d\d:\d\d[\s\S]*\.\d{3}/);
  assert.match(await page.locator('#task-runs').innerText(), /hello\s+SUCCESS[\s\S]*pause\s+SUCCESS[\s\S]*bye\s+SUCCESS/);
  await browser.screenshot(page, 'wf-05-execution-gantt');
  await noSeriousViolations(page, 'execution gantt');
  // The topology of the revision that ran, each task with its state; inputs and outputs.
  await page.getByRole('tab', { name: 'Topology' }).click();
  await page.locator('#topology li[data-task="pause"].node-success').waitFor();
  assert.match(await page.locator('#topology').innerText(), /hello\s+log\s+SUCCESS[\s\S]*bye\s+log\s+SUCCESS/);
  await browser.screenshot(page, 'wf-05b-execution-topology');
  await noSeriousViolations(page, 'execution topology');
  await page.getByRole('tab', { name: 'Outputs' }).click();
  assert.match(await page.locator('#execution-inputs').innerText(), /"name": "Ana"[\s\S]*"times": 3/);
  await page.getByRole('button', { name: 'Re-run' }).waitFor();
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

  // foreach iterations are named by their value, in the Gantt and the task runs.
  await page.goto(`${svc.base}/#/w/default/flows/new`);
  await page.locator('#flow-source').waitFor();
  await setSource(page, `id: regions
namespace: team.console
tasks:
  - id: each
    type: foreach
    values: ["eu", "us"]
    tasks:
      - id: crunch
        type: log
        message: "crunching {{ taskrun.value }}"
`);
  await page.getByText('No problems.').waitFor();
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('heading', { name: 'team.console.regions' }).waitFor();
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('button', { name: 'Start' }).click();
  await page.locator('#execution-state').getByText('SUCCESS').waitFor({ timeout: 60_000 });
  await page.locator('#gantt li[data-run="crunch · us"]').waitFor();
  assert.deepEqual((await page.locator('#gantt li .gantt-label').allInnerTexts()).filter((l) => l.startsWith('crunch')).sort(), ['crunch · eu', 'crunch · us']);
  assert.match(await page.locator('#task-runs').innerText(), /crunch · eu/);
  await page.getByRole('tab', { name: 'Topology' }).click();
  assert.match(await page.locator('#topology li[data-task="crunch"]').innerText(), /SUCCESS\s+2 runs/);

  // The executions list: pages of 50 with Older and Newest; filtered through its URL and its form.
  await page.goto(`${svc.base}/#/w/default/executions`);
  await page.locator('#executions-table tbody tr').first().waitFor();
  assert.equal(await page.locator('#older-page').count(), 0, 'one page only');
  const first = page.locator('#executions-table tbody tr').first();
  assert.match(await first.innerText(), /team\.console\.regions[\s\S]*SUCCESS/);
  await first.getByRole('button', { name: /^Copy execution id/ }).click();
  await page.getByRole('status').filter({ hasText: 'Copied execution id.' }).waitFor();
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
  // A script task writes a file; the execution page lists it and the link downloads it. The task
  // needs the workspace's containers switch: the editor says so, and its ws_admin turns it on.
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
  const sw = page.locator('#flow-switches [data-switch="workflow_containers"]');
  await sw.waitFor();
  assert.match(await sw.innerText(), /needs the workflow_containers switch, which is off in default/);
  await noSeriousViolations(page, 'flow editor with a switch off');
  await browser.screenshot(page, 'wf-07a-switch');
  await sw.getByRole('button', { name: 'Turn on workflow_containers' }).click();
  await page.getByRole('status').filter({ hasText: 'Turned on workflow_containers in default.' }).waitFor();
  assert.equal(await page.locator('#flow-switches').count(), 0);
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('heading', { name: 'team.console.files' }).waitFor();
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('button', { name: 'Start' }).click();
  await page.locator('#execution-state').getByText(/SUCCESS|FAILED/).waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('#execution-state').innerText(), 'SUCCESS', await page.locator('#main').innerText());
  await page.getByRole('tab', { name: 'Files' }).click();
  const link = page.locator('#execution-files').getByRole('link', { name: /report\.txt$/ });
  await link.waitFor();
  const body = (await downloadText(page, link)).text;
  assert.match(body, /^report for [0-9a-f-]{36}\n$/);
  await browser.screenshot(page, 'wf-07-files');

  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
