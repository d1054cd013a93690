// The audit log as an administrator reads it (issue 28, bug 2): every authorization decision
// names its actor (by email, also for rows written before the actor was recorded), allowed reads
// can be left out, and the changes that were not audited are: publishing and deleting a Data API
// endpoint, creating and deleting an app, creating, changing and deleting an alert, writing and
// deleting a namespace file. Real routes on PostgreSQL and an S3 server (s3rver).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { createLocalUser } from '../src/identity/users.js';
import { ADMIN, signInAdmin, type Admin } from './helpers/workflow.js';

let t: TestApp; let admin: Admin;
before(async () => {
  t = await startTestAppWithS3({
    SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'), SVC_AUTOMATION__ENABLED: 'false', SVC_ENGINES__EMBEDDED: 'on',
    SVC_AUTOMATION__WEBHOOK_ALLOW_HOSTS: '["127.0.0.1"]', SVC_AUDIT__FLUSH_INTERVAL_MS: '50',
  });
  admin = await signInAdmin(t);
});
after(async () => { await t?.close(); });

interface Ev { kind: string; action: string; actor_id: string | null; actor: string | null; target: string | null; workspace: string | null; decision: string | null }
const events = async (query = 'limit=500'): Promise<Ev[]> => {
  const res = await admin.browser.get(`/api/audit?${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().events;
};

test('authorization decisions name their actor, older rows too; hide_reads leaves out the allowed reads', async () => {
  assert.equal((await admin.browser.get('/api/workspaces/default')).statusCode, 200);
  // A person without platform_admin asking for the audit log: a denied decision.
  const vi = await createLocalUser(t.services.db, { email: 'vi@example.test', password: 'vi-password-1' });
  assert.ok(vi.id);
  const other = new Browser(t, '198.51.100.77');
  assert.equal((await other.login('vi@example.test', 'vi-password-1')).statusCode, 200);
  assert.equal((await other.get('/api/audit')).statusCode, 403);
  // A decision written before the actor was recorded: the user's email is answered for it.
  await t.services.db.insertInto('audit_events').values({ kind: 'authz', action: 'GET /api/old', actor_id: admin.userId, actor: null, target: 'platform', decision: 'allow', details: '{}' }).execute();
  const all = await events();
  const authz = all.filter((e) => e.kind === 'authz');
  assert.ok(authz.length >= 3);
  for (const e of authz) assert.equal(e.actor, e.actor_id === admin.userId ? ADMIN.email : 'vi@example.test', `${e.action} names its actor`);
  assert.ok(authz.some((e) => e.action === 'GET /api/old'));
  const changes = await events('limit=500&hide_reads=true');
  assert.ok(!changes.some((e) => e.kind === 'authz' && e.decision === 'allow' && e.action.startsWith('GET ')), 'no allowed read');
  assert.ok(changes.some((e) => e.kind === 'authz' && e.decision === 'deny'), 'a denied read stays');
  assert.ok(changes.some((e) => e.kind === 'governance'), 'changes stay');
});

test('Data API endpoints, apps, alerts and namespace files are audited with their actor and workspace', async () => {
  const b = admin.browser;
  const ok = async (p: Promise<{ statusCode: number; body: string }>, code: number) => { const r = await p; assert.equal(r.statusCode, code, r.body); return r; };
  await ok(b.put('/api/workspaces/default/data-api/endpoints/answer', { engine: 'embedded', sql: 'SELECT 42 AS n', params: [], description: '' }), 201);
  await ok(b.delete('/api/workspaces/default/data-api/endpoints/answer'), 204);
  const app = (await ok(b.post('/api/workspaces/default/apps', { name: 'sales', description: '', source: 'print(1)\n' }), 201)).body;
  await ok(b.delete(`/api/workspaces/default/apps/${JSON.parse(app).id}`), 204);
  const alertBody = { name: 'rows', engine: 'embedded', sql: 'SELECT 1', condition: { type: 'row_count', op: '>', threshold: 0 }, cron: '*/5 * * * *', recipients: [{ type: 'webhook', url: 'http://127.0.0.1:9/x' }] };
  const alert = JSON.parse((await ok(b.post('/api/workspaces/default/alerts', alertBody), 201)).body);
  await ok(b.put(`/api/workspaces/default/alerts/${alert.id}`, { ...alertBody, recipients: undefined, cron: '0 * * * *' }), 200);
  await ok(b.delete(`/api/workspaces/default/alerts/${alert.id}`), 204);
  await ok(b.request('PUT', '/workflows/v1/default/namespaces/team/files/content?path=conf/a.txt', 'hello', { headers: { 'content-type': 'application/octet-stream' } }), 200);
  await ok(b.delete('/workflows/v1/default/namespaces/team/files/content?path=conf/a.txt'), 204);
  const changes = (await events('kind=governance&limit=100')).filter((e) => e.workspace === 'default').map((e) => [e.action, e.target, e.actor]);
  const expected = [
    ['data_api.endpoint.publish', 'endpoint:answer'], ['data_api.endpoint.delete', 'endpoint:answer'],
    ['app.create', 'app:sales'], ['app.delete', 'app:sales'],
    ['alert.create', 'alert:rows'], ['alert.update', 'alert:rows'], ['alert.delete', 'alert:rows'],
    ['namespace_file.put', 'file:team/conf/a.txt'], ['namespace_file.delete', 'file:team/conf/a.txt'],
  ];
  for (const [action, target] of expected) assert.ok(changes.some(([a, tg, actor]) => a === action && tg === target && actor === ADMIN.email), `${action} ${target} in ${JSON.stringify(changes)}`);
});
