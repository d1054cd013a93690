// The renderer (issue 16 point 6): `svc renderer` driving Debian's Chromium for real through
// playwright-core, reaching the service at automation.public_url with a short-lived session of its
// own (revoked after the render), never putting the token in the image, refusing paths that leave
// public_url and pages that never finish, and a screenshot report delivered to a signed webhook.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { startRenderer, parseRenderRequest, DEFAULT_CHROMIUM, type Renderer } from '../src/automation/renderer.js';
import { evaluate } from '../src/automation/evaluate.js';
import { verifySignature } from '../src/automation/signing.js';
import { startAutomationWorker } from '../src/jobs/automation-worker.js';
import { rebinds } from '../src/automation/automations.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin, waitFor, type Admin } from './helpers/workflow.js';
import { freePort, freePorts } from './helpers/net.js';

const CHROMIUM = process.env.SVC_CHROMIUM ?? DEFAULT_CHROMIUM;
const quiet = { info() {}, warn() {}, error() {}, debug() {} } as never;

/** Width and height from a PNG's IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  assert.equal(png.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

async function renderVia(r: Renderer, body: unknown): Promise<{ status: number; png: Buffer; json?: { error: string; message: string } }> {
  const res = await fetch(`${r.url}/render`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const buf = Buffer.from(await res.arrayBuffer());
  return { status: res.status, png: buf, json: res.headers.get('content-type')?.includes('json') ? JSON.parse(buf.toString()) : undefined };
}

test('render requests are checked: the page stays on public_url', () => {
  const pub = 'http://svc.internal:8080';
  assert.equal(parseRenderRequest({ path: '/ui/x?y=1' }, pub).url.toString(), 'http://svc.internal:8080/ui/x?y=1');
  assert.throws(() => parseRenderRequest({ path: '//evil.example/x' }, pub), /single \//);
  assert.throws(() => parseRenderRequest({ path: 'http://evil.example/' }, pub), /single \//);
  assert.throws(() => parseRenderRequest({ path: '/\\evil.example/' }, pub), /stay on automation.public_url/);
  assert.throws(() => parseRenderRequest({ path: '/', width: 10 }, pub), /width must be an integer from 320 to 3840/);
  assert.throws(() => parseRenderRequest({ path: '/', timeout_ms: 600_000 }, pub), /timeout_ms must be an integer from 1000 to 60000/);
  assert.throws(() => parseRenderRequest({ path: '/', cookie: { name: 'a b', value: 'x' } }, pub), /valid cookie/);
});

describe('screenshots with Debian\'s Chromium', () => {
  let t: TestApp;
  let admin: Admin;
  let renderer: Renderer;
  let hook: { url: string; got: Array<{ url?: string; headers: http.IncomingHttpHeaders; body: string }>; close(): Promise<void> };
  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run bash scripts/chromium.sh`);
    const [appPort, rendererPort] = await freePorts(2);
    t = await startTestApp({
      SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
      SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]',
      SVC_AUTOMATION__PUBLIC_URL: `http://127.0.0.1:${appPort}`,
      SVC_AUTOMATION__RENDERER_URL: `http://127.0.0.1:${rendererPort}`,
      SVC_AUTOMATION__ENABLED: 'false',
    });
    await t.app.listen({ host: '127.0.0.1', port: appPort });
    admin = await signInAdmin(t);
    renderer = await startRenderer({ publicUrl: t.config.automation.public_url, host: '127.0.0.1', port: rendererPort, chromium: CHROMIUM, concurrency: 2, log: quiet });
    const got: Array<{ url?: string; headers: http.IncomingHttpHeaders; body: string }> = [];
    const srv = http.createServer((req, res) => { let b = ''; req.on('data', (c: Buffer) => { b += c; }); req.on('end', () => { got.push({ url: req.url, headers: req.headers, body: b }); res.end(); }); });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    hook = { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, got, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(() => r()); }) };
  });
  after(async () => {
    await renderer?.close();
    await hook?.close();
    await t?.close();
  });

  test('a page of the service rendered as the signed-in user; the token changes nothing in the image', async () => {
    const a = await t.services.sessions.create(admin.userId, null);
    const b = await t.services.sessions.create(admin.userId, null);
    const cookie = (value: string) => ({ name: t.config.session.cookie_name, value });
    const withA = await renderVia(renderer, { path: '/api/me', cookie: cookie(a.token), width: 800, height: 400 });
    const withB = await renderVia(renderer, { path: '/api/me', cookie: cookie(b.token), width: 800, height: 400 });
    const without = await renderVia(renderer, { path: '/api/me', width: 800, height: 400 });
    for (const r of [withA, withB, without]) assert.equal(r.status, 200, r.json?.message);
    assert.deepEqual(pngSize(withA.png), { width: 800, height: 400 });
    // Two different tokens, the same pixels: nothing of the token is in the image. Signed out,
    // the same path shows something else (the 401 body), so the image does show the session's view.
    assert.ok(withA.png.equals(withB.png));
    assert.ok(!withA.png.equals(without.png));
  });

  test('a page that never finishes is cut at its deadline with a 504; other origins are never reached', async () => {
    const slowPort = await freePort();
    let otherHits = 0;
    const other = http.createServer((_req, res) => { otherHits++; res.end('x'); });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const slow = http.createServer((req, res) => {
      if (req.url === '/hang') return; // never answers
      res.setHeader('content-type', 'text/html');
      res.end(`<html><body><img src="${otherUrl}/pixel.png"><script>fetch("${otherUrl}/x").catch(()=>{})</script>hello</body></html>`);
    });
    await new Promise<void>((r) => slow.listen(slowPort, '127.0.0.1', r));
    const r2 = await startRenderer({ publicUrl: `http://127.0.0.1:${slowPort}`, host: '127.0.0.1', port: 0, chromium: CHROMIUM, concurrency: 1, log: quiet });
    try {
      const hung = await renderVia(r2, { path: '/hang', timeout_ms: 1000 });
      assert.equal(hung.status, 504);
      assert.deepEqual(hung.json, { error: 'timeout', message: 'the page did not render within 1000 ms' });
      const page = await renderVia(r2, { path: '/page' });
      assert.equal(page.status, 200, page.json?.message);
      assert.equal(otherHits, 0);
      const off = await renderVia(r2, { path: '//127.0.0.1:1/' });
      assert.equal(off.status, 400);
    } finally {
      await r2.close();
      other.closeAllConnections(); other.close();
      slow.closeAllConnections(); slow.close();
    }
  });

  test('a screenshot report: rendered through renderer_url with a session revoked afterwards, delivered signed', async () => {
    const worker = await startAutomationWorker(t.services);
    try {
      const res = await admin.browser.request('POST', '/api/workspaces/default/reports', {
        name: 'my page', engine: 'embedded', content: { type: 'screenshot', path: '/api/me' }, cron: '0 8 * * 1', recipients: [{ type: 'webhook', url: `${hook.url}/r` }],
      });
      assert.equal(res.statusCode, 201, res.body);
      const report = res.json();
      const sessionsBefore = await t.services.db.selectFrom('sessions').select('user_id').where('user_id', '=', admin.userId).execute();
      const e = await evaluate(t.services, report.id, { scheduledFor: t.clock.now() });
      assert.equal(e?.outcome, 'delivered', e?.error ?? '');
      const sessionsAfter = await t.services.db.selectFrom('sessions').select('user_id').where('user_id', '=', admin.userId).execute();
      assert.equal(sessionsAfter.length, sessionsBefore.length, 'the render session is gone');
      const got = await waitFor(async () => hook.got[0], 'the report');
      assert.ok(verifySignature(report.signing_secret, got.headers['svc-signature'] as string, got.body, t.clock.now().getTime() / 1000));
      const body = JSON.parse(got.body);
      assert.equal(body.format, 'screenshot');
      assert.equal(body.image.content_type, 'image/png');
      assert.deepEqual(pngSize(Buffer.from(body.image.data_base64, 'base64')), { width: 1280, height: 800 });
    } finally {
      await worker.close();
    }
  });

  test('a report renders as whoever last set its page or recipients: an editor re-pointing an administrator\'s report gets no administrator\'s page', async () => {
    const u = await createLocalUser(t.services.db, { email: 'editor@example.com', password: 'password-of-editor' });
    await grantWorkspaceRoleToUser(t.services.db, admin.workspaceId, u.id, 'ws_editor', null, t.clock.now());
    const editor = new Browser(t, '198.51.100.60');
    assert.equal((await editor.login('editor@example.com', 'password-of-editor')).statusCode, 200);
    const R = '/api/workspaces/default/reports';
    const create = async (name: string, path: string, to: string) => {
      const res = await admin.browser.post(R, { name, engine: 'embedded', content: { type: 'screenshot', path }, cron: '0 8 * * 1', recipients: [{ type: 'webhook', url: `${hook.url}${to}` }] });
      assert.equal(res.statusCode, 201, res.body);
      return res.json() as { id: string; name: string; content: unknown };
    };
    /** POST .../run as the editor; the image the worker delivered to `to`. */
    const runAndReceive = async (id: string, to: string) => {
      assert.equal((await editor.post(`${R}/${id}/run`)).statusCode, 202);
      const got = await waitFor(async () => hook.got.find((g) => g.url === to), `the report at ${to}`, 60_000);
      return Buffer.from(JSON.parse(got.body).image.data_base64, 'base64');
    };
    const as = async (userId: string, path: string) => {
      const r = await renderVia(renderer, { path, cookie: { name: t.config.session.cookie_name, value: (await t.services.sessions.create(userId, null)).token } });
      assert.equal(r.status, 200, r.json?.message);
      return r.png;
    };
    const worker = await startAutomationWorker(t.services);
    try {
      // The editor points the administrator's report at an administrator's page and at themselves.
      const report = await create('admin page', '/api/me', '/admin-chose');
      const put = await editor.put(`${R}/${report.id}`, {
        name: report.name, engine: 'embedded', content: { type: 'screenshot', path: '/api/users' }, cron: '0 8 * * 1', recipients: [{ type: 'webhook', url: `${hook.url}/editor-chose` }],
      });
      assert.equal(put.statusCode, 200, put.body);
      const got = await runAndReceive(report.id, '/editor-chose');
      assert.ok(got.equals(await as(u.id, '/api/users')), 'the page as the editor sees it (403)');
      assert.ok(!got.equals(await as(admin.userId, '/api/users')), 'not the administrator\'s list of users');

      // A change of neither (the name) keeps what the administrator chose: their page, to their recipients.
      const kept = await create('admin own', '/api/me', '/admin-kept');
      assert.equal((await editor.put(`${R}/${kept.id}`, { name: 'renamed', engine: 'embedded', content: kept.content, cron: '0 8 * * 1' })).statusCode, 200);
      const mine = await runAndReceive(kept.id, '/admin-kept');
      assert.ok(mine.equals(await as(admin.userId, '/api/me')));
      assert.ok(!mine.equals(await as(u.id, '/api/me')));

      // The person it renders as must still be allowed to set it: demoted, the render is refused.
      await t.services.db.updateTable('workspace_role_grants').set({ role: 'ws_viewer' }).where('user_id', '=', u.id).execute();
      t.services.access.forget([u.id]);
      const e = await evaluate(t.services, report.id, { scheduledFor: t.clock.now() });
      assert.equal(e?.outcome, 'error');
      assert.equal(e?.error, 'the report renders as the person who last set its content or recipients, who no longer has ws_editor in workspace default: an editor who saves its content or recipients again makes it render as them');
    } finally {
      await worker.close();
    }
  });

  test('what re-binds a report: its content, SQL, engine or recipients, not its name or schedule', () => {
    const row = { spec: { type: 'screenshot', path: '/a' }, sql: '', engine: 'embedded' };
    const base = { kind: 'report' as const, name: 'r', engine: 'embedded', cron: '0 8 * * 1', content: { type: 'screenshot' as const, path: '/a' } };
    assert.equal(rebinds(row, base), false);
    assert.equal(rebinds(row, { ...base, name: 'other', cron: '@daily', enabled: false }), false);
    assert.equal(rebinds(row, { ...base, content: { type: 'screenshot', path: '/b' } }), true);
    assert.equal(rebinds(row, { ...base, recipients: [{ type: 'webhook', url: 'https://example.com/h' }] }), true);
    assert.equal(rebinds(row, { ...base, sql: 'SELECT 1' }), true);
    assert.equal(rebinds(row, { ...base, engine: 'other' }), true);
  });

  test('a renderer that is down makes the evaluation an error saying so', async () => {
    const res = await admin.browser.request('POST', '/api/workspaces/default/reports', {
      name: 'nowhere', engine: 'embedded', content: { type: 'screenshot', path: '/' }, cron: '0 8 * * 1', recipients: [{ type: 'webhook', url: `${hook.url}/n` }],
    });
    const id = res.json().id;
    const down = { ...t.services, config: { ...t.config, automation: { ...t.config.automation, renderer_url: `http://127.0.0.1:${await freePort()}` } } };
    const e = await evaluate(down, id, { scheduledFor: t.clock.now() });
    assert.equal(e?.outcome, 'error');
    assert.match(e?.error ?? '', /^the renderer at http:\/\/127\.0\.0\.1:\d+ did not answer/);
  });
});
