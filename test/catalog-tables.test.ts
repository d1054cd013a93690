// Iceberg REST tables against the real server and a real S3 server: iceberg-js for what it
// offers (create, load, exists, list, update, drop), plain HTTP for the rest (64-bit snapshot ids,
// requirements, the commit race, rename, register, metrics, transactions, ETag, stage-create).
// Metadata files are read back from the object store and parsed as Iceberg metadata.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog, IcebergError } from 'iceberg-js';
import { S3Client, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { assertSpec } from './helpers/iceberg-spec.js';
import { claimKey, IN_FLIGHT_STALE_MS } from '../src/catalog/idempotency.js';

let c: CatalogApp;
let ed: IcebergRestCatalog;
let s3: S3Client;
const tokens: Record<string, string> = {};

const schema = {
  type: 'struct' as const, 'schema-id': 0,
  fields: [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'ts', type: 'timestamp', required: true },
    { id: 3, name: 'tags', type: { type: 'list', 'element-id': 4, element: 'string', 'element-required': false }, required: false },
  ],
};
const BIG = '9123456789012345678'; // above 2^53: JavaScript numbers would change its digits

async function http(method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, body: text ? JSON.parse(text) : null };
}
async function object(location: string): Promise<string> {
  const key = location.replace(/^s3:\/\/warehouse\//, '');
  const out = await s3.send(new GetObjectCommand({ Bucket: 'warehouse', Key: key }));
  return out.Body!.transformToString();
}
async function refused(p: Promise<unknown>, status: number, type: string): Promise<IcebergError> {
  const err = await p.then(() => assert.fail('expected a refusal'), (e: unknown) => e);
  assert.ok(err instanceof IcebergError, String(err));
  assert.equal(err.status, status, err.message);
  assert.equal(err.icebergType, type, err.message);
  return err;
}
const snapshot = (id: string, seq: number, parent?: string) =>
  `{"snapshot-id":${id},${parent ? `"parent-snapshot-id":${parent},` : ''}"sequence-number":${seq},"timestamp-ms":1780000000000,"manifest-list":"s3://warehouse/lake/sales/x/snap-${id}.avro","summary":{"operation":"append"},"schema-id":0}`;
const appendCommit = (id: string, seq: number, expectMain: string | null, parent?: string) =>
  `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":${expectMain ?? 'null'}}],` +
  `"updates":[{"action":"add-snapshot","snapshot":${snapshot(id, seq, parent)}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":${id}}]}`;

before(async () => {
  c = await startCatalogApp();
  s3 = new S3Client({ endpoint: c.s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: c.s3.accessKey, secretAccessKey: c.s3.secretKey } });
  await workspace(c.t, 'sales');
  Object.assign(tokens, await rolePeople(c.t, 'sales'));
  ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.editor } });
  await ed.createNamespace({ namespace: ['web'] });
  await ed.createNamespace({ namespace: ['archive'] });
});
after(async () => { s3.destroy(); await c.close(); });

