// The console's read-only catalog routes (/api/workspaces/{ws}/catalog/...) over a real catalog
// on PostgreSQL and S3 (s3rver): tables and views made through the Iceberg REST routes (iceberg-js
// and plain HTTP), read back by signed-in people. The decision is the catalog's: the workspace
// role, then the policy service's deny items; a listing leaves out what a policy hides from the
// person, and a hidden name is 403 whether it exists or not.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog } from 'iceberg-js';
import { Browser, startTestApp } from './helpers/app.js';
import { signInAdmin } from './helpers/workflow.js';
import { startCatalogApp, workspace, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import type { WorkspaceRole } from '../src/db/index.js';
import { buildOpenApiDocument } from '../src/api/openapi.js';

let c: CatalogApp;
let vera: Browser; let ada: Browser; let outsider: Browser;
const BIG = '9223372036854775001';
const SEP = '%1F';
const A = '/api/workspaces/sales/catalog';
const schema = {
  type: 'struct', 'schema-id': 0, fields: [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'ts', type: 'timestamptz', required: false, doc: 'when it happened' },
    { id: 3, name: 'tags', type: { type: 'list', 'element-id': 4, element: 'string', 'element-required': false }, required: false },
  ],
};

async function signIn(email: string, roles: Record<string, WorkspaceRole>, ip: string): Promise<Browser> {
  const u = await createLocalUser(c.t.services.db, { email, password: `password-of-${email}` });
  for (const [slug, role] of Object.entries(roles)) await grantWorkspaceRoleToUser(c.t.services.db, await workspace(c.t, slug), u.id, role, null, c.t.clock.now());
  const b = new Browser(c.t, ip);
  const res = await b.login(email, `password-of-${email}`);
  assert.equal(res.statusCode, 200, res.body);
  return b;
}

