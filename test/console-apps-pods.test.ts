// The Apps screen with a real app pod, in Debian's Chromium: the service and its apps listener on
// two localhost ports (test/helpers/console-apps.ts), the subprocess launcher running the test's
// own small HTTP program as apps.pod.command (test/helpers/app-pods.ts). Opening a published app
// from the console goes through the ticket and the postMessage secret into the iframe, whose
// page is then the pod's own answer through the apps origin: the app's published source, in run
// mode, without the app cookie. Screenshot: test-results/ui-apps-pod-run.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { launchBrowser, type TestBrowser } from './helpers/browser.js';
import { signIn, startSvc, type Svc } from './helpers/console.js';
import { appsEnv, call, redeemedFrame, storageEnv } from './helpers/console-apps.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { subprocessPods, type SubprocessPods } from './helpers/app-pods.js';
import { createPodLauncher, podManager } from '../src/apps/pod-runtime.js';

const SOURCE = 'sales by region, served by the pod\n';

let browser: TestBrowser; let s3: TestS3; let svc: Svc; let pods: SubprocessPods;
let base: string; let apps: string;
before(async () => {
  s3 = await startS3();
  pods = await subprocessPods();
  const o = await appsEnv();
  ({ base, apps } = o);
  svc = await startSvc({ ...storageEnv(s3), ...o.env, ...pods.env }, o.port);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  if (svc) {
    const s = svc.server.services;
    await podManager(s).stopAll(createPodLauncher(s.config, s.logging.module('test'))!);
    await svc.close();
  }
  await s3?.stop();
  if (pods) await rm(pods.root, { recursive: true, force: true });
});

test('Open in the console shows the pod\'s page in the iframe, reached through the ticket flow', async () => {
  const { page, errors } = await browser.newPage();
  await signIn(page, base);
  const created = await call(page, 'POST', '/api/workspaces/default/apps', { name: 'pod-report', description: 'Served by a subprocess pod', source: SOURCE });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const id = String(created.json!.id);
  assert.equal((await call(page, 'POST', `/api/workspaces/default/apps/${id}/publish`)).status, 201);

  await page.goto(`${base}/#/w/default/apps`);
  await page.locator('#apps-table tr[data-app="pod-report"]').getByRole('link', { name: 'Open pod-report' }).click();
  const { frame, session } = await redeemedFrame(page, apps);
  assert.deepEqual(session.body, { workspace: 'default', app: id, version: 1, mode: 'run' });
  // The frame's document is the pod's answer to GET / (the program echoes what it was given),
  // launched by the app-pods job and waited for by the apps origin.
  // (Chromium shows JSON with a "Pretty-print" control before the text.)
  const text = await frame.evaluate(() => document.body.innerText);
  const seen = JSON.parse(text.slice(text.indexOf('{'))) as { url: string; source: string; env: Record<string, string>; headers: Record<string, string> };
  assert.equal(seen.url, '/');
  assert.equal(seen.source, SOURCE, 'the published version');
  assert.equal(seen.env.SVC_APP_MODE, 'run');
  assert.doesNotMatch(seen.headers.cookie ?? '', /__Host-svc_app/, 'the pod never sees the app cookie');
  // On one host the browser also sends the service's cookies to the apps listener (cookies are
  // not isolated by port); the proxy keeps them from the pod, which runs the author's code.
  const sent = (await page.context().cookies(apps)).map((c) => c.name);
  assert.ok(sent.includes('svc_session') && sent.includes('svc_csrf'), sent.join(', '));
  assert.doesNotMatch(seen.headers.cookie ?? '', /svc_session|svc_csrf/, 'the pod never sees the service\'s session or CSRF cookie');
  // The pod tried to set a cookie of the apps origin's name; the session is still the ticket's.
  const still = await frame.evaluate(async () => (await fetch('/_svc/session')).status);
  assert.equal(still, 200);
  await browser.screenshot(page, 'apps-pod-run');
  assert.deepEqual(errors, [], 'no console errors (CSP violations, exceptions)');
});
