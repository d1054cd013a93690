// Every requirement and update type of the Iceberg REST specification, committed over plain HTTP
// to the real server (format versions 1 and 2), each commit's metadata file read back from the
// real S3 server and compared with the answer; the iceberg-js calls catalog-tables.test.ts does
// not make (createNamespaceIfNotExists, createTableIfNotExists) and table pages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog } from 'iceberg-js';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { assertSpec } from './helpers/iceberg-spec.js';

let c: CatalogApp;
let token = '';
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'ts', type: 'timestamp', required: false }] };
const URL_T = 'v1/sales/namespaces/ops/tables/';

async function http(method: string, path: string, body?: unknown) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

/** Commits to `table`; on success, the metadata file in the object store is the answer's metadata. */
async function commit(table: string, requirements: unknown[], updates: unknown[], status = 200) {
  const r = await http('POST', URL_T + table, { requirements, updates });
  assert.equal(r.status, status, r.text);
  if (status !== 200) { assertSpec('IcebergErrorResponse', r.body); return r; }
  assertSpec('CommitTableResponse', r.body);
  const key = (r.body['metadata-location'] as string).replace(/^s3:\/\/warehouse\//, '');
  assert.deepEqual(JSON.parse(Buffer.from((await c.t.services.s3.get(key))!).toString()), r.body.metadata);
  return r;
}
const snap = (id: number, seq: number | null, parent?: number) => ({
  'snapshot-id': id, ...(parent ? { 'parent-snapshot-id': parent } : {}), ...(seq === null ? {} : { 'sequence-number': seq }),
  'timestamp-ms': 1780000000000 + id, 'manifest-list': `s3://warehouse/lake/sales/m/snap-${id}.avro`, summary: { operation: 'append' }, 'schema-id': 0,
});

before(async () => {
  c = await startCatalogApp();
  await workspace(c.t, 'sales');
  token = (await rolePeople(c.t, 'sales')).editor;
  const ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token } });
  await ed.createNamespace({ namespace: ['ops'] });
});
after(async () => { await c.close(); });

test('iceberg-js createNamespaceIfNotExists and createTableIfNotExists: made once, found the second time', async () => {
  const ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token } });
  await ed.createNamespaceIfNotExists({ namespace: ['ops', 'daily'] }, { properties: { a: '1' } });
  await ed.createNamespaceIfNotExists({ namespace: ['ops', 'daily'] }, { properties: { a: '2' } });
  assert.deepEqual(await ed.loadNamespaceMetadata({ namespace: ['ops', 'daily'] }), { properties: { a: '1' } });
  const first = await ed.createTableIfNotExists({ namespace: ['ops', 'daily'] }, { name: 'once', schema: schema as never });
  const second = await ed.createTableIfNotExists({ namespace: ['ops', 'daily'] }, { name: 'once', schema: schema as never });
  assert.equal(second['table-uuid'], first['table-uuid']);
});

