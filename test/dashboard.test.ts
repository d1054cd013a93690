// The queue dashboard at /admin/queues (bull-board) for platform_admin only, its CSRF rule for
// state-changing calls, and queue depth in /metrics.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin, replica, type Admin } from './helpers/workflow.js';
import { QUEUE } from '../src/queue/queues.js';
import { registerQueueMetrics } from '../src/jobs/queue-metrics.js';

let t: TestApp;
let admin: Admin;
let member: Browser;
const MEMBER = { email: 'member@example.test', password: 'member-password-1' };

before(async () => {
  t = await startTestApp();
  admin = await signInAdmin(t);
  const created = await admin.browser.post('/api/users', MEMBER);
  assert.equal(created.statusCode, 201, created.body);
  member = new Browser(t, '198.51.100.201');
  assert.equal((await member.login(MEMBER.email, MEMBER.password)).statusCode, 200);
});
after(async () => { await t.close(); });

describe('access', () => {
  test('anonymous: 401 for the page, its API and its static assets', async () => {
    for (const url of ['/admin/queues', '/admin/queues/', '/admin/queues/api/queues', '/admin/queues/static/images/logo.svg', '/admin/queues/queue/executions']) {
      const res = await t.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 401, url);
      assert.deepEqual(res.json(), { error: 'unauthorized', message: 'sign in required' });
    }
    const put = await t.app.inject({ method: 'PUT', url: `/admin/queues/api/queues/${QUEUE.maintenance}/pause` });
    assert.equal(put.statusCode, 401);
  });

  test('signed in without platform_admin: 403', async () => {
    for (const url of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/images/logo.svg']) {
      const res = await member.get(url);
      assert.equal(res.statusCode, 403, url);
      assert.deepEqual(res.json(), { error: 'forbidden', message: 'requires platform_admin' });
    }
    assert.equal((await member.put(`/admin/queues/api/queues/${QUEUE.maintenance}/pause`)).statusCode, 403);
  });

  test('platform_admin: the HTML page, its static assets, and the JSON API listing every queue', async () => {
    const page = await admin.browser.get('/admin/queues');
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /svc queues/);
    assert.match(page.body, /<base href="\/admin\/queues\/"/, "assets resolve under the base path");
    // Issue 28: no font link to another origin (the CSP refused it: an error in the browser's
    // console on every visit), and a way back to the console in the page's own configuration.
    assert.doesNotMatch(page.body, /fonts\.googleapis\.com|fonts\.gstatic\.com/);
    const ui = JSON.parse(/<script id="__UI_CONFIG__" type="application\/json">([^<]*)<\/script>/.exec(page.body)![1]);
    assert.deepEqual(ui.miscLinks, [{ text: 'Back to the svc console', url: '/' }]);
    assert.equal((await admin.browser.get('/admin/queues/queue/executions')).statusCode, 200, 'client-side routes serve the page');
    const asset = await admin.browser.get('/admin/queues/static/images/logo.svg');
    assert.equal(asset.statusCode, 200);
    const api = await admin.browser.get('/admin/queues/api/queues');
    assert.equal(api.statusCode, 200, api.body);
    const names = (api.json().queues as Array<{ name: string }>).map((q) => q.name).sort();
    assert.deepEqual(names, Object.values(QUEUE).sort());
  });

  test('decisions on the page and API are recorded in the audit log (static assets are not)', async () => {
    await admin.browser.get('/admin/queues/api/queues');
    await member.get('/admin/queues/api/queues');
    await t.services.audit.flush();
    const rows = await t.services.db.selectFrom('audit_events').select(['action', 'decision', 'actor_id']).where('action', 'like', '% /admin/queues%').execute();
    assert.ok(rows.some((r) => r.action === 'GET /admin/queues/api/queues' && r.decision === 'allow' && r.actor_id === admin.userId));
    assert.ok(rows.some((r) => r.action === 'GET /admin/queues/api/queues' && r.decision === 'deny'));
    assert.ok(!rows.some((r) => r.action.includes('/static/')));
  });
});