describe('tables through iceberg-js', () => {
  test('create writes readable metadata to the object store; load, exists and list agree', async () => {
    const created = await ed.createTable({ namespace: ['web'] }, {
      name: 'events', schema,
      'partition-spec': { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' }] } as never,
      properties: { owner: 'web-team' },
    });
    assertSpec('TableMetadata', created);
    assert.equal(created['format-version'], 2);
    assert.equal(created['last-column-id'], 4);
    assert.equal(created['last-partition-id'], 1000);
    assert.deepEqual(created.properties, { owner: 'web-team' });
    assert.match(created.location, /^s3:\/\/warehouse\/lake\/sales\/[0-9a-f-]{36}\/[0-9a-f-]{36}$/);

    const load = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.viewer);
    assert.equal(load.status, 200);
    assertSpec('LoadTableResult', load.body);
    const loc: string = load.body['metadata-location'];
    assert.match(loc, new RegExp(`^${created.location}/metadata/00000-[0-9a-f-]{36}\\.metadata\\.json$`));
    assert.deepEqual(JSON.parse(await object(loc)), load.body.metadata);
    assert.deepEqual(await ed.loadTable({ namespace: ['web'], name: 'events' }), load.body.metadata);
    assert.equal(load.body.config['s3.endpoint'], c.s3.endpoint);

    assert.equal(await ed.tableExists({ namespace: ['web'], name: 'events' }), true);
    assert.equal(await ed.tableExists({ namespace: ['web'], name: 'nope' }), false);
    assert.deepEqual(await ed.listTables({ namespace: ['web'] }), [{ namespace: ['web'], name: 'events' }]);
    await refused(ed.createTable({ namespace: ['web'] }, { name: 'events', schema }), 409, 'AlreadyExistsException');
    await refused(ed.createTable({ namespace: ['ghost'] }, { name: 'x', schema }), 404, 'NoSuchNamespaceException');
    await refused(ed.loadTable({ namespace: ['web'], name: 'nope' }), 404, 'NoSuchTableException');
    // A namespace that holds a table is not dropped.
    const own = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.owner } });
    await refused(own.dropNamespace({ namespace: ['web'] }), 409, 'NamespaceNotEmptyException');
  });

  test('updateTable commits properties; the previous file goes into the metadata log', async () => {
    const before = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.editor);
    const res = await ed.updateTable({ namespace: ['web'], name: 'events' }, {
      requirements: [{ type: 'assert-table-uuid', uuid: before.body.metadata['table-uuid'] }],
      updates: [{ action: 'set-properties', updates: { 'commit.retry.num-retries': '4' } }, { action: 'remove-properties', removals: ['owner'] }],
    } as never);
    assertSpec('CommitTableResponse', res);
    assert.match(res['metadata-location'], /\/metadata\/00001-[0-9a-f-]{36}\.metadata\.json$/);
    assert.deepEqual(res.metadata.properties, { 'commit.retry.num-retries': '4' });
    assert.deepEqual(res.metadata['metadata-log'], [{ 'timestamp-ms': before.body.metadata['last-updated-ms'], 'metadata-file': before.body['metadata-location'] }]);
    assert.deepEqual(JSON.parse(await object(res['metadata-location'])), res.metadata);
    const wrong = await refused(ed.updateTable({ namespace: ['web'], name: 'events' }, {
      requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }], updates: [],
    } as never), 409, 'CommitFailedException');
    assert.match(wrong.message, /^Requirement failed: UUID does not match/);
  });

  test('a viewer may not create or commit; an editor may not drop; the owner drops', async () => {
    const viewer = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.viewer } });
    await refused(viewer.createTable({ namespace: ['web'] }, { name: 'mine', schema }), 403, 'ForbiddenException');
    await ed.createTable({ namespace: ['web'] }, { name: 'scratch', schema });
    const denied = await refused(ed.dropTable({ namespace: ['web'], name: 'scratch' }), 403, 'ForbiddenException');
    assert.equal(denied.message, 'Forbidden: ed@example.test has ws_editor in workspace sales; dropping a table needs ws_admin');
    const own = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.owner } });
    await own.dropTable({ namespace: ['web'], name: 'scratch' });
    assert.equal(await own.tableExists({ namespace: ['web'], name: 'scratch' }), false);
    await refused(own.dropTable({ namespace: ['web'], name: 'scratch' }), 404, 'NoSuchTableException');
    const events = await c.t.services.db.selectFrom('audit_events').select(['action', 'target', 'actor']).where('target', '=', 'table:web.scratch').orderBy('id').execute();
    assert.deepEqual(events.map((e) => e.action), ['catalog.table.create', 'catalog.table.drop']);
  });
});