test('tables are listed by pages: pageSize and next-page-token walk every table once', async () => {
  const ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token } });
  await ed.createNamespace({ namespace: ['paged'] });
  for (const n of ['t1', 't2', 't3', 't4', 't5']) await ed.createTable({ namespace: ['paged'] }, { name: n, schema: schema as never });
  const seen: string[] = [];
  let next: string | undefined;
  do {
    const r = await http('GET', `v1/sales/namespaces/paged/tables?pageSize=2${next ? `&pageToken=${encodeURIComponent(next)}` : ''}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.identifiers.length <= 2);
    seen.push(...r.body.identifiers.map((i: { name: string }) => i.name));
    next = r.body['next-page-token'];
  } while (next);
  assert.deepEqual(seen, ['t1', 't2', 't3', 't4', 't5']);
});

test('every requirement type: each holds on the current metadata and fails (409) on a stale value', async () => {
  const created = await http('POST', 'v1/sales/namespaces/ops/tables', { name: 'req', schema, 'partition-spec': { fields: [{ 'source-id': 2, name: 'ts_day', transform: 'day' }] } });
  assert.equal(created.status, 200, created.text);
  const m = created.body.metadata;
  const current = [
    { type: 'assert-table-uuid', uuid: m['table-uuid'] },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null },
    { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': m['last-column-id'] },
    { type: 'assert-current-schema-id', 'current-schema-id': m['current-schema-id'] },
    { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': m['last-partition-id'] },
    { type: 'assert-default-spec-id', 'default-spec-id': m['default-spec-id'] },
    { type: 'assert-default-sort-order-id', 'default-sort-order-id': m['default-sort-order-id'] },
  ];
  await commit('req', current, [{ action: 'set-properties', updates: { checked: 'all' } }]);
  const stale: Array<[unknown, RegExp]> = [
    [{ type: 'assert-create' }, /^Requirement failed: table already exists$/],
    [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }, /UUID does not match/],
    [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 7 }, /main is missing, expected 7/],
    [{ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 1 }, /last assigned field id changed: expected 1 != 2/],
    [{ type: 'assert-current-schema-id', 'current-schema-id': 3 }, /current schema changed/],
    [{ type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 999 }, /last assigned partition id changed: expected 999 != 1000/],
    [{ type: 'assert-default-spec-id', 'default-spec-id': 4 }, /default partition spec changed: expected 4 != 0/],
    [{ type: 'assert-default-sort-order-id', 'default-sort-order-id': 5 }, /default sort order changed: expected 5 != 0/],
  ];
  for (const [req, message] of stale) {
    const r = await commit('req', [req], [{ action: 'set-properties', updates: { stale: 'yes' } }], 409);
    assert.equal(r.body.error.type, 'CommitFailedException');
    assert.match(r.body.error.message, message);
  }
  await commit('req', [], [{ action: 'add-snapshot', snapshot: snap(1, 1) }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 1 }]);
  // A branch created by someone else since: `snapshot-id: null` asserts it does not exist yet.
  const created2 = await commit('req', [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], [], 409);
  assert.match(created2.body.error.message, /main was created concurrently/);
  const after = await http('GET', URL_T + 'req');
  assert.equal(after.body.metadata.properties.stale, undefined, 'no failed commit applied anything');
});

test('snapshots, refs and statistics: add, set, remove (format version 2)', async () => {
  assert.equal((await http('POST', 'v1/sales/namespaces/ops/tables', { name: 'snaps', schema })).status, 200);
  await commit('snaps', [], [
    { action: 'add-snapshot', snapshot: snap(10, 1) },
    { action: 'add-snapshot', snapshot: snap(11, 2, 10) },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 11 },
    { action: 'set-snapshot-ref', 'ref-name': 'audit', type: 'tag', 'snapshot-id': 10, 'max-ref-age-ms': 86400000 },
    { action: 'set-statistics', statistics: { 'snapshot-id': 10, 'statistics-path': 's3://warehouse/lake/sales/m/10.stats', 'file-size-in-bytes': 100, 'file-footer-size-in-bytes': 10, 'blob-metadata': [] } },
    { action: 'set-statistics', statistics: { 'snapshot-id': 11, 'statistics-path': 's3://warehouse/lake/sales/m/11.stats', 'file-size-in-bytes': 100, 'file-footer-size-in-bytes': 10, 'blob-metadata': [] } },
    { action: 'set-partition-statistics', 'partition-statistics': { 'snapshot-id': 11, 'statistics-path': 's3://warehouse/lake/sales/m/11.pstats', 'file-size-in-bytes': 50 } },
  ]);
  const loaded = await http('GET', URL_T + 'snaps');
  let m = loaded.body.metadata;
  assertSpec('TableMetadata', m);
  assert.equal(m['current-snapshot-id'], 11);
  assert.equal(m['last-sequence-number'], 2);
  assert.deepEqual(m.refs, { main: { 'snapshot-id': 11, type: 'branch' }, audit: { 'snapshot-id': 10, type: 'tag', 'max-ref-age-ms': 86400000 } });
  assert.deepEqual(m.statistics.map((s: { 'snapshot-id': number }) => s['snapshot-id']), [10, 11]);
  assert.equal(m['partition-statistics'].length, 1);
  // A snapshot's sequence number may not go back when it has a parent.
  await commit('snaps', [], [{ action: 'add-snapshot', snapshot: snap(12, 1, 11) }], 400);

  m = (await commit('snaps', [], [
    { action: 'remove-statistics', 'snapshot-id': 11 },
    { action: 'remove-partition-statistics', 'snapshot-id': 11 },
    { action: 'remove-snapshot-ref', 'ref-name': 'audit' },
  ])).body.metadata;
  assert.deepEqual(m.statistics.map((s: { 'snapshot-id': number }) => s['snapshot-id']), [10]);
  assert.deepEqual(m['partition-statistics'], []);
  assert.deepEqual(Object.keys(m.refs), ['main']);

  // Removing a snapshot takes its statistics and log entries with it.
  m = (await commit('snaps', [], [{ action: 'remove-snapshots', 'snapshot-ids': [10] }])).body.metadata;
  assert.deepEqual(m.snapshots.map((s: { 'snapshot-id': number }) => s['snapshot-id']), [11]);
  assert.deepEqual(m.statistics, []);
  assert.deepEqual(m['snapshot-log'].map((e: { 'snapshot-id': number }) => e['snapshot-id']), [11]);
  assertSpec('TableMetadata', m);
  // Removing main's ref leaves no current snapshot.
  m = (await commit('snaps', [], [{ action: 'remove-snapshot-ref', 'ref-name': 'main' }])).body.metadata;
  assert.equal(m['current-snapshot-id'], undefined);
  await commit('snaps', [], [{ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'tag', 'snapshot-id': 11 }], 400);
});

test('schemas, specs, location and encryption keys: remove what is not current, refuse what is', async () => {
  assert.equal((await http('POST', 'v1/sales/namespaces/ops/tables', { name: 'evolve', schema })).status, 200);
  let m = (await commit('evolve', [], [
    { action: 'add-schema', schema: { ...schema, 'schema-id': 1, fields: [...schema.fields, { id: 3, name: 'v', type: 'string', required: false }] } },
    { action: 'set-current-schema', 'schema-id': -1 },
    { action: 'add-spec', spec: { fields: [{ 'source-id': 3, name: 'v', transform: 'identity' }] } },
    { action: 'set-default-spec', 'spec-id': -1 },
  ])).body.metadata;
  assert.deepEqual(m.schemas.map((s: { 'schema-id': number }) => s['schema-id']), [0, 1]);
  assert.equal(m['last-column-id'], 3);
  await commit('evolve', [], [{ action: 'remove-schemas', 'schema-ids': [1] }], 400);
  await commit('evolve', [], [{ action: 'remove-partition-specs', 'spec-ids': [1] }], 400);
  m = (await commit('evolve', [], [{ action: 'remove-schemas', 'schema-ids': [0] }, { action: 'remove-partition-specs', 'spec-ids': [0] }])).body.metadata;
  assert.deepEqual(m.schemas.map((s: { 'schema-id': number }) => s['schema-id']), [1]);
  assert.deepEqual(m['partition-specs'].map((s: { 'spec-id': number }) => s['spec-id']), [1]);
  assertSpec('TableMetadata', m);

  m = (await commit('evolve', [], [
    { action: 'add-encryption-key', 'encryption-key': { 'key-id': 'k1', 'encrypted-key-metadata': Buffer.from('wrapped').toString('base64') } },
    { action: 'add-encryption-key', 'encryption-key': { 'key-id': 'k2', 'encrypted-key-metadata': Buffer.from('other').toString('base64'), 'encrypted-by-id': 'k1' } },
  ])).body.metadata;
  assert.deepEqual(m['encryption-keys'].map((k: { 'key-id': string }) => k['key-id']), ['k1', 'k2']);
  assertSpec('TableMetadata', m);
  m = (await commit('evolve', [], [{ action: 'remove-encryption-key', 'key-id': 'k1' }])).body.metadata;
  assert.deepEqual(m['encryption-keys'].map((k: { 'key-id': string }) => k['key-id']), ['k2']);

  // set-location: inside the warehouse the next metadata file goes under the new location.
  const moved = `s3://warehouse/lake/sales/moved/evolve`;
  const r = await commit('evolve', [], [{ action: 'set-location', location: `${moved}/` }]);
  assert.equal(r.body.metadata.location, moved);
  assert.ok((r.body['metadata-location'] as string).startsWith(`${moved}/metadata/`), r.body['metadata-location']);
  await commit('evolve', [], [{ action: 'set-location', location: 's3://warehouse/lake/other/evolve' }], 400);
  await commit('evolve', [], [{ action: 'assign-uuid', uuid: '00000000-0000-0000-0000-000000000001' }], 400);
});

