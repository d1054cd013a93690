// Alerts and reports (issue 16): the condition and state logic on given rows; then, against real
// PostgreSQL, Redis and the embedded DuckDB engine, an alert firing once, not again within its
// grace, then recovering; a report delivered to a signed webhook receiver on loopback listed in
// automation.webhook_allow_hosts; test-send and save refused by the SSRF gate with a 400; two
// schedulers with one firing; catch-up after missed ticks; links on browser_url.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { judge, transition, ConditionError } from '../src/automation/conditions.js';
import { verifySignature, signatureHeader } from '../src/automation/signing.js';
import { evaluate } from '../src/automation/evaluate.js';
import { processAutomationTick } from '../src/automation/ticker.js';
import { attemptDelivery, recordDeliveries } from '../src/automation/delivery.js';
import { startAutomationWorker, type AutomationWorker } from '../src/jobs/automation-worker.js';
import { runQuery } from '../src/queries/run.js';
import { QUEUES } from '../src/queue/queues.js';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { signInAdmin, replica, waitFor, type Admin } from './helpers/workflow.js';

const rows = (columns: string[], data: unknown[][], truncated = false) => ({ columns: columns.map((name) => ({ name })), rows: data, truncated });

describe('conditions and states (pure)', () => {
  test('row count and value conditions', () => {
    assert.deepEqual(judge({ type: 'row_count', op: '>', threshold: 0 }, rows(['a'], [[1], [2]])), { triggered: true, value: 2 });
    assert.deepEqual(judge({ type: 'row_count', op: '>', threshold: 0 }, rows(['a'], [])), { triggered: false, value: 0 });
    // 64-bit integers arrive as strings
    assert.deepEqual(judge({ type: 'value', op: '>=', threshold: 10, column: 'n' }, rows(['x', 'n'], [['a', '10']])), { triggered: true, value: 10 });
    assert.deepEqual(judge({ type: 'value', op: '<', threshold: 1 }, rows(['n'], [[0.5]])), { triggered: true, value: 0.5 });
    assert.throws(() => judge({ type: 'value', op: '>', threshold: 1 }, rows(['n'], [[1], [2]])), /exactly one row; the query returned 2/);
    assert.throws(() => judge({ type: 'value', op: '>', threshold: 1, column: 'm' }, rows(['n'], [[1]])), /no column "m"/);
    assert.throws(() => judge({ type: 'value', op: '>', threshold: 1 }, rows(['n'], [['abc']])), ConditionError);
    assert.throws(() => judge({ type: 'row_count', op: '>', threshold: 1 }, rows(['n'], [[1]], true)), /count is unknown/);
  });

  test('firing notifies once within the grace period, again after it, recovery once, error once', () => {
    const t0 = new Date('2026-06-01T12:00:00Z');
    const at = (s: number) => new Date(t0.getTime() + s * 1000);
    let m = { state: 'ok' as const as 'ok' | 'triggered' | 'error', lastNotifiedAt: null as Date | null };
    const step = (o: 'ok' | 'triggered' | 'error', s: number) => {
      const r = transition(m, o, at(s), 600);
      m = { state: r.state, lastNotifiedAt: r.notify === 'triggered' ? at(s) : m.lastNotifiedAt };
      return r.notify;
    };
    assert.equal(step('triggered', 0), 'triggered');
    assert.equal(step('triggered', 60), null);
    assert.equal(step('triggered', 599), null);
    assert.equal(step('triggered', 600), 'triggered');
    assert.equal(step('ok', 700), 'recovered');
    assert.equal(step('ok', 760), null);
    assert.equal(step('triggered', 800), null); // flapping back within the grace of the last notice
    assert.equal(step('error', 900), 'error');
    assert.equal(step('error', 960), null);
    assert.equal(step('ok', 1000), null);
    assert.equal(step('triggered', 2000), 'triggered');
  });

  test('signatures verify, and a changed body, secret or stale timestamp does not', () => {
    const body = '{"a":1}';
    const h = signatureHeader('whsec_x', body, 1_800_000_000);
    assert.match(h, /^t=1800000000,v1=[0-9a-f]{64}$/);
    assert.ok(verifySignature('whsec_x', h, body, 1_800_000_100));
    assert.ok(!verifySignature('whsec_x', h, '{"a":2}', 1_800_000_100));
    assert.ok(!verifySignature('whsec_y', h, body, 1_800_000_100));
    assert.ok(!verifySignature('whsec_x', h, body, 1_800_000_400));
    assert.ok(!verifySignature('whsec_x', 'garbage', body, 1_800_000_000));
  });
});