describe('state-changing dashboard calls (bull-board does not send our CSRF header)', () => {
  const pause = `/admin/queues/api/queues/${QUEUE.maintenance}/pause`;
  const resume = `/admin/queues/api/queues/${QUEUE.maintenance}/resume`;
  const paused = () => t.services.queues.get(QUEUE.maintenance).isPaused();

  test('no CSRF header and no same-origin evidence: 403, nothing changes', async () => {
    const res = await admin.browser.request('PUT', pause, undefined, { csrf: false });
    assert.equal(res.statusCode, 403);
    assert.match(res.json().message, /cross-origin dashboard call refused/);
    const cross = await admin.browser.request('PUT', pause, undefined, { csrf: false, headers: { 'sec-fetch-site': 'cross-site', origin: 'http://localhost:80' } });
    assert.equal(cross.statusCode, 403, 'Sec-Fetch-Site wins over a matching Origin');
    const otherOrigin = await admin.browser.request('PUT', pause, undefined, { csrf: false, headers: { origin: 'https://evil.example' } });
    assert.equal(otherOrigin.statusCode, 403);
    assert.equal(await paused(), false);
  });

  test('from the dashboard page (Sec-Fetch-Site same-origin, or Origin = Host) or with the CSRF header: allowed', async () => {
    const viaFetchMeta = await admin.browser.request('PUT', pause, undefined, { csrf: false, headers: { 'sec-fetch-site': 'same-origin' } });
    assert.equal(viaFetchMeta.statusCode, 200, viaFetchMeta.body);
    assert.equal(await paused(), true);
    const viaOrigin = await admin.browser.request('PUT', resume, undefined, { csrf: false, headers: { origin: 'http://localhost:80' } });
    assert.equal(viaOrigin.statusCode, 200, viaOrigin.body);
    assert.equal(await paused(), false);
    const viaHeader = await admin.browser.put(pause);
    assert.equal(viaHeader.statusCode, 200);
    assert.equal((await admin.browser.put(resume)).statusCode, 200);
    assert.equal(await paused(), false);
  });

  test('the audit queue is read-only: no adding, pausing or cleaning audit batches from the dashboard', async () => {
    const add = await admin.browser.post(`/admin/queues/api/queues/${QUEUE.audit}/add`, { name: 'batch', data: { id: 'forged', events: [] } });
    assert.equal(add.statusCode, 405, add.body);
    assert.equal((await admin.browser.put(`/admin/queues/api/queues/${QUEUE.audit}/pause`)).statusCode, 405);
    assert.equal((await admin.browser.put(`/admin/queues/api/queues/${QUEUE.audit}/clean/completed`)).statusCode, 405);
    assert.equal(await t.services.queues.get(QUEUE.audit).isPaused(), false);
    assert.equal(await t.services.queues.get(QUEUE.audit).count(), 0);
  });

  test('the global CSRF rule still holds for the rest of the API', async () => {
    const res = await admin.browser.request('POST', '/api/users', { email: 'x@example.test', password: 'long-enough-1' }, { csrf: false, headers: { 'sec-fetch-site': 'same-origin' } });
    assert.equal(res.statusCode, 403);
    assert.match(res.json().message, /CSRF/);
  });
});

describe('queue metrics in /metrics', () => {
  test('depth per queue and state, read from Redis at scrape time', async () => {
    registerQueueMetrics(t.services);
    registerQueueMetrics(t.services); // idempotent
    const q = t.services.queues.get(QUEUE.maintenance);
    await q.add('probe-delayed', {}, { delay: 3_600_000 });
    await q.add('probe-waiting', {});
    await q.add('probe-waiting-2', {});
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /# TYPE svc_queue_jobs gauge/);
    assert.match(res.body, /svc_queue_jobs\{queue="maintenance",state="delayed"\} 1\n/);
    assert.match(res.body, /svc_queue_jobs\{queue="maintenance",state="waiting"\} 2\n/);
    for (const name of Object.values(QUEUE)) {
      for (const state of ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed']) {
        assert.match(res.body, new RegExp(`svc_queue_jobs\\{queue="${name}",state="${state}"\\} \\d+`), `${name} ${state}`);
      }
    }
    assert.match(res.body, /svc_queue_metrics_up 1\n/);
    // latency and failures of the workers (observed by them) are exposed too
    assert.match(res.body, /# TYPE svc_queue_job_wait_seconds histogram/);
    assert.match(res.body, /# TYPE svc_queue_job_failures_total counter/);
    await q.obliterate({ force: true });
  });

  test('Redis not answering: the scrape still answers within about a second, svc_queue_metrics_up 0', { timeout: 20_000 }, async () => {
    const r = replica(t, { config: (c) => { c.redis.url = 'redis://127.0.0.1:1'; return c; } });
    try {
      registerQueueMetrics(r);
      const started = Date.now();
      const text = await r.metrics.registry.metrics();
      assert.ok(Date.now() - started < 3_000);
      assert.match(text, /svc_queue_metrics_up 0\n/);
    } finally {
      r.redis().disconnect();
      await Promise.race([r.close(), new Promise((res) => setTimeout(res, 3_000))]);
    }
  });
});
