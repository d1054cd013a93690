// Issue 25 point 9: the catalog refuses what no engine could read. A create (or an add-schema,
// add-spec or add-sort-order update) whose schema names an unknown type, or whose partition spec
// or sort order breaks the Iceberg specification, is 400 BadRequestException and stores nothing:
// no table row, no metadata file, no change to the table. Real server, real S3 (s3rver).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { S3Client, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';

let c: CatalogApp;
let s3: S3Client;
let editor: string;

async function http(method: string, path: string, body?: unknown) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${editor}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
async function objectCount(): Promise<number> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: 'warehouse', Prefix: 'lake/' }));
  return out.KeyCount ?? 0;
}

const field = (id: number, name: string, type: unknown, required = false) => ({ id, name, type, required });
const good = [field(1, 'id', 'long', true), field(2, 'ts', 'timestamptz'), field(3, 'name', 'string'), field(4, 'price', 'decimal(10, 2)'), field(5, 'ok', 'boolean')];
const schema = (fields: unknown[], extra: Record<string, unknown> = {}) => ({ type: 'struct', 'schema-id': 0, fields, ...extra });
const spec = (...fields: Array<Record<string, unknown>>) => ({ 'spec-id': 0, fields });

/** A create that must be refused: 400 BadRequestException naming `why`, and nothing stored. */
async function refusedCreate(name: string, req: Record<string, unknown>, why: RegExp) {
  const before = await objectCount();
  const res = await http('POST', 'v1/sales/namespaces/web/tables', { name, ...req });
  assert.equal(res.status, 400, JSON.stringify(res.body));
  assert.equal(res.body.error.type, 'BadRequestException');
  assert.match(res.body.error.message, why);
  assert.equal((await http('GET', `v1/sales/namespaces/web/tables/${name}`)).status, 404, 'no table was created');
  assert.equal(await objectCount(), before, 'no metadata file was written');
}

before(async () => {
  c = await startCatalogApp();
  s3 = new S3Client({ endpoint: c.s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: c.s3.accessKey, secretAccessKey: c.s3.secretKey } });
  await workspace(c.t, 'sales');
  editor = (await rolePeople(c.t, 'sales')).editor;
  assert.equal((await http('POST', 'v1/sales/namespaces', { namespace: ['web'] })).status, 200);
});
after(async () => { s3.destroy(); await c.close(); });

describe('create refuses schemas no engine could read', () => {
  test('an unknown field type, at the top or nested in a list, map or struct', async () => {
    await refusedCreate('t1', { schema: schema([field(1, 'id', 'long', true), field(2, 'x', 'notatype')]) }, /field "x" has an unknown type "notatype"/);
    await refusedCreate('t2', { schema: schema([field(1, 'tags', { type: 'list', 'element-id': 2, 'element-required': false, element: 'strin' })]) }, /unknown type "strin"/);
    await refusedCreate('t3', { schema: schema([field(1, 'm', { type: 'map', 'key-id': 2, key: 'string', 'value-id': 3, 'value-required': false, value: { type: 'record' } })]) }, /unknown type "record"/);
    await refusedCreate('t4', { schema: schema([field(1, 's', { type: 'struct', fields: [field(2, 'a', 'decimal(40,2)')] })]) }, /precision must be 1 to 38/);
  });

  test('duplicate field ids, duplicate names, reserved ids', async () => {
    await refusedCreate('t5', { schema: schema([field(1, 'a', 'int'), field(1, 'b', 'int')]) }, /field id 1 is used twice/);
    await refusedCreate('t6', { schema: schema([field(1, 'a', 'int'), field(2, 'a', 'long')]) }, /two fields named "a"/);
    await refusedCreate('t7', { schema: schema([field(2147483500, 'a', 'int')]) }, /reserved for metadata columns/);
  });

  test('a v3 type in a v2 table, an unknown-typed required field, a bad identifier field', async () => {
    await refusedCreate('t8', { schema: schema([field(1, 'ts', 'timestamp_ns')]) }, /timestamp_ns, which needs format version 3/);
    await refusedCreate('t9', { schema: schema([field(1, 'u', 'unknown', true)]), properties: { 'format-version': '3' } }, /must be optional/);
    await refusedCreate('t10', { schema: schema(good, { 'identifier-field-ids': [3] }) }, /identifier field name must be required/);
    await refusedCreate('t11', { schema: schema(good, { 'identifier-field-ids': [9] }) }, /identifier field id 9 is not a field/);
    const v3 = await http('POST', 'v1/sales/namespaces/web/tables', { name: 'ns_v3', schema: schema([field(1, 'ts', 'timestamp_ns'), field(2, 'u', 'unknown')]), properties: { 'format-version': '3' } });
    assert.equal(v3.status, 200, JSON.stringify(v3.body));
  });
});

