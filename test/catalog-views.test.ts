// Iceberg REST views over plain HTTP (iceberg-js 0.8 has no view API), answers validated against
// the specification's schemas; the metadata files are read back from the real S3 server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog } from 'iceberg-js';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { assertSpec } from './helpers/iceberg-spec.js';

let c: CatalogApp;
const tokens: Record<string, string> = {};
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] };
const version = (sql: string) => ({
  'version-id': 1, 'timestamp-ms': 1780000000000, 'schema-id': 0, summary: { 'engine-name': 'trino' },
  representations: [{ type: 'sql', sql, dialect: 'trino' }], 'default-namespace': ['web'],
});

async function http(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

before(async () => {
  c = await startCatalogApp();
  await workspace(c.t, 'sales');
  Object.assign(tokens, await rolePeople(c.t, 'sales'));
  const ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.editor } });
  await ed.createNamespace({ namespace: ['web'] });
  await ed.createNamespace({ namespace: ['marts'] });
  await ed.createTable({ namespace: ['web'] }, { name: 'events', schema: schema as never });
});
after(async () => { await c.close(); });

test('create, load, list, HEAD, replace, rename and drop a view', async () => {
  const created = await http('POST', 'v1/sales/namespaces/web/views', tokens.editor, { name: 'daily', schema, 'view-version': version('SELECT 1 AS n'), properties: { comment: 'daily counts' } });
  assert.equal(created.status, 200, created.text);
  assertSpec('LoadViewResult', created.body);
  const m = created.body.metadata;
  assert.equal(m['current-version-id'], 1);
  assert.deepEqual(m.properties, { comment: 'daily counts' });
  assert.match(created.body['metadata-location'], /\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  const key = created.body['metadata-location'].replace('s3://warehouse/', '');
  assert.deepEqual(JSON.parse(Buffer.from((await c.t.services.s3.get(key))!).toString()), m);

  const load = await http('GET', 'v1/sales/namespaces/web/views/daily', tokens.viewer);
  assert.equal(load.status, 200);
  assert.deepEqual(load.body.metadata, m);
  assert.equal((await fetch(new URL('v1/sales/namespaces/web/views/daily', c.base), { method: 'HEAD', headers: { authorization: `Bearer ${tokens.viewer}` } })).status, 204);
  const list = await http('GET', 'v1/sales/namespaces/web/views', tokens.viewer);
  assertSpec('ListTablesResponse', list.body);
  assert.deepEqual(list.body.identifiers, [{ namespace: ['web'], name: 'daily' }]);
  // Tables and views keep to their own lists and their own loads, but share names.
  assert.deepEqual((await http('GET', 'v1/sales/namespaces/web/tables', tokens.viewer)).body.identifiers, [{ namespace: ['web'], name: 'events' }]);
  assert.equal((await http('GET', 'v1/sales/namespaces/web/tables/daily', tokens.viewer)).body.error.type, 'NoSuchTableException');
  const clash = await http('POST', 'v1/sales/namespaces/web/views', tokens.editor, { name: 'events', schema, 'view-version': version('SELECT 2 AS n'), properties: {} });
  assert.equal(clash.status, 409);
  assert.equal(clash.body.error.message, 'Table with same name already exists: web.events');

  const replaced = await http('POST', 'v1/sales/namespaces/web/views/daily', tokens.editor, {
    requirements: [{ type: 'assert-view-uuid', uuid: m['view-uuid'] }],
    updates: [
      { action: 'add-view-version', 'view-version': { ...version('SELECT 2 AS n'), 'version-id': 2 } },
      { action: 'set-current-view-version', 'view-version-id': -1 },
    ],
  });
  assert.equal(replaced.status, 200, replaced.text);
  assertSpec('LoadViewResult', replaced.body);
  assert.equal(replaced.body.metadata['current-version-id'], 2);
  assert.equal(replaced.body.metadata['version-log'].length, 2);
  assert.match(replaced.body['metadata-location'], /\/metadata\/00001-/);
  const stale = await http('POST', 'v1/sales/namespaces/web/views/daily', tokens.editor, { requirements: [{ type: 'assert-view-uuid', uuid: 'nope' }], updates: [] });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error.type, 'CommitFailedException');
  const bad = await http('POST', 'v1/sales/namespaces/web/views/daily', tokens.editor, { updates: [{ action: 'set-current-view-version', 'view-version-id': 99 }] });
  assert.equal(bad.status, 400);
  assertSpec('IcebergErrorResponse', bad.body);
  const viewerReplace = await http('POST', 'v1/sales/namespaces/web/views/daily', tokens.viewer, { updates: [] });
  assert.equal(viewerReplace.status, 403);

  const renamed = await http('POST', 'v1/sales/views/rename', tokens.editor, { source: { namespace: ['web'], name: 'daily' }, destination: { namespace: ['marts'], name: 'daily_counts' } });
  assert.equal(renamed.status, 204, renamed.text);
  assert.equal((await http('GET', 'v1/sales/namespaces/web/views/daily', tokens.viewer)).body.error.type, 'NoSuchViewException');
  assert.equal((await http('GET', 'v1/sales/namespaces/marts/views/daily_counts', tokens.viewer)).status, 200);

  assert.equal((await http('DELETE', 'v1/sales/namespaces/marts/views/daily_counts', tokens.editor)).status, 403);
  assert.equal((await http('DELETE', 'v1/sales/namespaces/marts/views/daily_counts', tokens.owner)).status, 204);
  assert.equal((await http('GET', 'v1/sales/namespaces/marts/views/daily_counts', tokens.viewer)).status, 404);
  const events = await c.t.services.db.selectFrom('audit_events').select('action').where('action', 'like', 'catalog.view.%').orderBy('id').execute();
  assert.deepEqual(events.map((e) => e.action), ['catalog.view.create', 'catalog.view.rename', 'catalog.view.drop']);
});

test('a view request with a bad body is a 400 in the Iceberg shape', async () => {
  for (const body of [{ name: 'v' }, { name: 'v', schema, 'view-version': { representations: [] }, properties: {} }, { name: '', schema, 'view-version': version('x'), properties: {} }]) {
    const r = await http('POST', 'v1/sales/namespaces/web/views', tokens.editor, body);
    assert.equal(r.status, 400, r.text);
    assertSpec('IcebergErrorResponse', r.body);
  }
});