test('format version 1: snapshots without sequence numbers, the single schema and spec kept in step, then an upgrade', async () => {
  const created = await http('POST', 'v1/sales/namespaces/ops/tables', { name: 'legacy', schema, properties: { 'format-version': '1' } });
  assert.equal(created.status, 200, created.text);
  let m = (await commit('legacy', [], [
    { action: 'add-snapshot', snapshot: snap(20, null) },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 20 },
    { action: 'add-schema', schema: { ...schema, 'schema-id': 1, fields: [...schema.fields, { id: 3, name: 'x', type: 'int', required: false }] } },
    { action: 'set-current-schema', 'schema-id': -1 },
    { action: 'add-spec', spec: { fields: [{ 'source-id': 1, name: 'id_bucket', transform: 'bucket[4]' }] } },
    { action: 'set-default-spec', 'spec-id': -1 },
  ])).body.metadata;
  assert.equal(m['format-version'], 1);
  assert.equal(m['current-snapshot-id'], 20);
  assert.deepEqual(m.schema, m.schemas[1], 'the v1 `schema` field is the current schema');
  assert.deepEqual(m['partition-spec'], m['partition-specs'][1].fields);
  assertSpec('TableMetadata', m);
  m = (await commit('legacy', [], [{ action: 'upgrade-format-version', 'format-version': 2 }])).body.metadata;
  assert.equal(m['format-version'], 2);
  await commit('legacy', [], [{ action: 'upgrade-format-version', 'format-version': 1 }], 400);
  await commit('legacy', [], [{ action: 'upgrade-format-version', 'format-version': 4 }], 400);
});
