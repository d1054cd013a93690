// The Iceberg REST catalog's configuration and namespaces, driven by iceberg-js (a real client)
// against the listening server, and by plain HTTP for what iceberg-js does not offer (pages,
// properties, the warehouse in /v1/config). Access: the admin token, a person's workspace role
// through an engine's delegated token, a client bound to a workspace; denials are 403 naming the
// rule, never a 404 that tells an outsider a name exists.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog, IcebergError } from 'iceberg-js';
import { startCatalogApp, workspace, rolePeople, clientToken, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { assertSpec } from './helpers/iceberg-spec.js';

let c: CatalogApp;
let admin: IcebergRestCatalog;
const tokens: Record<string, string> = {};

const catalog = (token: string, ws = 'sales') => new IcebergRestCatalog({ baseUrl: c.base, catalogName: ws, auth: { type: 'bearer', token } });
async function http(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
async function refused(p: Promise<unknown>, status: number, type: string): Promise<IcebergError> {
  const err = await p.then(() => assert.fail('expected a refusal'), (e: unknown) => e);
  assert.ok(err instanceof IcebergError, String(err));
  assert.equal(err.status, status, err.message);
  assert.equal(err.icebergType, type, err.message);
  assertSpec('IcebergErrorResponse', err.details);
  return err;
}

before(async () => {
  c = await startCatalogApp();
  await workspace(c.t, 'sales');
  await workspace(c.t, 'hr');
  Object.assign(tokens, await rolePeople(c.t, 'sales'));
  tokens.salesClient = await clientToken(c.t, 'sales');
  tokens.looseClient = await clientToken(c.t, null);
  admin = catalog(CATALOG_TOKEN);
});
after(async () => { await c.close(); });

describe('GET /v1/config', () => {
  test('the warehouse parameter names a workspace; the answer carries its prefix and the endpoints', async () => {
    const res = await http('GET', 'v1/config?warehouse=sales', tokens.viewer);
    assert.equal(res.status, 200);
    assertSpec('CatalogConfig', res.body);
    assert.equal(res.body.overrides.prefix, 'sales');
    assert.equal(res.body.overrides['warehouse-location'], 's3://warehouse/lake/sales');
    assert.ok(res.body.endpoints.includes('GET /v1/{prefix}/namespaces'));
    assert.ok(res.body.endpoints.includes('HEAD /v1/{prefix}/namespaces/{namespace}'));
  });

  test('a client bound to a workspace gets it without naming it; an unknown warehouse is 404 to the administrator', async () => {
    const res = await http('GET', 'v1/config', tokens.salesClient);
    assert.equal(res.body.overrides.prefix, 'sales');
    const missing = await http('GET', 'v1/config?warehouse=nope', CATALOG_TOKEN);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.type, 'NoSuchWarehouseException');
    const unnamed = await http('GET', 'v1/config', CATALOG_TOKEN);
    assert.equal(unnamed.status, 400);
    assert.equal(unnamed.body.error.type, 'BadRequestException');
  });

  test('someone without a role in the workspace gets 403 naming the rule, whether it exists or not', async () => {
    for (const ws of ['hr', 'does-not-exist']) {
      const res = await http('GET', `v1/config?warehouse=${ws}`, tokens.viewer);
      assert.equal(res.status, 403);
      assert.equal(res.body.error.type, 'ForbiddenException');
      assert.equal(res.body.error.message, `Forbidden: vera@example.test has no role in workspace ${ws}`);
    }
  });
});

describe('namespaces through iceberg-js', () => {
  test('create, load, exists, list, nested, drop', async () => {
    const ed = catalog(tokens.editor);
    const created = await ed.createNamespace({ namespace: ['analytics'] }, { properties: { owner: 'data-team' } });
    assertSpec('CreateNamespaceResponse', created);
    assert.deepEqual(created, { namespace: ['analytics'], properties: { owner: 'data-team' } });
    assert.deepEqual(await ed.loadNamespaceMetadata({ namespace: ['analytics'] }), { properties: { owner: 'data-team' } });
    assert.equal(await ed.namespaceExists({ namespace: ['analytics'] }), true);
    assert.equal(await ed.namespaceExists({ namespace: ['nope'] }), false);

    await ed.createNamespace({ namespace: ['analytics', 'daily'] });
    await ed.createNamespace({ namespace: ['analytics', 'daily', 'eu'] });
    await ed.createNamespace({ namespace: ['raw'] });
    assert.deepEqual(await ed.listNamespaces(), [{ namespace: ['analytics'] }, { namespace: ['raw'] }]);
    assert.deepEqual(await ed.listNamespaces({ namespace: ['analytics'] }), [{ namespace: ['analytics', 'daily'] }]);
    assert.deepEqual(await ed.listNamespaces({ namespace: ['analytics', 'daily'] }), [{ namespace: ['analytics', 'daily', 'eu'] }]);
    assert.deepEqual(await ed.loadNamespaceMetadata({ namespace: ['analytics', 'daily', 'eu'] }), { properties: {} });

    await refused(ed.createNamespace({ namespace: ['analytics'] }), 409, 'AlreadyExistsException');
    await refused(ed.createNamespace({ namespace: ['ghost', 'child'] }), 404, 'NoSuchNamespaceException');
    await refused(ed.loadNamespaceMetadata({ namespace: ['ghost'] }), 404, 'NoSuchNamespaceException');
    await refused(ed.listNamespaces({ namespace: ['ghost'] }), 404, 'NoSuchNamespaceException');

    // Dropping is the workspace administrator's, and refused while the namespace holds another.
    const denied = await refused(ed.dropNamespace({ namespace: ['raw'] }), 403, 'ForbiddenException');
    assert.equal(denied.message, 'Forbidden: ed@example.test has ws_editor in workspace sales; dropping a namespace needs ws_admin');
    const own = catalog(tokens.owner);
    await refused(own.dropNamespace({ namespace: ['analytics', 'daily'] }), 409, 'NamespaceNotEmptyException');
    await own.dropNamespace({ namespace: ['analytics', 'daily', 'eu'] });
    await own.dropNamespace({ namespace: ['analytics', 'daily'] });
    assert.equal(await own.namespaceExists({ namespace: ['analytics', 'daily'] }), false);
    await refused(own.dropNamespace({ namespace: ['analytics', 'daily'] }), 404, 'NoSuchNamespaceException');

    const events = await c.t.services.db.selectFrom('audit_events').select(['action', 'actor', 'target', 'workspace'])
      .where('action', 'like', 'catalog.namespace.%').where('target', 'like', 'namespace:analytics.daily%').orderBy('id').execute();
    assert.deepEqual(events.map((e) => [e.action, e.target, e.workspace, e.actor]), [
      ['catalog.namespace.create', 'namespace:analytics.daily', 'sales', 'ed@example.test via client:engine-1'],
      ['catalog.namespace.create', 'namespace:analytics.daily.eu', 'sales', 'ed@example.test via client:engine-1'],
      ['catalog.namespace.drop', 'namespace:analytics.daily.eu', 'sales', 'ada@example.test via client:engine-1'],
      ['catalog.namespace.drop', 'namespace:analytics.daily', 'sales', 'ada@example.test via client:engine-1'],
    ]);
  });

  test('a viewer reads and may not create; a workspace client does everything in its workspace only', async () => {
    const v = catalog(tokens.viewer);
    assert.ok((await v.listNamespaces()).length >= 1);
    const denied = await refused(v.createNamespace({ namespace: ['mine'] }), 403, 'ForbiddenException');
    assert.equal(denied.message, 'Forbidden: vera@example.test has ws_viewer in workspace sales; creating a namespace needs ws_editor');

    const cl = catalog(tokens.salesClient);
    await cl.createNamespace({ namespace: ['staging'] });
    await cl.dropNamespace({ namespace: ['staging'] });
    const other = await refused(catalog(tokens.salesClient, 'hr').listNamespaces(), 403, 'ForbiddenException');
    assert.match(other.message, /^Forbidden: client:.+ is bound to workspace sales$/);
    const loose = await refused(catalog(tokens.looseClient).listNamespaces(), 403, 'ForbiddenException');
    assert.match(loose.message, /^Forbidden: client:.+ is bound to no workspace$/);
    // The administration token reaches every warehouse; an unknown one is 404.
    assert.deepEqual(await catalog(CATALOG_TOKEN, 'hr').listNamespaces(), []);
    await refused(catalog(CATALOG_TOKEN, 'nope').listNamespaces(), 404, 'NoSuchWarehouseException');
  });

  test('names are checked: an empty level is a 400, never a 500', async () => {
    await refused(admin.createNamespace({ namespace: [] }), 400, 'BadRequestException');
    await refused(admin.createNamespace({ namespace: ['a', ''] }), 400, 'BadRequestException');
    await refused(admin.createNamespace({ namespace: ['x'.repeat(256)] }), 400, 'BadRequestException');
    const bad = await http('POST', 'v1/sales/namespaces', CATALOG_TOKEN, { namespace: 'flat' });
    assert.equal(bad.status, 400);
    assertSpec('IcebergErrorResponse', bad.body);
  });
});

describe('namespaces over plain HTTP', () => {
  test('pages: pageSize and next-page-token walk every namespace once', async () => {
    for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) await admin.createNamespace({ namespace: ['paged', n] }).catch(async (e) => {
      if (e instanceof IcebergError && e.icebergType === 'NoSuchNamespaceException') { await admin.createNamespace({ namespace: ['paged'] }); await admin.createNamespace({ namespace: ['paged', n] }); } else throw e;
    });
    const seen: string[][] = [];
    let token: string | undefined;
    do {
      const res = await http('GET', `v1/sales/namespaces?parent=paged&pageSize=2${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`, CATALOG_TOKEN);
      assert.equal(res.status, 200);
      assertSpec('ListNamespacesResponse', res.body);
      assert.ok(res.body.namespaces.length <= 2);
      seen.push(...res.body.namespaces);
      token = res.body['next-page-token'];
    } while (token);
    assert.deepEqual(seen, ['p1', 'p2', 'p3', 'p4', 'p5'].map((n) => ['paged', n]));
    const bad = await http('GET', 'v1/sales/namespaces?pageToken=garbage', CATALOG_TOKEN);
    assert.equal(bad.status, 400);
  });

  test('the unit separator %1F joins levels in paths', async () => {
    const res = await http('GET', 'v1/sales/namespaces/paged%1Fp1', CATALOG_TOKEN);
    assert.equal(res.status, 200);
    assertSpec('GetNamespaceResponse', res.body);
    assert.deepEqual(res.body.namespace, ['paged', 'p1']);
    const head = await fetch(new URL('v1/sales/namespaces/paged%1Fp1', c.base), { method: 'HEAD', headers: { authorization: `Bearer ${CATALOG_TOKEN}` } });
    assert.equal(head.status, 204);
  });

  test('properties: updates and removals, missing keys reported, overlap is 422', async () => {
    await admin.createNamespace({ namespace: ['props'] }, { properties: { a: '1', b: '2' } });
    const res = await http('POST', 'v1/sales/namespaces/props/properties', CATALOG_TOKEN, { removals: ['a', 'zz'], updates: { c: '3' } });
    assert.equal(res.status, 200);
    assertSpec('UpdateNamespacePropertiesResponse', res.body);
    assert.deepEqual(res.body, { updated: ['c'], removed: ['a'], missing: ['zz'] });
    assert.deepEqual((await admin.loadNamespaceMetadata({ namespace: ['props'] })).properties, { b: '2', c: '3' });
    const overlap = await http('POST', 'v1/sales/namespaces/props/properties', CATALOG_TOKEN, { removals: ['b'], updates: { b: 'x' } });
    assert.equal(overlap.status, 422);
    assert.equal(overlap.body.error.type, 'UnprocessableEntityException');
    const viewer = await http('POST', 'v1/sales/namespaces/props/properties', tokens.viewer, { updates: { d: '4' } });
    assert.equal(viewer.status, 403);
  });
});