describe('commits over plain HTTP', () => {
  test('64-bit snapshot ids survive commit, load and the metadata file digit for digit', async () => {
    const res = await http('POST', 'v1/sales/namespaces/web/tables/events', tokens.editor, appendCommit(BIG, 1, null));
    assert.equal(res.status, 200, res.text);
    assert.ok(res.text.includes(`"current-snapshot-id":${BIG}`), res.text);
    const load = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.editor);
    assert.ok(load.text.includes(`"snapshot-id":${BIG}`));
    assert.ok((await object(res.body['metadata-location'])).includes(`"current-snapshot-id":${BIG}`));
    assertSpec('LoadTableResult', load.body);
    assert.deepEqual(load.body.metadata['snapshot-log'].length, 1);
  });

  test('a race of two commits on one table: exactly one winner and one 409, no lost update', async () => {
    const cur = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.editor);
    const main = /"current-snapshot-id":(\d+)/.exec(cur.text)![1];
    const results = await Promise.all([
      http('POST', 'v1/sales/namespaces/web/tables/events', tokens.editor, appendCommit('9200000000000000001', 2, main, main)),
      http('POST', 'v1/sales/namespaces/web/tables/events', tokens.editor, appendCommit('9200000000000000002', 2, main, main)),
    ]);
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 409], results.map((r) => r.text).join('\n'));
    const loser = results.find((r) => r.status === 409)!;
    assert.equal(loser.body.error.type, 'CommitFailedException');
    assertSpec('IcebergErrorResponse', loser.body);
    const winner = results.find((r) => r.status === 200)!;
    const now = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.editor);
    assert.equal(now.body['metadata-location'], winner.body['metadata-location']);
    assert.equal(now.body.metadata.snapshots.length, 2);
  });

  test('commits without conflicting requirements both land (re-applied on the new base)', async () => {
    const results = await Promise.all(['a', 'b', 'c'].map((k) =>
      http('POST', 'v1/sales/namespaces/web/tables/events', tokens.editor, { requirements: [], updates: [{ action: 'set-properties', updates: { [k]: k } }] })));
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200]);
    const now = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.editor);
    for (const k of ['a', 'b', 'c']) assert.equal(now.body.metadata.properties[k], k);
  });

  test('schema evolution, specs, sort orders and refs: every update type checks its input', async () => {
    const url = 'v1/sales/namespaces/web/tables/events';
    const evolved = await http('POST', url, tokens.editor, {
      requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }, { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 4 }],
      updates: [
        { action: 'add-schema', schema: { ...schema, 'schema-id': 1, fields: [...schema.fields, { id: 5, name: 'country', type: 'string', required: false }] }, 'last-column-id': 5 },
        { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: { fields: [{ 'source-id': 5, name: 'country', transform: 'identity' }] } },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': { 'order-id': 1, fields: [{ 'source-id': 1, transform: 'identity', direction: 'asc', 'null-order': 'nulls-first' }] } },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
      ],
    });
    assert.equal(evolved.status, 200, evolved.text);
    const m = evolved.body.metadata;
    assertSpec('TableMetadata', m);
    assert.equal(m['current-schema-id'], 1);
    assert.equal(m['last-column-id'], 5);
    assert.equal(m['default-spec-id'], 1);
    assert.deepEqual(m['partition-specs'][1].fields, [{ name: 'country', transform: 'identity', 'source-id': 5, 'field-id': 1001 }]);
    assert.equal(m['default-sort-order-id'], 1);
    const stale = await http('POST', url, tokens.editor, { requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }], updates: [] });
    assert.equal(stale.status, 409);
    const tag = await http('POST', url, tokens.editor, `{"requirements":[],"updates":[{"action":"set-snapshot-ref","ref-name":"v1","type":"tag","snapshot-id":${BIG}}]}`);
    assert.equal(tag.status, 200, tag.text);
    for (const bad of [
      { updates: [{ action: 'teleport' }] },
      { updates: [{ action: 'set-current-schema', 'schema-id': 42 }] },
      { updates: [{ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 1 }] },
      { updates: [{ action: 'add-schema', schema: { type: 'struct' } }] },
      { requirements: [{ type: 'assert-nothing' }], updates: [] },
      { updates: 'all of them' },
    ]) {
      const r = await http('POST', url, tokens.editor, bad);
      assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.text}`);
      assertSpec('IcebergErrorResponse', r.body);
    }
    const garbage = await http('POST', url, tokens.editor, '{"updates": [');
    assert.equal(garbage.status, 400);
    assert.equal(garbage.body.error.type, 'BadRequestException');
  });

  test('ETag and If-None-Match; snapshots=refs keeps only referenced snapshots', async () => {
    const url = 'v1/sales/namespaces/web/tables/events';
    // A snapshot no ref reaches (a staged write-audit-publish snapshot, say).
    const orphan = await http('POST', url, tokens.editor, `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":${snapshot('9300000000000000003', 9)}}]}`);
    assert.equal(orphan.status, 200, orphan.text);
    const first = await http('GET', url, tokens.viewer);
    const etag = first.headers.get('etag')!;
    assert.ok(etag);
    const again = await http('GET', url, tokens.viewer, undefined, { 'if-none-match': etag });
    assert.equal(again.status, 304);
    const refs = await http('GET', `${url}?snapshots=refs`, tokens.viewer);
    assert.notEqual(refs.headers.get('etag'), etag);
    const referenced = new Set(Object.values(first.body.metadata.refs as Record<string, { 'snapshot-id': number }>).map((r) => String(r['snapshot-id'])));
    assert.ok(first.body.metadata.snapshots.length > referenced.size);
    assert.equal(refs.body.metadata.snapshots.length, referenced.size);
  });

  test('rename moves a table between namespaces; register adopts a metadata file; metrics are accepted', async () => {
    await ed.createTable({ namespace: ['web'] }, { name: 'clicks', schema });
    const r = await http('POST', 'v1/sales/tables/rename', tokens.editor, { source: { namespace: ['web'], name: 'clicks' }, destination: { namespace: ['archive'], name: 'clicks_2025' } });
    assert.equal(r.status, 204, r.text);
    assert.equal(await ed.tableExists({ namespace: ['web'], name: 'clicks' }), false);
    const moved = await http('GET', 'v1/sales/namespaces/archive/tables/clicks_2025', tokens.editor);
    assert.equal(moved.status, 200);
    const clash = await http('POST', 'v1/sales/tables/rename', tokens.editor, { source: { namespace: ['web'], name: 'events' }, destination: { namespace: ['archive'], name: 'clicks_2025' } });
    assert.equal(clash.status, 409);
    const gone = await http('POST', 'v1/sales/tables/rename', tokens.editor, { source: { namespace: ['web'], name: 'nope' }, destination: { namespace: ['archive'], name: 'x' } });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error.type, 'NoSuchTableException');

    const reg = await http('POST', 'v1/sales/namespaces/archive/register', tokens.editor, { name: 'clicks_copy', 'metadata-location': moved.body['metadata-location'] });
    assert.equal(reg.status, 200, reg.text);
    assertSpec('LoadTableResult', reg.body);
    assert.equal(reg.body['metadata-location'], moved.body['metadata-location']);
    const outside = await http('POST', 'v1/sales/namespaces/archive/register', tokens.editor, { name: 'evil', 'metadata-location': 's3://warehouse/elsewhere/x.metadata.json' });
    assert.equal(outside.status, 400);

    const metrics = await http('POST', 'v1/sales/namespaces/archive/tables/clicks_2025/metrics', tokens.viewer, { 'report-type': 'scan-report', 'table-name': 'archive.clicks_2025', 'snapshot-id': 1, filter: true, 'schema-id': 0, 'projected-field-ids': [1], 'projected-field-names': ['id'], metrics: {} });
    assert.equal(metrics.status, 204);
  });

  test('a transaction over two tables is all or nothing', async () => {
    await ed.createTable({ namespace: ['web'] }, { name: 't1', schema });
    await ed.createTable({ namespace: ['web'] }, { name: 't2', schema });
    const change = (name: string, requirements: unknown[]) => ({ identifier: { namespace: ['web'], name }, requirements, updates: [{ action: 'set-properties', updates: { batch: '1' } }] });
    const failing = await http('POST', 'v1/sales/transactions/commit', tokens.editor, { 'table-changes': [change('t1', []), change('t2', [{ type: 'assert-current-schema-id', 'current-schema-id': 7 }])] });
    assert.equal(failing.status, 409);
    for (const t of ['t1', 't2']) assert.equal((await ed.loadTable({ namespace: ['web'], name: t })).properties.batch, undefined);
    const ok = await http('POST', 'v1/sales/transactions/commit', tokens.editor, { 'table-changes': [change('t1', []), change('t2', [])] });
    assert.equal(ok.status, 204, ok.text);
    for (const t of ['t1', 't2']) assert.equal((await ed.loadTable({ namespace: ['web'], name: t })).properties.batch, '1');
  });

  test('stage-create stores nothing; the commit with assert-create makes the table', async () => {
    const staged = await http('POST', 'v1/sales/namespaces/web/tables', tokens.editor, { name: 'staged', schema, 'stage-create': true });
    assert.equal(staged.status, 200, staged.text);
    assertSpec('LoadTableResult', staged.body);
    assert.equal(staged.body['metadata-location'], undefined);
    assert.equal(await ed.tableExists({ namespace: ['web'], name: 'staged' }), false);
    const m = staged.body.metadata;
    const res = await http('POST', 'v1/sales/namespaces/web/tables/staged', tokens.editor, {
      requirements: [{ type: 'assert-create' }],
      updates: [
        { action: 'assign-uuid', uuid: m['table-uuid'] }, { action: 'upgrade-format-version', 'format-version': 2 },
        { action: 'add-schema', schema: m.schemas[0] }, { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: m['partition-specs'][0] }, { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': m['sort-orders'][0] }, { action: 'set-default-sort-order', 'sort-order-id': -1 },
        { action: 'set-location', location: m.location }, { action: 'set-properties', updates: { staged: 'yes' } },
      ],
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.metadata['table-uuid'], m['table-uuid']);
    assert.match(res.body['metadata-location'], /\/metadata\/00000-/);
    const again = await http('POST', 'v1/sales/namespaces/web/tables/staged', tokens.editor, { requirements: [{ type: 'assert-create' }], updates: [] });
    assert.equal(again.status, 409);
  });

  test('format version 1 tables carry the v1 fields; a location outside the warehouse is refused', async () => {
    const v1 = await http('POST', 'v1/sales/namespaces/web/tables', tokens.editor, { name: 'legacy', schema, properties: { 'format-version': '1' } });
    assert.equal(v1.status, 200, v1.text);
    assert.equal(v1.body.metadata['format-version'], 1);
    assert.deepEqual(v1.body.metadata.schema.fields, schema.fields);
    assertSpec('TableMetadata', v1.body.metadata);
    const up = await http('POST', 'v1/sales/namespaces/web/tables/legacy', tokens.editor, { requirements: [], updates: [{ action: 'upgrade-format-version', 'format-version': 2 }] });
    assert.equal(up.body.metadata['format-version'], 2);
    const outside = await http('POST', 'v1/sales/namespaces/web/tables', tokens.editor, { name: 'evil', schema, location: 's3://warehouse/lake/hr/stolen' });
    assert.equal(outside.status, 400);
    const list = await s3.send(new ListObjectsV2Command({ Bucket: 'warehouse', Prefix: 'lake/hr/' }));
    assert.equal(list.KeyCount ?? 0, 0);
  });
});

