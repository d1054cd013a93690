// The flow editor's completion, typed as a user in Debian's Chromium against a real `svc serve`:
// `type:` offers the task types of the flow model (from GET .../flows/schema, the model's JSON
// Schema), a key offers the properties of the task type at the cursor and not those it already
// has or another type's, and choosing an option inserts it; the flow so written validates.
// axe-core; screenshots to test-results/ui-flow-editor-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';
import { flowJsonSchema } from '../src/workflows/flow-schema.js';

let browser: TestBrowser; let svc: Svc;
before(async () => {
  svc = await startSvc({ SVC_ENGINES__PROVISIONER: 'none' });
  browser = await launchBrowser();
});
after(async () => { await browser?.close(); await svc?.close(); });

// The flow the test types, line by line; `type:` of the second task is completed.
const TYPED = ['id: waits', 'namespace: team.console', 'tasks:', '  - id: greet', '    type: log', '    message: hello', '  - id: pause'];
const EXPECTED = `${TYPED.join('\n')}\n    type: sleep\n    duration: PT1S`;

test('flow editor: task types and the properties of the task at the cursor are offered and inserted', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base, undefined, '#/w/default/flows/new');
  await page.getByRole('heading', { name: 'New flow' }).waitFor();
  // The shell moves focus to a screen's heading once the screen's chunk arrived: after that, or it
  // would take the focus from the editor clicked below.
  await page.waitForFunction(() => document.activeElement?.matches('#main h1'));
  // The served schema is the model's.
  const served = await page.evaluate(async () => (await fetch('/workflows/v1/default/flows/schema')).json());
  assert.deepEqual(served, flowJsonSchema());

  const content = page.locator('#flow-source');
  const options = page.locator('[data-editor=flow-source] .cm-tooltip-autocomplete li');
  const labels = async () => options.locator('.cm-completionLabel').allInnerTexts();
  // A new line: Enter, then the editor's own indentation is selected (Shift+Home), for the line
  // typed next to replace it.
  const newLine = async () => {
    await page.keyboard.press('Enter');
    await page.keyboard.press('Shift+Home');
  };
  // Enter takes the offered option, as a person does who reads the list first: CodeMirror ignores
  // an Enter within its interactionDelay (75 ms) of the list opening or changing (a guard against
  // taking an option while typing fast), and a test that presses at once got a new line instead.
  const accept = async () => {
    await page.waitForTimeout(100);
    await page.keyboard.press('Enter');
  };

  // Typed key by key over the starter source (selected), as a user would; a `type: lo` is
  // completed with Enter (the option list is then open), the other lines end where nothing is offered.
  await content.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  for (const [n, line] of TYPED.entries()) {
    if (n > 0) await newLine();
    if (line.endsWith('type: log')) {
      await page.keyboard.type(line.slice(0, -1));
      await options.first().waitFor();
      await options.getByText('parallel').waitFor({ state: 'detached' });
      assert.deepEqual(await labels(), ['log']);
      await accept();
    } else {
      await page.keyboard.type(line);
    }
  }
  assert.equal(await content.innerText(), TYPED.join('\n'));

  // `type: ` offers every core task type.
  await newLine();
  await page.keyboard.type('    type: ');
  await options.first().waitFor();
  assert.deepEqual((await labels()).sort(), ['fail', 'foreach', 'if', 'log', 'output', 'parallel', 'script', 'sequential', 'sleep']);
  await browser.screenshot(page, 'flow-editor-01-types');
  await page.keyboard.type('sle');
  await options.getByText('fail').waitFor({ state: 'detached' });
  assert.deepEqual(await labels(), ['sleep']);
  await accept();
  await options.first().waitFor({ state: 'detached' });
  assert.match(await content.innerText(), /type: sleep$/);

  // On the next line, the keys of a sleep task not yet written; not a log task's `message`.
  await newLine();
  await page.keyboard.type('    d');
  await options.first().waitFor();
  const keys = await labels();
  assert.ok(keys.includes('duration') && keys.includes('description'), `sleep keys offered: ${keys.join(' ')}`);
  assert.ok(!keys.includes('message') && !keys.includes('id') && !keys.includes('type'), `no foreign or present key: ${keys.join(' ')}`);
  await page.keyboard.type('ur');
  await options.getByText('description').waitFor({ state: 'detached' });
  assert.deepEqual(await labels(), ['duration']);
  await browser.screenshot(page, 'flow-editor-02-keys');
  await accept();
  await options.first().waitFor({ state: 'detached' });
  await page.keyboard.type('PT1S');
  // Every key arrived, in its place: the document is the flow typed.
  assert.equal(await content.innerText(), EXPECTED);
  // The flow so written is valid.
  await page.locator('#problems-summary').getByText('No problems.').waitFor();
  // (axe runs with the options closed: it takes CodeMirror's option list, a listbox the editor
  // drives with aria-activedescendant, for a scrolling region the keyboard cannot reach; docs/ui.md)
  assert.deepEqual(await seriousViolations(page), [], 'flow editor: no serious accessibility violation');
  await page.getByRole('button', { name: 'Create flow' }).click();
  await page.getByRole('heading', { name: 'team.console.waits' }).waitFor();
  assert.deepEqual(errors, []);
});
