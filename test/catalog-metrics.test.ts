// Operations of the catalog (issue 12 point 7): catalog requests counted in /metrics by the
// specification's operation id and status, under names that pass promtool's naming rules; every
// catalog route in `svc openapi` carries the specification's operationId for its path and method.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCatalogApp, workspace, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { namingProblems } from './helpers/prometheus.js';
import { buildOpenApiDocument } from '../src/api/openapi.js';
import { ENDPOINTS } from '../src/catalog/config.js';
import { icebergSpec } from '../src/catalog/openapi-spec.js';

let c: CatalogApp;
before(async () => {
  c = await startCatalogApp();
  await workspace(c.t, 'sales');
});
after(async () => { await c.close(); });

async function call(method: string, path: string, body?: unknown, token = CATALOG_TOKEN) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
  });
  await res.arrayBuffer();
  return res.status;
}

/** The value of a sample line `name{labels} value` in an exposition, 0 when absent. */
function sample(exposition: string, line: string): number {
  const found = exposition.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

test('catalog requests are counted by operation and status in /metrics', async () => {
  const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', type: 'long', required: true }] };
  assert.equal(await call('GET', 'v1/config?warehouse=sales'), 200);
  assert.equal(await call('POST', 'v1/sales/namespaces', { namespace: ['web'] }), 200);
  assert.equal(await call('POST', 'v1/sales/namespaces/web/tables', { name: 'events', schema }), 200);
  for (let i = 0; i < 3; i++) assert.equal(await call('GET', 'v1/sales/namespaces/web/tables/events'), 200);
  assert.equal(await call('GET', 'v1/sales/namespaces/web/tables/nope'), 404);
  assert.equal(await call('HEAD', 'v1/sales/namespaces/web/tables/events'), 204);
  assert.equal(await call('GET', 'v1/sales/namespaces/web/tables/events', undefined, 'wrong-token'), 401);
  assert.equal(await call('GET', 'v1/sales/nothing-here'), 404);

  const res = await c.t.app.inject({ method: 'GET', url: '/metrics' });
  assert.equal(res.statusCode, 200);
  const m = res.body;
  assert.deepEqual(namingProblems(m), []);
  assert.match(m, /^# TYPE svc_catalog_requests_total counter$/m);
  assert.match(m, /^# TYPE svc_catalog_request_duration_seconds histogram$/m);
  const n = (op: string, status: number) => sample(m, `svc_catalog_requests_total{operation="${op}",status="${status}"}`);
  assert.equal(n('getConfig', 200), 1);
  assert.equal(n('createNamespace', 200), 1);
  assert.equal(n('createTable', 200), 1);
  assert.equal(n('loadTable', 200), 3);
  assert.equal(n('loadTable', 404), 1);
  assert.equal(n('loadTable', 401), 1);
  assert.equal(n('tableExists', 204), 1);
  assert.equal(n('unknown', 404), 1);
  assert.equal(sample(m, 'svc_catalog_request_duration_seconds_count{operation="loadTable",status="200"}'), 3);
  // No table, namespace or warehouse name ever becomes a label.
  assert.doesNotMatch(m.split('\n').filter((l) => l.startsWith('svc_catalog_')).join('\n'), /events|sales|web/);
});

test('svc openapi lists every catalog route with the specification\'s operationId for its path and method', async () => {
  const ours = await buildOpenApiDocument() as { paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>> };
  const spec = icebergSpec() as { paths: Record<string, Record<string, { operationId?: string }>> };
  let count = 0;
  for (const [path, ops] of Object.entries(ours.paths)) {
    if (!path.startsWith('/catalog/v1/')) continue;
    const theirs = spec.paths[path.slice('/catalog'.length)];
    assert.ok(theirs, `${path} is a path of the specification`);
    for (const [method, op] of Object.entries(ops)) {
      assert.equal(op.operationId, theirs[method]?.operationId, `${method.toUpperCase()} ${path}`);
      assert.ok(op.responses && Object.keys(op.responses).some((s) => s.startsWith('2')), `${method} ${path} declares its answer`);
      count++;
    }
  }
  assert.equal(count, 30);
  // `endpoints` of /v1/config advertises exactly the routes served (the Java client calls only those).
  const served = Object.entries(ours.paths).filter(([p]) => p.startsWith('/catalog/v1/{prefix}/'))
    .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.slice('/catalog'.length)}`));
  assert.deepEqual([...ENDPOINTS].sort(), served.sort());
});

test('svc openapi describes catalog bodies with the specification\'s own schemas, every reference resolving', async () => {
  type Op = { requestBody?: { content?: Record<string, { schema?: unknown }> }; responses: Record<string, { content?: Record<string, { schema?: unknown }> }> };
  const doc = await buildOpenApiDocument() as { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, unknown> } };
  const spec = icebergSpec();
  const ref = (name: string) => ({ $ref: `#/components/schemas/iceberg.${name}` });
  const theirRef = (r: { $ref?: string; content?: Record<string, { schema?: { $ref?: string } }> } | undefined) => {
    const o = r?.$ref ? spec.components[r.$ref.split('/')[2]][r.$ref.split('/')[3]] : r;
    return o?.content?.['application/json']?.schema?.$ref?.split('/').pop();
  };
  const json = (x: { content?: Record<string, { schema?: unknown }> } | undefined) => x?.content?.['application/json']?.schema;
  // Named examples: a commit, a table load, a config, a rename (no answer body), an error.
  const tables = doc.paths['/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}'];
  assert.deepEqual(json(tables.post.requestBody), ref('CommitTableRequest'));
  assert.deepEqual(json(tables.post.responses['200']), ref('CommitTableResponse'));
  assert.deepEqual(json(tables.get.responses['200']), ref('LoadTableResult'));
  assert.deepEqual(json(tables.get.responses['404']), ref('IcebergErrorResponse'));
  assert.deepEqual(json(doc.paths['/catalog/v1/config'].get.responses['200']), ref('CatalogConfig'));
  assert.deepEqual(json(doc.paths['/catalog/v1/{prefix}/tables/rename'].post.requestBody), ref('RenameTableRequest'));
  let bodies = 0;
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (!path.startsWith('/catalog/v1/')) continue;
    for (const [method, op] of Object.entries(ops)) {
      const their = spec.paths[path.slice('/catalog'.length)][method];
      if (op.requestBody) { assert.deepEqual(json(op.requestBody), ref(theirRef(their.requestBody)!), `${method} ${path} request`); bodies++; }
      for (const [status, res] of Object.entries(op.responses)) {
        if (!json(res)) continue;
        assert.deepEqual(json(res), ref(status.startsWith('2') ? theirRef(their.responses[status])! : 'IcebergErrorResponse'), `${method} ${path} ${status}`);
        bodies++;
      }
    }
  }
  assert.ok(bodies > 100, String(bodies));
  // Every reference in the document (the specification's schemas refer to each other) resolves.
  const unresolved: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) { v.forEach(walk); return; }
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string' && x.split('/').slice(1).reduce<any>((o, seg) => o?.[seg], doc) === undefined) unresolved.push(x);
      walk(x);
    }
  };
  walk(doc);
  assert.deepEqual(unresolved, []);
  assert.equal(Object.keys(doc.components.schemas).filter((k) => k.startsWith('iceberg.')).length, Object.keys(spec.components.schemas).length);
});

test('the answer check that every catalog test file runs refuses what the specification does not declare', async () => {
  const { checkExchange } = await import('./helpers/iceberg-spec.js');
  const table = '/v1/sales/namespaces/web/tables/events';
  assert.equal(checkExchange('GET', table, 304, ''), null);
  assert.match(checkExchange('GET', table, 200, '{"metadata":{}}') ?? '', /must have required property/);
  assert.match(checkExchange('GET', table, 202, '{}') ?? '', /status not declared/);
  assert.match(checkExchange('DELETE', table, 404, '{"message":"x","type":"NoSuchTableException","code":404}') ?? '', /must have required property 'error'/);
  assert.equal(checkExchange('DELETE', table, 404, '{"error":{"message":"x","type":"NoSuchTableException","code":404}}'), null);
  // A view's 404 names ErrorModel in the specification, but its examples are wrapped: held to the wrapped shape.
  assert.match(checkExchange('GET', '/v1/sales/namespaces/web/views/v', 404, '{"message":"x","type":"NoSuchViewException","code":404}') ?? '', /required property 'error'/);
  assert.match(checkExchange('POST', '/v1/sales/tables/rename', 204, '{"unexpected":true}') ?? '', /declares no body/);
});
