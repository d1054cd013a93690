// Smaller edge points of issue 10: /metrics names that pass promtool's naming rules, a CSP with
// frame-ancestors on the queue dashboard, object-src 'none' in the console's CSP, and the webhook
// key (a path segment, the route's only credential) redacted from the access log; GET /api/me
// through fastify's compiled serializer (issue 11's figure is bench/session-check.ts).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from './helpers/app.js';
import { launchBrowser } from './helpers/browser.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { CONTENT_SECURITY_POLICY } from '../src/api/routes/ui.js';
import { compiledSerializer } from '../src/api/serializers.js';
import { userSchema } from '../src/api/schemas.js';
import { namingProblems } from './helpers/prometheus.js';

let t: TestApp;
let admin: Admin;
const KEY = 'k3y-0f-the-webhook-sekrit-0123456789';

before(async () => {
  t = await startTestApp({ SVC_WORKFLOW__WEBHOOKS_ENABLED: 'true', SVC_LOG__FILTER: 'info' });
  admin = await signInAdmin(t);
  const flow = `id: hooked\nnamespace: company.edge\ntasks:\n  - id: a\n    type: log\n    message: hi\ntriggers:\n  - id: hook\n    type: webhook\n    key: ${KEY}\n`;
  const saved = await admin.browser.request('POST', '/workflows/v1/default/flows', flow, { headers: { 'content-type': 'application/x-yaml' } });
  assert.equal(saved.statusCode, 201, saved.body);
});
after(async () => { await t.close(); });

test('/metrics names follow Prometheus naming (no gauge named *_total)', async () => {
  await t.app.inject({ method: 'GET', url: '/healthz' });
  const res = await t.app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(namingProblems(res.body), []);
  assert.match(res.body, /^# TYPE svc_nodejs_active_handles gauge$/m, 'the per-type gauge stays');
  assert.match(res.body, /^# TYPE svc_http_requests_total counter$/m);
  // the rule itself catches what prom-client used to publish
  assert.deepEqual(namingProblems('# TYPE svc_nodejs_active_handles_total gauge'), ['svc_nodejs_active_handles_total: non-counter metrics should not have "_total" suffix']);
});

test('the queue dashboard answers with a CSP that forbids framing and plugins', async () => {
  for (const url of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/images/logo.svg']) {
    const res = await admin.browser.get(url);
    assert.equal(res.statusCode, 200, url);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /frame-ancestors 'none'/, url);
    assert.match(csp, /object-src 'none'/, url);
    assert.match(csp, /script-src 'self'(;|$)/, url);
    assert.equal(res.headers['x-frame-options'], 'DENY');
  }
});

test('the queue dashboard still renders in Chromium under that CSP; the one refusal is its Google Fonts stylesheet', async () => {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const b = await launchBrowser();
  try {
    const { context, page, errors } = await b.newPage();
    await context.addCookies([...admin.browser.cookies].map(([name, value]) => ({ name, value, url: origin })));
    await page.goto(`${origin}/admin/queues`);
    await page.getByText('svc queues').first().waitFor();
    await page.getByText('executions').first().waitFor();
    assert.deepEqual(errors.filter((e) => !/fonts\.googleapis\.com/.test(e)), []);
  } finally { await b.close(); }
});

test("the console's CSP has object-src 'none'", async () => {
  assert.match(CONTENT_SECURITY_POLICY, /(^|; )object-src 'none'(;|$)/);
  const res = await t.app.inject({ method: 'GET', url: '/' });
  assert.equal(res.headers['content-security-policy'], CONTENT_SECURITY_POLICY);
});

test('the webhook key never reaches the access log, whatever the answer', async () => {
  const base = '/workflows/v1/default/executions/webhook/company.edge/hooked';
  assert.equal((await t.app.inject({ method: 'POST', url: `${base}/${KEY}`, payload: { a: 1 } })).statusCode, 201);
  assert.equal((await t.app.inject({ method: 'POST', url: `${base}/${KEY}x?k=${KEY}` })).statusCode, 404);
  assert.equal((await t.app.inject({ method: 'GET', url: `${base}/${KEY}` })).statusCode, 404);
  await new Promise((r) => setImmediate(r));
  const lines = t.logs().split('\n').filter((l) => l.includes('request completed') && l.includes('/executions/webhook/'));
  assert.ok(lines.length >= 3, t.logs().slice(-2000));
  for (const l of lines) assert.match(JSON.parse(l).url, /\/company\.edge\/hooked\/\[redacted\]$/);
  assert.ok(!t.logs().includes(KEY.slice(0, 20)), 'no part of the key in any log line');
});

test('GET /api/me through the compiled serializer: the documented shape, nothing more', async () => {
  const me = await admin.browser.get('/api/me');
  assert.equal(me.statusCode, 200, me.body);
  const body = me.json();
  assert.deepEqual(Object.keys(body).sort(), ['groups', 'platform_roles', 'user', 'workspaces']);
  assert.deepEqual(Object.keys(body.user).sort(), ['email', 'id', 'is_local', 'name', 'sub']);
  assert.equal(body.user.email, 'admin@example.test');
  assert.equal(body.user.sub, null);
  assert.deepEqual(body.platform_roles, ['platform_admin']);
  assert.deepEqual(body.workspaces.map((w: { slug: string; role: string }) => [w.slug, w.role]), [['default', 'ws_admin']]);
  assert.ok(body.workspaces[0].permissions.includes('workflow:use_secrets'));
  // unknown fields never leave: the serializer writes the declared properties only
  const write = compiledSerializer({ schema: userSchema, method: 'GET', url: '/api/me', httpStatus: '200' });
  const out = JSON.parse(write({ id: 'u1', email: 'a@b', name: null, sub: 's', is_local: true, password_hash: '$argon2id$secret' }));
  assert.deepEqual(out, { id: 'u1', email: 'a@b', name: null, sub: 's', is_local: true });
});