async function catalogPost(path: string, body: string | object) {
  const res = await fetch(new URL(path, c.base), {
    method: 'POST', headers: { authorization: `Bearer ${CATALOG_TOKEN}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.clone().text());
}

const snapshot = (id: string, seq: number, parent: string | null, op: string, added: number) =>
  `{"snapshot-id":${id},${parent ? `"parent-snapshot-id":${parent},` : ''}"sequence-number":${seq},"timestamp-ms":${1780000000000 + seq * 3_600_000},` +
  `"manifest-list":"s3://warehouse/lake/sales/x/snap-${id}.avro","summary":{"operation":"${op}","added-records":"${added}"},"schema-id":0}`;
const append = (id: string, seq: number, parent: string | null, op: string, added: number) =>
  `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":${snapshot(id, seq, parent, op, added)}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":${id}}]}`;

before(async () => {
  c = await startCatalogApp({ SVC_POLICY_SERVICE__ENABLED: 'true' });
  await workspace(c.t, 'sales');
  await workspace(c.t, 'other');
  vera = await signIn('vera@example.test', { sales: 'ws_viewer' }, '198.51.100.21');
  ada = await signIn('ada@example.test', { sales: 'ws_admin' }, '198.51.100.22');
  outsider = await signIn('olga@example.test', { other: 'ws_viewer' }, '198.51.100.23');
  const now = c.t.clock.now();
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', {
    name: 'salaries are private', resources: { catalog: ['sales'], schema: ['hr'], table: ['salar*'] },
    deny: [{ roles: ['ws_viewer'], accesses: ['select'] }],
  }, now);
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', {
    name: 'the vault', resources: { catalog: ['sales'], schema: ['vault'] },
    deny: [{ users: ['vera@example.test'], accesses: ['all'] }],
  }, now);
  const admin = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: CATALOG_TOKEN } });
  for (const ns of [['hr'], ['hr', 'eu'], ['vault'], ['web']]) await admin.createNamespace({ namespace: ns }, { properties: { owner: `${ns.join('.')}-team` } });
  await admin.createTable({ namespace: ['hr'] }, { name: 'salaries', schema: schema as never });
  await admin.createTable({ namespace: ['hr'] }, { name: 'teams', schema: schema as never });
  await admin.createTable({ namespace: ['vault'] }, { name: 'keys', schema: schema as never });
  await admin.createTable({ namespace: ['web'] }, {
    name: 'events', schema: schema as never, properties: { 'write.format.default': 'parquet' },
    'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' }] } as never,
    'write-order': { 'order-id': 1, fields: [{ 'source-id': 1, transform: 'identity', direction: 'desc', 'null-order': 'nulls-last' }] } as never,
  });
  await catalogPost('v1/sales/namespaces/web/tables/events', append('1001', 1, null, 'append', 10));
  await catalogPost('v1/sales/namespaces/web/tables/events', append(BIG, 2, '1001', 'overwrite', 25));
  await catalogPost('v1/sales/namespaces/web/views', {
    name: 'daily', schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] }, properties: { comment: 'daily counts' },
    'view-version': { 'version-id': 1, 'timestamp-ms': 1780000000000, 'schema-id': 0, summary: { 'engine-name': 'trino' }, representations: [{ type: 'sql', sql: 'SELECT count(*) AS n FROM web.events', dialect: 'trino' }], 'default-namespace': ['web'] },
  });
});
after(async () => { await c.close(); });

test('namespaces, nested and by pages; a namespace a policy hides is left out', async () => {
  const top = await ada.get(`${A}/namespaces`);
  assert.equal(top.statusCode, 200, top.body);
  assert.deepEqual(top.json(), { namespaces: [{ namespace: ['hr'], name: 'hr' }, { namespace: ['vault'], name: 'vault' }, { namespace: ['web'], name: 'web' }], next_page_token: null });
  // The policy on the vault names vera: she never sees it, and loading it is refused naming the policy.
  assert.deepEqual((await vera.get(`${A}/namespaces`)).json().namespaces.map((n: { name: string }) => n.name), ['hr', 'web']);
  const vault = await vera.get(`${A}/namespaces/vault`);
  assert.equal(vault.statusCode, 403);
  assert.deepEqual(vault.json(), { error: 'forbidden', message: 'Forbidden: policy "the vault" denies select on sales.vault to vera@example.test' });
  // ... nor its tables, nor a name inside it that does not exist (no leak either way).
  assert.equal((await vera.get(`${A}/namespaces/vault/tables`)).statusCode, 403);
  assert.equal((await vera.get(`${A}/namespaces/vault/tables/ghost`)).statusCode, 403);
  assert.equal((await ada.get(`${A}/namespaces/vault/tables/ghost`)).statusCode, 404);

  const children = await vera.get(`${A}/namespaces?parent=hr`);
  assert.deepEqual(children.json().namespaces, [{ namespace: ['hr', 'eu'], name: 'hr.eu' }]);
  const eu = await vera.get(`${A}/namespaces/hr${SEP}eu`);
  assert.deepEqual(eu.json(), { namespace: ['hr', 'eu'], name: 'hr.eu', properties: { owner: 'hr.eu-team' } });

  const first = (await ada.get(`${A}/namespaces?limit=2`)).json();
  assert.deepEqual(first.namespaces.map((n: { name: string }) => n.name), ['hr', 'vault']);
  assert.ok(first.next_page_token);
  const second = (await ada.get(`${A}/namespaces?limit=2&page_token=${encodeURIComponent(first.next_page_token)}`)).json();
  assert.deepEqual(second, { namespaces: [{ namespace: ['web'], name: 'web' }], next_page_token: null });
});

test('tables and views of a namespace; a table a policy hides is absent from the list and 403 to load', async () => {
  assert.deepEqual((await ada.get(`${A}/namespaces/hr/tables`)).json(), { namespace: ['hr'], names: ['salaries', 'teams'], next_page_token: null });
  assert.deepEqual((await vera.get(`${A}/namespaces/hr/tables`)).json(), { namespace: ['hr'], names: ['teams'], next_page_token: null });
  const hidden = await vera.get(`${A}/namespaces/hr/tables/salaries`);
  assert.equal(hidden.statusCode, 403);
  assert.equal(hidden.json().message, 'Forbidden: policy "salaries are private" denies select on sales.hr.salaries to vera@example.test');
  // A name the pattern covers is refused the same way whether it exists or not.
  assert.equal((await vera.get(`${A}/namespaces/hr/tables/salaries_2030`)).statusCode, 403);
  assert.equal((await vera.get(`${A}/namespaces/hr/tables/teams`)).statusCode, 200);
  assert.equal((await ada.get(`${A}/namespaces/hr/tables/salaries`)).statusCode, 200);

  assert.deepEqual((await vera.get(`${A}/namespaces/web/tables`)).json().names, ['events']);
  assert.deepEqual((await vera.get(`${A}/namespaces/web/views`)).json().names, ['daily']);
  assert.deepEqual((await vera.get(`${A}/namespaces/hr/views`)).json().names, []);
});

test('a table: columns with types and nullability, partitioning, sort order, properties, snapshots newest first, refs', async () => {
  const res = await vera.get(`${A}/namespaces/web/tables/events`);
  assert.equal(res.statusCode, 200, res.body);
  const t = res.json();
  assert.equal(t.name, 'events');
  assert.deepEqual(t.namespace, ['web']);
  assert.equal(t.format_version, 2);
  assert.match(t.metadata_location, /^s3:\/\/warehouse\/lake\/sales\/.+\/metadata\/00002-[0-9a-f-]{36}\.metadata\.json$/);
  assert.deepEqual(t.schema.columns, [
    { id: 1, name: 'id', type: 'long', required: true, doc: null },
    { id: 2, name: 'ts', type: 'timestamptz', required: false, doc: 'when it happened' },
    { id: 3, name: 'tags', type: 'list<string>', required: false, doc: null },
  ]);
  assert.deepEqual(t.partition_spec.fields, [{ name: 'ts_day', transform: 'day', source_id: 2, source: 'ts', field_id: 1000 }]);
  assert.deepEqual(t.sort_order.fields, [{ transform: 'identity', source_id: 1, source: 'id', direction: 'desc', null_order: 'nulls-last' }]);
  assert.equal(t.properties['write.format.default'], 'parquet');
  // The 64-bit id goes out digit for digit, as a string.
  assert.equal(t.current_snapshot_id, BIG);
  assert.equal(t.snapshots_total, 2);
  assert.deepEqual(t.snapshots.map((s: { snapshot_id: string; parent_id: string | null; operation: string; timestamp: string }) => [s.snapshot_id, s.parent_id, s.operation, s.timestamp]), [
    [BIG, '1001', 'overwrite', '2026-05-28T22:26:40.000Z'],
    ['1001', null, 'append', '2026-05-28T21:26:40.000Z'],
  ]);
  assert.deepEqual(t.snapshots[0].summary, { operation: 'overwrite', 'added-records': '25' });
  assert.deepEqual(t.refs, [{ name: 'main', type: 'branch', snapshot_id: BIG }]);
  // A view's name is not a table (and the other way round).
  assert.equal((await vera.get(`${A}/namespaces/web/tables/daily`)).json().message, 'Table does not exist: web.daily');
});

test('a view: its SQL, schema and properties', async () => {
  const res = await vera.get(`${A}/namespaces/web/views/daily`);
  assert.equal(res.statusCode, 200, res.body);
  const v = res.json();
  assert.deepEqual(v.representations, [{ dialect: 'trino', sql: 'SELECT count(*) AS n FROM web.events' }]);
  assert.deepEqual(v.schema.columns, [{ id: 1, name: 'n', type: 'long', required: false, doc: null }]);
  assert.deepEqual(v.properties, { comment: 'daily counts' });
  assert.deepEqual(v.default_namespace, ['web']);
  assert.equal(v.version_id, 1);
  assert.equal(v.timestamp, '2026-05-28T20:26:40.000Z');
  assert.equal((await vera.get(`${A}/namespaces/web/views/events`)).json().message, 'View does not exist: web.events');
});

test('no session is 401; a person without a role in the workspace is 404; bad input is a clear 400', async () => {
  assert.equal((await new Browser(c.t, '198.51.100.29').get(`${A}/namespaces`)).statusCode, 401);
  const none = await outsider.get(`${A}/namespaces/web/tables/events`);
  assert.equal(none.statusCode, 404);
  assert.equal(none.json().message, 'workspace does not exist: sales');
  const missing = await ada.get(`${A}/namespaces/ghost/tables`);
  assert.deepEqual([missing.statusCode, missing.json().message], [404, 'Namespace does not exist: ghost']);
  const badToken = await ada.get(`${A}/namespaces?page_token=%%%`);
  assert.deepEqual([badToken.statusCode, badToken.json().message], [400, 'invalid page_token']);
  const control = await ada.get(`${A}/namespaces/web${SEP}${SEP}x/tables`);
  assert.deepEqual([control.statusCode, control.json().message], [400, 'namespace level must be a non-empty string']);
  const deep = await ada.get(`${A}/namespaces/${Array(17).fill('a').join(SEP)}`);
  assert.deepEqual([deep.statusCode, deep.json().message], [400, 'namespace is deeper than 16 levels']);
  const big = await ada.get(`${A}/namespaces?limit=5000`);
  assert.equal(big.statusCode, 400);
  assert.match(big.json().message, /^invalid querystring at limit/);
  const tooLong = await ada.get(`${A}/namespaces/web/tables/${'t'.repeat(256)}`);
  // Any path segment over 255 characters is stopped at the edge (src/api/input-guard.ts).
  assert.deepEqual([tooLong.statusCode, tooLong.json().message], [414, 'a path segment of the URL is too long']);
});

test('the routes are in the OpenAPI document the console client is generated from', async () => {
  const doc = await buildOpenApiDocument() as { paths: Record<string, { get?: unknown }> };
  for (const p of ['/api/workspaces/{ws}/catalog/namespaces', '/api/workspaces/{ws}/catalog/namespaces/{namespace}/tables/{name}', '/api/workspaces/{ws}/catalog/namespaces/{namespace}/views/{name}']) {
    assert.ok(doc.paths[p]?.get, `${p} documented`);
  }
});

test('with the catalog off, every route says so (404), after the session and role checks', async () => {
  const off = await startTestApp();
  try {
    const { browser } = await signInAdmin(off);
    const res = await browser.get('/api/workspaces/default/catalog/namespaces');
    assert.deepEqual([res.statusCode, res.json()], [404, { error: 'not_found', message: 'the catalog is not enabled on this service (catalog.enabled)' }]);
  } finally { await off.close(); }
});
