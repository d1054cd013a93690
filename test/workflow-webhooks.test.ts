// Webhook triggers: anonymous POST /workflows/v1/{ws}/executions/webhook/{namespace}/{flowId}/{key}
// mounted only with workflow.webhooks_enabled; the key compared in constant time; a wrong key and a
// missing flow or workspace answer the same 404; the body becomes trigger.body.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, saveYaml, executionsOf, type Admin } from './helpers/workflow.js';
import { buildApp } from '../src/api/app.js';
import { matchWebhookKey } from '../src/api/routes/webhooks.js';

const NS = 'company.hooks';
const KEY = 'k3y-0f-the-webhook-0123456789';
const FLOW = `id: hooked
namespace: ${NS}
inputs:
  - id: greeting
    type: STRING
    defaults: hello
tasks:
  - id: a
    type: log
    message: "{{ inputs.greeting }}"
triggers:
  - id: hook
    type: webhook
    key: ${KEY}
  - id: old
    type: webhook
    key: an-old-disabled-key-0123456789
    disabled: true
`;
const url = (ws: string, ns: string, flow: string, key: string) => `/workflows/v1/${ws}/executions/webhook/${ns}/${flow}/${key}`;

describe('webhooks on (workflow.webhooks_enabled = true)', () => {
  let t: TestApp;
  let admin: Admin;
  before(async () => {
    t = await startTestApp({ SVC_WORKFLOW__WEBHOOKS_ENABLED: 'true' });
    admin = await signInAdmin(t);
    const saved = await admin.browser.request('POST', '/workflows/v1/default/flows', FLOW, { headers: { 'content-type': 'application/x-yaml' } });
    assert.equal(saved.statusCode, 201, saved.body);
  });
  after(async () => { await t.close(); });

  test('anonymous POST with the key: 201 {id, state}, an execution with the body as trigger.body and default inputs', async () => {
    const res = await t.app.inject({ method: 'POST', url: url('default', NS, 'hooked', KEY), payload: { order: 42, items: ['a', 'b'] } });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['id', 'state']);
    assert.equal(body.state, 'CREATED');
    const exec = await t.services.db.selectFrom('executions').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.equal(exec.flow_id, 'hooked');
    assert.deepEqual(exec.trigger, { type: 'webhook', id: 'hook', body: { order: 42, items: ['a', 'b'] } });
    assert.deepEqual(exec.inputs, { greeting: 'hello' });
    assert.ok(!JSON.stringify(exec.trigger).includes(KEY), 'the key is not recorded');
    // a viewer of the workspace reads it through the API
    const seen = await admin.browser.get(`/workflows/v1/default/executions/${body.id}`);
    assert.equal(seen.statusCode, 200);
    assert.deepEqual(seen.json().trigger.body, { order: 42, items: ['a', 'b'] });
  });

  test('an empty body, a text body and form fields are accepted', async () => {
    const empty = await t.app.inject({ method: 'POST', url: url('default', NS, 'hooked', KEY) });
    assert.equal(empty.statusCode, 201, empty.body);
    const text = await t.app.inject({ method: 'POST', url: url('default', NS, 'hooked', KEY), headers: { 'content-type': 'text/plain' }, payload: 'ping' });
    assert.equal(text.statusCode, 201, text.body);
    const form = await t.app.inject({ method: 'POST', url: url('default', NS, 'hooked', KEY), headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1&b=two' });
    assert.equal(form.statusCode, 201, form.body);
    const triggers = new Map((await executionsOf(t.services, NS, 'hooked')).map((e) => [e.id, e.trigger as { body: unknown }]));
    assert.equal(triggers.get(empty.json().id)!.body, null);
    assert.equal(triggers.get(text.json().id)!.body, 'ping');
    assert.deepEqual(triggers.get(form.json().id)!.body, { a: '1', b: 'two' });
  });

  test('a wrong key, a disabled trigger\'s key, a missing flow and a missing workspace all get the same 404', async () => {
    const answers = await Promise.all([
      url('default', NS, 'hooked', 'wrong-key-0123456789abcdef'),
      url('default', NS, 'hooked', KEY.slice(0, -1)),
      url('default', NS, 'hooked', 'an-old-disabled-key-0123456789'),
      url('default', NS, 'nosuchflow', KEY),
      url('default', 'no.such.ns', 'hooked', KEY),
      url('nosuchws', NS, 'hooked', KEY),
    ].map((u) => t.app.inject({ method: 'POST', url: u, payload: { x: 1 } })));
    for (const a of answers) {
      assert.equal(a.statusCode, 404);
      assert.deepEqual(a.json(), { error: 'not_found', message: 'no such webhook' });
    }
    assert.equal(new Set(answers.map((a) => a.body)).size, 1);
  });

  test('a deleted flow\'s webhook is gone', async () => {
    await saveYaml(t, admin, FLOW.replace('id: hooked', 'id: doomed'));
    assert.equal((await t.app.inject({ method: 'POST', url: url('default', NS, 'doomed', KEY) })).statusCode, 201);
    assert.equal((await admin.browser.delete(`/workflows/v1/default/flows/${NS}/doomed`)).statusCode, 204);
    const gone = await t.app.inject({ method: 'POST', url: url('default', NS, 'doomed', KEY) });
    assert.deepEqual([gone.statusCode, gone.json()], [404, { error: 'not_found', message: 'no such webhook' }]);
  });

  test('no CSRF check: a stray session cookie without the CSRF header does not block the call', async () => {
    const res = await admin.browser.request('POST', url('default', NS, 'hooked', KEY), { from: 'browser' }, { csrf: false });
    assert.equal(res.statusCode, 201, res.body);
  });

  test('bodies over 1 MiB are refused with 413', async () => {
    const big = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) });
    const res = await t.app.inject({ method: 'POST', url: url('default', NS, 'hooked', KEY), headers: { 'content-type': 'application/json' }, payload: big });
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().error, 'payload_too_large');
  });

  test('matchWebhookKey compares against every key and finds the right trigger', () => {
    const triggers = [{ id: 'a', key: 'first-key-0123456789' }, { id: 'b', key: 'second-key-0123456789' }];
    assert.equal(matchWebhookKey('second-key-0123456789', triggers), 'b');
    assert.equal(matchWebhookKey('first-key-0123456789', triggers), 'a');
    assert.equal(matchWebhookKey('first-key-012345678', triggers), undefined);
    assert.equal(matchWebhookKey('', []), undefined);
  });
});

