// The console on a narrow window (390 px) in the dark theme: the theme button switches and keeps
// the choice across a reload, nothing overflows the viewport sideways, and axe-core finds no
// serious violation (contrast included) on home and the flows list. Screenshots: ui-narrow-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { seriousViolations } from './helpers/a11y.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';

let browser: TestBrowser; let svc: Svc;
before(async () => { svc = await startSvc(); browser = await launchBrowser({ viewport: { width: 390, height: 844 } }); });
after(async () => { await browser?.close(); await svc?.close(); });

test('narrow window, dark theme kept across a reload, no horizontal overflow, no serious violation', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, svc.base);
  await page.locator('#signed-in-as').waitFor();
  await page.getByRole('button', { name: /^Theme: auto/ }).click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  await page.reload();
  await page.locator('#signed-in-as').waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark', 'the choice is kept');
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  const wide = await page.evaluate(() => [...document.querySelectorAll('body *')].filter((e) => !e.closest('.table-wrap') && e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).map((e) => `${e.tagName}.${e.className}#${e.id}`).slice(0, 8));
  assert.equal(await overflow(), 0, `home fits the narrow window: ${wide.join(' ')}`);
  assert.deepEqual(await seriousViolations(page), [], 'home, dark: no serious accessibility violation');
  await browser.screenshot(page, 'narrow-01-home-dark');
  await page.goto(`${svc.base}/#/w/default/flows`);
  await page.getByRole('heading', { name: 'Flows', exact: true }).waitFor();
  assert.equal(await overflow(), 0, 'flows fits the narrow window');
  assert.deepEqual(await seriousViolations(page), [], 'flows, dark: no serious accessibility violation');
  await browser.screenshot(page, 'narrow-02-flows-dark');
  assert.deepEqual(errors, []);
});
