// The apps resource on PostgreSQL and an S3 server (s3rver): an editor creates an app, edits its
// draft and publishes versions, all stored under apps.storage.prefix in the bucket; a viewer sees
// and reads only published versions and may not edit; delete removes the row and every object.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin } from './helpers/workflow.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';

const A = '/api/workspaces/default/apps';
const NOTEBOOK = 'import marimo\napp = marimo.App()\n\n@app.cell\ndef _():\n    return 42\n';

async function signIn(t: TestApp, email: string, role: 'ws_viewer' | 'ws_editor', ip: string): Promise<Browser> {
  const u = await createLocalUser(t.services.db, { email, password: 'password-of-' + email });
  const ws = await t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  await grantWorkspaceRoleToUser(t.services.db, ws.id, u.id, role, null, t.clock.now());
  const b = new Browser(t, ip);
  const res = await b.login(email, 'password-of-' + email);
  assert.equal(res.statusCode, 200, res.body);
  return b;
}

describe('apps resource', () => {
  let t: TestApp;
  let editor: Browser;
  let viewer: Browser;
  let wsId: string;
  before(async () => {
    t = await startTestAppWithS3({
      SVC_APPS__STORAGE__PREFIX: 'data-apps/',
    });
    wsId = (await signInAdmin(t)).workspaceId;
    editor = await signIn(t, 'ed@example.com', 'ws_editor', '198.51.100.11');
    viewer = await signIn(t, 'vi@example.com', 'ws_viewer', '198.51.100.12');
  });
  after(async () => { await t.close(); });

  test('an editor creates, edits and publishes; each version is an object under apps.storage.prefix', async () => {
    const res = await editor.post(A, { name: 'sales', description: 'Sales by region', source: NOTEBOOK });
    assert.equal(res.statusCode, 201, res.body);
    const app = res.json();
    assert.equal(app.name, 'sales');
    assert.equal(app.published_version, null);
    const draftKey = `data-apps/${wsId}/${app.id}/draft`;
    assert.equal(Buffer.from((await t.services.s3.get(draftKey))!).toString(), NOTEBOOK);

    assert.equal((await editor.post(A, { name: 'sales' })).statusCode, 409, 'a name is unique in the workspace');

    const v1 = await editor.post(`${A}/${app.id}/publish`);
    assert.equal(v1.statusCode, 201, v1.body);
    assert.equal(v1.json().published_version, 1);
    const edited = NOTEBOOK.replace('42', '43');
    assert.equal((await editor.put(`${A}/${app.id}/draft`, { source: edited })).statusCode, 200);
    assert.equal((await editor.get(`${A}/${app.id}/draft`)).json().source, edited);
    assert.equal((await editor.post(`${A}/${app.id}/publish`)).json().published_version, 2);

    const keys = (await t.services.s3.list(`data-apps/${wsId}/${app.id}/`)).map((o) => o.key).sort();
    assert.deepEqual(keys, [draftKey, `data-apps/${wsId}/${app.id}/versions/1`, `data-apps/${wsId}/${app.id}/versions/2`]);
    assert.equal((await viewer.get(`${A}/${app.id}/versions/1`)).json().source, NOTEBOOK);
    assert.deepEqual((await viewer.get(`${A}/${app.id}/versions/2`)).json(), { version: 2, source: edited });
    assert.equal((await viewer.get(`${A}/${app.id}/versions/3`)).statusCode, 404);
  });

  test('a viewer sees published apps only, reads no draft and edits nothing', async () => {
    const unpublished = (await editor.post(A, { name: 'wip', source: 'x = 1\n' })).json();
    const names = (b: Browser) => b.get(A).then((r) => r.json().apps.map((a: { name: string }) => a.name));
    assert.deepEqual(await names(editor), ['sales', 'wip']);
    assert.deepEqual(await names(viewer), ['sales']);
    assert.equal((await viewer.get(`${A}/${unpublished.id}`)).statusCode, 404);
    assert.equal((await viewer.get(`${A}/${unpublished.id}/draft`)).statusCode, 403);
    assert.equal((await viewer.post(A, { name: 'mine' })).statusCode, 403);
    assert.equal((await viewer.put(`${A}/${unpublished.id}/draft`, { source: '' })).statusCode, 403);
    assert.equal((await viewer.post(`${A}/${unpublished.id}/publish`)).statusCode, 403);
    assert.equal((await viewer.delete(`${A}/${unpublished.id}`)).statusCode, 403);
    const shown = (await viewer.get(A)).json().apps[0];
    assert.equal(shown.draft_updated_at, null, 'a viewer learns nothing of the draft');
  });

  test('bad input is a 400 with error and message; CSRF is required', async () => {
    for (const body of [{ name: 'Bad Name' }, { name: 'x'.repeat(64) }, { name: 'ok', extra: 1 }, { name: 'big', source: 'x'.repeat(1_048_577) }]) {
      const res = await editor.post(A, body);
      assert.ok([400, 413].includes(res.statusCode), `${res.statusCode} ${res.body.slice(0, 200)}`);
      assert.ok(res.json().error && res.json().message);
    }
    assert.equal((await editor.get(`${A}/not-a-uuid`)).statusCode, 400);
    assert.equal((await editor.post(A, { name: 'nocsrf' }, { csrf: false })).statusCode, 403);
    assert.equal((await new Browser(t, '198.51.100.13').get(A)).statusCode, 401);
  });

  test('delete removes the app and every object of it', async () => {
    const app = (await editor.get(A)).json().apps.find((a: { name: string }) => a.name === 'sales');
    assert.equal((await editor.delete(`${A}/${app.id}`)).statusCode, 204);
    assert.equal((await editor.get(`${A}/${app.id}`)).statusCode, 404);
    assert.deepEqual(await t.services.s3.list(`data-apps/${wsId}/${app.id}/`), []);
  });
});