interface Received { headers: http.IncomingHttpHeaders; body: string; path: string }
async function receiver(status: () => number = () => 200): Promise<{ url: string; got: Received[]; close(): Promise<void> }> {
  const got: Received[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => { got.push({ headers: req.headers, body, path: req.url ?? '' }); res.statusCode = status(); res.end(); });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, got, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(() => r()); }) };
}

describe('alerts and reports against the service', () => {
  let t: TestApp;
  let admin: Admin;
  let hook: Awaited<ReturnType<typeof receiver>>;
  let worker: AutomationWorker;
  const nowSecs = () => t.clock.now().getTime() / 1000;
  before(async () => {
    t = await startTestApp({
      SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
      SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]',
      SVC_AUTOMATION__BROWSER_URL: 'https://data.example.com/',
      SVC_AUTOMATION__ENABLED: 'false',
      SVC_ENGINES__EMBEDDED: 'on',
      // The tests move the clock by hours and days; the administrator's session must outlive that.
      SVC_SESSION__IDLE_TTL_MINUTES: '1000000', SVC_SESSION__ABSOLUTE_TTL_HOURS: '100000',
    });
    admin = await signInAdmin(t);
    hook = await receiver();
    worker = await startAutomationWorker(t.services);
  });
  after(async () => {
    await worker?.close();
    await hook?.close();
    await t?.close();
  });

  const create = (kind: 'alert' | 'report', body: Record<string, unknown>) => admin.browser.request('POST', `/api/workspaces/default/${kind}s`, body);

  test('save refuses a private target with the reason, before anything is stored', async () => {
    const res = await create('alert', {
      name: 'meta', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '*/5 * * * *',
      recipients: [{ type: 'webhook', url: 'http://169.254.169.254/latest/meta-data/' }],
    });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error: 'bad_request', message: 'webhook target refused: 169.254.169.254 is a link-local address (169.254.0.0/16, where cloud metadata services answer); list the host in automation.webhook_allow_hosts to allow it' });
    const bad = await create('alert', { name: 'x', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: 'not cron', recipients: [{ type: 'slack', url: `${hook.url}/s` }] });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /invalid cron expression "not cron"/);
    const list = await admin.browser.request('GET', '/api/workspaces/default/alerts');
    assert.deepEqual(list.json(), { alerts: [] });
  });

  test('an alert fires once, not again within its grace, then recovers; each notice signed and delivered', async () => {
    const admin_ = { name: 'admin', role: 'ws_admin' as const };
    const sqlAsAdmin = (sql: string) => runQuery(t.services.queryEngines, t.config, { workspace: admin.workspaceId, engine: 'embedded', sql, principal: admin_ });
    await sqlAsAdmin('CREATE TABLE failures (job VARCHAR)');
    await sqlAsAdmin(`INSERT INTO failures VALUES ('a'), ('b'), ('c')`);
    const res = await create('alert', {
      name: 'failed jobs', engine: 'embedded', sql: 'SELECT count(*) AS n FROM failures', condition: { type: 'value', op: '>', threshold: 0, column: 'n' },
      cron: '*/5 * * * *', timezone: 'Europe/Paris', grace_secs: 3600,
      recipients: [{ type: 'webhook', url: `${hook.url}/alerts?k=1` }, { type: 'slack', url: `${hook.url}/services/T000/B000/XXXX` }],
    });
    assert.equal(res.statusCode, 201, res.body);
    const alert = res.json();
    assert.match(alert.signing_secret, /^whsec_/);
    // Recipient URLs are credentials: shown as their origin only.
    assert.deepEqual(alert.recipients, [{ type: 'webhook', target: hook.url }, { type: 'slack', target: hook.url }]);
    assert.equal(alert.link, `https://data.example.com/#/workspaces/default/alerts/${alert.id}`);
    assert.equal(alert.next_fire_at, '2026-06-01T12:05:00.000Z');
    const again = await admin.browser.request('GET', `/api/workspaces/default/alerts/${alert.id}`);
    assert.equal(again.json().signing_secret, undefined);

    const webhookBodies = () => hook.got.filter((g) => g.path === '/alerts?k=1');
    const e1 = await evaluate(t.services, alert.id, { scheduledFor: t.clock.now() });
    assert.equal(e1?.outcome, 'triggered');
    assert.equal(e1?.notification, 'triggered');
    await waitFor(async () => hook.got.length === 2, 'the first notices');
    const first = webhookBodies()[0]!;
    assert.ok(verifySignature(alert.signing_secret, first.headers['svc-signature'] as string, first.body, nowSecs()));
    const body = JSON.parse(first.body);
    assert.equal(body.event, 'alert.triggered');
    assert.equal(body.value, 3);
    assert.equal(body.alert.url, alert.link);
    assert.equal(first.headers['svc-delivery'], body.id);
    const slack = hook.got.find((g) => g.path.startsWith('/services/'))!;
    assert.match(JSON.parse(slack.body).text, /^Alert "failed jobs" is firing: n > 0 \(value 3\)\. https:\/\/data\.example\.com\/#\/workspaces\/default\/alerts\//);

    t.clock.advance(5 * 60_000);
    const e2 = await evaluate(t.services, alert.id, { scheduledFor: t.clock.now() });
    assert.equal(e2?.outcome, 'triggered');
    assert.equal(e2?.notification, null);

    await sqlAsAdmin('DELETE FROM failures');
    t.clock.advance(5 * 60_000);
    const e3 = await evaluate(t.services, alert.id, { scheduledFor: t.clock.now() });
    assert.equal(e3?.outcome, 'ok');
    assert.equal(e3?.notification, 'recovered');
    await waitFor(async () => webhookBodies().length === 2, 'the recovery notice');
    const rec = webhookBodies()[1]!;
    assert.equal(JSON.parse(rec.body).event, 'alert.recovered');
    assert.ok(verifySignature(alert.signing_secret, rec.headers['svc-signature'] as string, rec.body, nowSecs()));

    const view = (await admin.browser.request('GET', `/api/workspaces/default/alerts/${alert.id}`)).json();
    assert.equal(view.state, 'ok');
    const evals = (await admin.browser.request('GET', `/api/workspaces/default/alerts/${alert.id}/evaluations`)).json().evaluations;
    assert.deepEqual(evals.map((e: { outcome: string; notification: string | null }) => [e.outcome, e.notification]), [['ok', 'recovered'], ['triggered', null], ['triggered', 'triggered']]);
    const deliveries = await waitFor(async () => {
      const d = (await admin.browser.request('GET', `/api/workspaces/default/alerts/${alert.id}/deliveries`)).json().deliveries;
      return d.every((x: { status: string }) => x.status === 'delivered') && d;
    }, 'deliveries recorded as delivered');
    assert.equal(deliveries.length, 4);
    assert.ok(deliveries.every((d: { http_status: number; attempts: number }) => d.http_status === 200 && d.attempts === 1));
    const metrics = await t.services.metrics.registry.metrics();
    assert.match(metrics, /svc_automation_evaluations_total\{kind="alert",outcome="triggered"\} 2/);
    assert.match(metrics, /svc_automation_delivery_attempts_total\{channel="webhook",status="delivered"\} [1-9]/);
    // A redelivered evaluation job of the same slot does nothing twice.
    const dup = await evaluate(t.services, alert.id, { scheduledFor: t.clock.now() });
    assert.equal(dup?.id, e3?.id);
  });

  test('a query error puts the alert in error and notifies once', async () => {
    const res = await create('alert', { name: 'broken', engine: 'embedded', sql: 'SELECT * FROM no_such_table', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '0 * * * *', recipients: [{ type: 'slack', url: `${hook.url}/broken` }] });
    const id = res.json().id;
    const e = await evaluate(t.services, id, { scheduledFor: t.clock.now() });
    assert.equal(e?.outcome, 'error');
    assert.match(e?.error ?? '', /no_such_table/);
    assert.equal(e?.notification, 'error');
    t.clock.advance(3_600_000);
    assert.equal((await evaluate(t.services, id, { scheduledFor: t.clock.now() }))?.notification, null);
  });

  test('a CSV report reaches a webhook receiver on loopback with a valid signature', async () => {
    const res = await create('report', {
      name: 'daily numbers', engine: 'embedded', sql: `SELECT * FROM (VALUES (1, 'a,b'), (2, 'say "hi"')) t(id, label) ORDER BY id`,
      content: { type: 'csv' }, cron: '0 8 * * *', timezone: 'UTC', recipients: [{ type: 'webhook', url: `${hook.url}/reports` }],
    });
    assert.equal(res.statusCode, 201, res.body);
    const report = res.json();
    const e = await evaluate(t.services, report.id, { scheduledFor: t.clock.now() });
    assert.equal(e?.outcome, 'delivered');
    const got = await waitFor(async () => hook.got.find((g) => g.path === '/reports'), 'the report');
    assert.ok(verifySignature(report.signing_secret, got.headers['svc-signature'] as string, got.body, nowSecs()));
    const body = JSON.parse(got.body);
    assert.equal(body.event, 'report');
    assert.equal(body.csv, 'id,label\r\n1,"a,b"\r\n2,"say ""hi"""\r\n');
    assert.equal(body.report.url, `https://data.example.com/#/workspaces/default/reports/${report.id}`);
    // The same as an inline table, to a Slack-compatible channel and a webhook.
    const tab = await create('report', {
      name: 'inline numbers', engine: 'embedded', sql: 'SELECT 42::BIGINT AS answer, NULL AS nothing', content: { type: 'table' }, cron: '0 8 * * *',
      recipients: [{ type: 'webhook', url: `${hook.url}/table` }, { type: 'slack', url: `${hook.url}/table-chat` }],
    });
    await evaluate(t.services, tab.json().id, { scheduledFor: t.clock.now() });
    const table = JSON.parse((await waitFor(async () => hook.got.find((g) => g.path === '/table'), 'the table report')).body);
    assert.deepEqual([table.format, table.columns.map((c: { name: string }) => c.name), table.rows, table.truncated], ['table', ['answer', 'nothing'], [['42', null]], false]);
    const chat = JSON.parse((await waitFor(async () => hook.got.find((g) => g.path === '/table-chat'), 'the chat line')).body);
    assert.match(chat.text, /^Report "inline numbers": 1 rows\. https:\/\/data\.example\.com\/#\/workspaces\/default\/reports\//);
    // After a rotation the old secret no longer verifies a new delivery.
    const rotated = (await admin.browser.request('POST', `/api/workspaces/default/reports/${report.id}/rotate-secret`, {})).json().signing_secret;
    const test_ = await admin.browser.request('POST', `/api/workspaces/default/reports/${report.id}/test`, {});
    assert.equal(test_.statusCode, 200, test_.body);
    assert.equal(test_.json().deliveries[0].status, 'delivered');
    const tested = hook.got.filter((g) => g.path === '/reports').at(-1)!;
    assert.equal(JSON.parse(tested.body).event, 'test');
    assert.ok(verifySignature(rotated, tested.headers['svc-signature'] as string, tested.body, nowSecs()));
    assert.ok(!verifySignature(report.signing_secret, tested.headers['svc-signature'] as string, tested.body, nowSecs()));
  });

  test('test-send refuses with a 400 when the gate refuses now (the allow list narrowed since the save)', async () => {
    const res = await create('alert', { name: 'narrowed', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '0 * * * *', recipients: [{ type: 'webhook', url: `${hook.url}/n` }] });
    const id = res.json().id;
    const narrow = replica(t, { config: (c) => ({ ...c, automation: { ...c.automation, webhook_allow_hosts: [] } }) });
    try {
      const { buildApp } = await import('../src/api/app.js');
      const app = await buildApp({ services: narrow, logger: narrow.logging.module('svc::api') });
      const r = await app.inject({ method: 'POST', url: `/api/workspaces/default/alerts/${id}/test`, headers: { cookie: [...admin.browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'x-svc-csrf': admin.browser.cookies.get('svc_csrf') ?? '', 'content-type': 'application/json' }, payload: '{}' });
      assert.equal(r.statusCode, 400, r.body);
      assert.match(r.json().message, /^webhook target refused: 127\.0\.0\.1 is a loopback address/);
      // Delivery is gated the same way: a recorded delivery is refused, not sent.
      const rowBefore = hook.got.length;
      await t.services.queues.get(QUEUES.deliveries).pause(); // this replica's worker would send it with the wider list
      await evaluate(narrow, id, { scheduledFor: t.clock.now() });
      const d = await narrow.db.selectFrom('automation_deliveries').select('id').where('automation_id', '=', id).executeTakeFirstOrThrow();
      const out = await attemptDelivery(narrow, d.id, false);
      assert.equal(out.status, 'refused');
      assert.match(out.error ?? '', /loopback/);
      assert.equal(hook.got.filter((g) => g.path === '/n').length, 0);
      assert.ok(hook.got.length >= rowBefore);
      await app.close();
    } finally {
      await t.services.queues.get(QUEUES.deliveries).resume();
      await narrow.close();
    }
  });

  test('a 5xx answer is retried, a 4xx is not', async () => {
    let code = 503;
    const flaky = await receiver(() => code);
    try {
      const res = await create('alert', { name: 'flaky', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '0 * * * *', recipients: [{ type: 'webhook', url: `${flaky.url}/f` }] });
      const id = res.json().id;
      await t.services.queues.get(QUEUES.deliveries).pause();
      await evaluate(t.services, id, { scheduledFor: t.clock.now() });
      const d = await t.services.db.selectFrom('automation_deliveries').select('id').where('automation_id', '=', id).executeTakeFirstOrThrow();
      const a1 = await attemptDelivery(t.services, d.id, false);
      assert.deepEqual([a1.status, a1.httpStatus, a1.retry], ['pending', 503, true]);
      code = 200;
      const a2 = await attemptDelivery(t.services, d.id, false);
      assert.deepEqual([a2.status, a2.httpStatus], ['delivered', 200]);
      const row = await t.services.db.selectFrom('automation_deliveries').selectAll().where('id', '=', d.id).executeTakeFirstOrThrow();
      assert.equal(row.attempts, 2);
      assert.deepEqual(row.payload, {}, 'a delivered payload is not kept');
      code = 410;
      t.clock.advance(7_200_000);
      await evaluate(t.services, id, { scheduledFor: t.clock.now() });
      const d2 = await t.services.db.selectFrom('automation_deliveries').select('id').where('automation_id', '=', id).where('id', '!=', d.id).executeTakeFirstOrThrow();
      const a3 = await attemptDelivery(t.services, d2.id, false);
      assert.deepEqual([a3.status, a3.httpStatus, a3.retry], ['failed', 410, false]);
    } finally {
      await t.services.queues.get(QUEUES.deliveries).resume();
      await flaky.close();
    }
  });

  test('two schedulers, one firing; missed ticks fire once, the latest slot', async () => {
    const res = await create('alert', { name: 'ticked', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '<', threshold: 0 }, cron: '*/5 * * * *', recipients: [{ type: 'slack', url: `${hook.url}/t` }] });
    const id = res.json().id;
    const other = replica(t);
    try {
      t.clock.set(new Date(Math.floor(t.clock.now().getTime() / 300_000) * 300_000 + 301_000));
      const [a, b] = await Promise.all([processAutomationTick(t.services), processAutomationTick(other)]);
      const fired = [...a.fired, ...b.fired].filter((f) => f.id === id);
      assert.equal(fired.length, 1);
      const firedSlot = fired[0]!.slot;
      // A day without ticks: one evaluation, of the latest slot, not 288.
      t.clock.advance(86_400_000);
      const [c, d] = await Promise.all([processAutomationTick(other), processAutomationTick(t.services)]);
      const late = [...c.fired, ...d.fired].filter((f) => f.id === id);
      assert.equal(late.length, 1);
      assert.equal(new Date(late[0]!.slot).getTime(), Math.floor(t.clock.now().getTime() / 300_000) * 300_000);
      assert.notEqual(late[0]!.slot, firedSlot);
      await waitFor(async () => {
        const n = await t.services.db.selectFrom('automation_evaluations').select('id').where('automation_id', '=', id).execute();
        return n.length === 2;
      }, 'the two evaluations');
    } finally {
      await other.close();
    }
  });

  test('ws_viewer reads alerts and their history; ws_editor manages them; outsiders see no workspace', async () => {
    const person = async (email: string, role?: 'ws_viewer' | 'ws_editor') => {
      const u = await createLocalUser(t.services.db, { email, password: 'password-of-' + email });
      if (role) await grantWorkspaceRoleToUser(t.services.db, admin.workspaceId, u.id, role, null, t.clock.now());
      const b = new Browser(t, '198.51.100.' + (email.length % 200));
      assert.equal((await b.login(email, 'password-of-' + email)).statusCode, 200);
      return b;
    };
    const viewer = await person('viewer@example.test', 'ws_viewer');
    const editor = await person('editor@example.test', 'ws_editor');
    const outsider = await person('outsider@example.test');
    const body = { name: 'by editor', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '0 * * * *', recipients: [{ type: 'webhook', url: `${hook.url}/e` }] };
    const made = await editor.request('POST', '/api/workspaces/default/alerts', body);
    assert.equal(made.statusCode, 201, made.body);
    const id = made.json().id;
    const denied = await viewer.request('POST', '/api/workspaces/default/alerts', { ...body, name: 'by viewer' });
    assert.deepEqual([denied.statusCode, denied.json()], [403, { error: 'forbidden', message: 'requires ws_editor in workspace default' }]);
    assert.equal((await viewer.request('POST', `/api/workspaces/default/alerts/${id}/test`, {})).statusCode, 403);
    assert.equal((await viewer.request('DELETE', `/api/workspaces/default/alerts/${id}`)).statusCode, 403);
    assert.equal((await viewer.request('GET', `/api/workspaces/default/alerts/${id}`)).statusCode, 200);
    assert.equal((await viewer.request('GET', `/api/workspaces/default/alerts/${id}/deliveries`)).statusCode, 200);
    assert.equal((await outsider.request('GET', '/api/workspaces/default/alerts')).statusCode, 404);
    // Not an id of this kind: 404, not a report through the alerts routes.
    assert.equal((await viewer.request('GET', '/api/workspaces/default/reports/' + id)).statusCode, 404);
    assert.equal((await editor.request('PUT', `/api/workspaces/default/alerts/${id}`, { ...body, recipients: undefined, grace_secs: 60 })).json().grace_secs, 60);
    assert.equal((await editor.request('DELETE', `/api/workspaces/default/alerts/${id}`)).statusCode, 204);
    assert.equal((await viewer.request('GET', `/api/workspaces/default/alerts/${id}`)).statusCode, 404);
  });

  test('a delivery whose job was lost (recorded, never enqueued) is enqueued again by a later tick', async () => {
    const res = await create('alert', { name: 'lost', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '0 0 1 1 *', recipients: [{ type: 'slack', url: `${hook.url}/lost` }] });
    const row = await t.services.db.selectFrom('automations').selectAll().where('id', '=', res.json().id).executeTakeFirstOrThrow();
    const [id] = await recordDeliveries(t.services, row, null, { event: 'test', text: 'lost and found', body: {} });
    assert.equal((await processAutomationTick(t.services)).requeued, 0, 'not yet: it may still be on its way');
    t.clock.advance(16 * 60_000);
    assert.equal((await processAutomationTick(t.services)).requeued, 1);
    const got = await waitFor(async () => hook.got.find((g) => g.path === '/lost'), 'the found delivery');
    assert.deepEqual(JSON.parse(got.body), { text: 'lost and found' });
    await waitFor(async () => (await t.services.db.selectFrom('automation_deliveries').select('status').where('id', '=', id!).executeTakeFirst())?.status === 'delivered', 'recorded as delivered');
  });
});