describe('webhooks off (the default)', () => {
  let t: TestApp;
  let admin: Admin;
  before(async () => {
    t = await startTestApp();
    admin = await signInAdmin(t);
    await saveYaml(t, admin, FLOW);
  });
  after(async () => { await t.close(); });

  test('the route is not mounted: the same 404 as any unknown route, and no execution', async () => {
    const path = url('default', NS, 'hooked', KEY);
    const res = await t.app.inject({ method: 'POST', url: path, payload: { x: 1 } });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { error: 'not_found', message: `no route for POST ${path}` });
    const unknown = await t.app.inject({ method: 'POST', url: '/no/such/route', payload: { x: 1 } });
    assert.deepEqual(unknown.json(), { error: 'not_found', message: 'no route for POST /no/such/route' });
    assert.equal((await executionsOf(t.services, NS, 'hooked')).length, 0);
  });
});

test('svc openapi (no services) documents the webhook route and not the queue dashboard', async () => {
  const app = await buildApp();
  await app.ready();
  try {
    const doc = app.swagger() as { paths: Record<string, Record<string, { summary?: string }>> };
    const p = doc.paths['/workflows/v1/{ws}/executions/webhook/{namespace}/{flowId}/{key}'];
    assert.ok(p?.post, 'webhook route documented');
    assert.match(p.post.summary ?? '', /webhooks_enabled/);
    assert.ok(!Object.keys(doc.paths).some((k) => k.startsWith('/admin/queues')));
  } finally {
    await app.close();
  }
});