describe('create refuses partition specs and sort orders that break the specification', () => {
  test('unknown source id, a transform the source type does not take, an unknown transform', async () => {
    await refusedCreate('p1', { schema: schema(good), 'partition-spec': spec({ 'source-id': 42, 'field-id': 1000, name: 'x', transform: 'identity' }) }, /source-id 42 is not a field/);
    await refusedCreate('p2', { schema: schema(good), 'partition-spec': spec({ 'source-id': 5, 'field-id': 1000, name: 'ok_bucket', transform: 'bucket[4]' }) }, /bucket\[4\] cannot be applied to ok of type boolean/);
    await refusedCreate('p3', { schema: schema(good), 'partition-spec': spec({ 'source-id': 3, 'field-id': 1000, name: 'name_day', transform: 'day' }) }, /day cannot be applied to name of type string/);
    await refusedCreate('p4', { schema: schema(good), 'partition-spec': spec({ 'source-id': 1, 'field-id': 1000, name: 'id_x', transform: 'frobnicate' }) }, /unknown transform "frobnicate"/);
    await refusedCreate('p5', { schema: schema(good), 'partition-spec': spec({ 'source-id': 1, 'field-id': 1000, name: 'id_b', transform: 'bucket[0]' }) }, /number of buckets must be 1/);
    await refusedCreate('p6', { schema: schema([...good, field(6, 'tags', { type: 'list', 'element-id': 7, 'element-required': true, element: 'string' })]), 'partition-spec': spec({ 'source-id': 7, 'field-id': 1000, name: 'tag', transform: 'identity' }) }, /inside a list or a map/);
  });

  test('duplicate names, a name that is another column, a redundant field', async () => {
    await refusedCreate('p7', { schema: schema(good), 'partition-spec': spec({ 'source-id': 1, name: 'k', transform: 'bucket[4]' }, { 'source-id': 3, name: 'k', transform: 'truncate[2]' }) }, /two fields are named "k"/);
    await refusedCreate('p8', { schema: schema(good), 'partition-spec': spec({ 'source-id': 1, name: 'name', transform: 'bucket[4]' }) }, /the name is a column of the schema/);
    await refusedCreate('p9', { schema: schema(good), 'partition-spec': spec({ 'source-id': 2, name: 'd1', transform: 'day' }, { 'source-id': 2, name: 'd2', transform: 'day' }) }, /already partitioned by day/);
  });

  test('a sort order on an unknown column or with a transform its type does not take', async () => {
    const order = (f: Record<string, unknown>) => ({ 'order-id': 1, fields: [{ direction: 'asc', 'null-order': 'nulls-first', ...f }] });
    await refusedCreate('o1', { schema: schema(good), 'write-order': order({ 'source-id': 77, transform: 'identity' }) }, /source-id 77 is not a field/);
    await refusedCreate('o2', { schema: schema(good), 'write-order': order({ 'source-id': 5, transform: 'truncate[3]' }) }, /truncate\[3\] cannot be applied to ok/);
  });

  test('every transform on a source type it takes is accepted', async () => {
    const res = await http('POST', 'v1/sales/namespaces/web/tables', {
      name: 'all_transforms', schema: schema(good),
      'partition-spec': spec(
        { 'source-id': 1, name: 'id_bucket', transform: 'bucket[16]' }, { 'source-id': 1, name: 'id_trunc', transform: 'truncate[10]' },
        { 'source-id': 2, name: 'ts_year', transform: 'year' }, { 'source-id': 2, name: 'ts_month', transform: 'month' },
        { 'source-id': 2, name: 'ts_day', transform: 'day' }, { 'source-id': 2, name: 'ts_hour', transform: 'hour' },
        { 'source-id': 3, name: 'name', transform: 'identity' }, { 'source-id': 4, name: 'price_t', transform: 'truncate[50]' },
        { 'source-id': 5, name: 'ok_void', transform: 'void' },
      ),
      'write-order': { 'order-id': 1, fields: [{ 'source-id': 2, transform: 'day', direction: 'desc', 'null-order': 'nulls-last' }] },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.metadata['partition-specs'][0].fields.length, 9);
  });
});

describe('updates are checked as creates are', () => {
  test('add-schema, add-spec and add-sort-order that break the specification are 400 and change nothing', async () => {
    const created = await http('POST', 'v1/sales/namespaces/web/tables', { name: 'evolving', schema: schema(good) });
    assert.equal(created.status, 200);
    const path = 'v1/sales/namespaces/web/tables/evolving';
    const commit = (updates: unknown[]) => http('POST', path, { requirements: [], updates });
    const cases: Array<[unknown[], RegExp]> = [
      [[{ action: 'add-schema', schema: schema([...good, field(6, 'z', 'notatype')]) }], /field "z" has an unknown type "notatype"/],
      [[{ action: 'add-spec', spec: spec({ 'source-id': 99, name: 'x', transform: 'identity' }) }], /source-id 99 is not a field/],
      [[{ action: 'add-spec', spec: spec({ 'source-id': 3, name: 'name_h', transform: 'hour' }) }], /hour cannot be applied to name of type string/],
      [[{ action: 'add-sort-order', 'sort-order': { 'order-id': 1, fields: [{ 'source-id': 5, transform: 'bucket[2]', direction: 'asc', 'null-order': 'nulls-first' }] } }], /bucket\[2\] cannot be applied to ok/],
      // the spec is checked against the schema the same commit made current
      [[{ action: 'add-schema', schema: schema([field(1, 'id', 'long', true)]) }, { action: 'set-current-schema', 'schema-id': -1 }, { action: 'add-spec', spec: spec({ 'source-id': 3, name: 'n', transform: 'identity' }) }], /source-id 3 is not a field/],
    ];
    const before = (await http('GET', path)).body['metadata-location'];
    for (const [updates, why] of cases) {
      const res = await commit(updates);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.type, 'BadRequestException');
      assert.match(res.body.error.message, why);
    }
    assert.equal((await http('GET', path)).body['metadata-location'], before, 'the table did not change');
    const ok = await commit([{ action: 'add-spec', spec: spec({ 'source-id': 2, name: 'ts_day', transform: 'day' }) }, { action: 'set-default-spec', 'spec-id': -1 }]);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });
});