describe('Idempotency-Key', () => {
  test('a retried commit with the same key is answered from the first, not applied twice', async () => {
    await ed.createTable({ namespace: ['web'] }, { name: 'counter', schema });
    const key = '017f22e2-79b0-7cc3-98c4-dc0c0c07398f';
    const body = `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":${snapshot('9400000000000000001', 1)}}]}`;
    const first = await http('POST', 'v1/sales/namespaces/web/tables/counter', tokens.editor, body, { 'idempotency-key': key });
    assert.equal(first.status, 200, first.text);
    const retry = await http('POST', 'v1/sales/namespaces/web/tables/counter', tokens.editor, body, { 'idempotency-key': key });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(retry.body['metadata-location'], first.body['metadata-location']);
    assert.match(retry.text, /"snapshot-id": ?9400000000000000001/);
    const now = await http('GET', 'v1/sales/namespaces/web/tables/counter', tokens.editor);
    assert.equal(now.body.metadata.snapshots.length, 1);
    // Without the key the same request is a new commit (and fails: the snapshot exists).
    assert.equal((await http('POST', 'v1/sales/namespaces/web/tables/counter', tokens.editor, body)).status, 400);
    // The key for another operation is refused; a key that is no UUID is a 400.
    const other = await http('POST', 'v1/sales/namespaces/web/tables', tokens.editor, { name: 'other', schema }, { 'idempotency-key': key });
    assert.equal(other.status, 422);
    assert.equal((await http('POST', 'v1/sales/namespaces/web/tables', tokens.editor, { name: 'other', schema }, { 'idempotency-key': 'nope' })).status, 400);
    // A replayed 204 (a drop) stays a 204.
    const dropKey = '017f22e2-79b0-7cc3-98c4-dc0c0c073990';
    assert.equal((await http('DELETE', 'v1/sales/namespaces/web/tables/counter', tokens.owner, undefined, { 'idempotency-key': dropKey })).status, 204);
    assert.equal((await http('DELETE', 'v1/sales/namespaces/web/tables/counter', tokens.owner, undefined, { 'idempotency-key': dropKey })).status, 204);
  });

  test('the same key on concurrent requests: exactly one runs, the others get its answer', async () => {
    await ed.createTable({ namespace: ['web'] }, { name: 'raced', schema });
    const key = '017f22e2-79b0-7cc3-98c4-dc0c0c0739a1';
    const body = `{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":${snapshot('9400000000000000002', 1)}}]}`;
    const answers = await Promise.all(Array.from({ length: 8 }, () => http('POST', 'v1/sales/namespaces/web/tables/raced', tokens.editor, body, { 'idempotency-key': key })));
    assert.deepEqual(answers.map((a) => a.status), Array(8).fill(200), answers.map((a) => a.text).join('\n'));
    assert.equal(answers.filter((a) => a.headers.get('idempotent-replayed') !== 'true').length, 1, 'one request ran');
    assert.equal(new Set(answers.map((a) => a.body['metadata-location'])).size, 1);
    const now = await http('GET', 'v1/sales/namespaces/web/tables/raced', tokens.editor);
    assert.equal(now.body.metadata.snapshots.length, 1);
    assert.equal(now.body.metadata['metadata-log'].length, 1, 'one commit: one previous metadata file');
  });

  test('a key held by a request still running: a wait, then 409; a claim whose holder died is taken over', async () => {
    await ed.createTable({ namespace: ['web'] }, { name: 'held', schema });
    const key = '017f22e2-79b0-7cc3-98c4-dc0c0c0739b2';
    const path = 'v1/sales/namespaces/web/tables/held';
    const wh = await c.t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'sales').executeTakeFirstOrThrow();
    // Another replica's request holds the key (claimed, not answered).
    assert.equal(await claimKey(c.t.services.db, wh.id, key, `POST /catalog/v1/:prefix/namespaces/:namespace/tables/:table /catalog/${path}`, c.t.clock.now()), true);
    const body = '{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}';
    const busy = await http('POST', path, tokens.editor, body, { 'idempotency-key': key });
    assert.equal(busy.status, 409, busy.text);
    assert.equal(busy.body.error.type, 'CommitFailedException');
    assert.match(busy.body.error.message, /still running/);
    assert.equal((await http('GET', path, tokens.editor)).body.metadata.properties.k, undefined, 'nothing ran');
    // Its holder died: after IN_FLIGHT_STALE_MS the key is taken over and the request runs once.
    c.t.clock.advance(IN_FLIGHT_STALE_MS + 1000);
    const ran = await http('POST', path, tokens.editor, body, { 'idempotency-key': key });
    assert.equal(ran.status, 200, ran.text);
    assert.equal(ran.headers.get('idempotent-replayed'), null);
    const again = await http('POST', path, tokens.editor, body, { 'idempotency-key': key });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
  });
});
