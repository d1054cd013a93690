// The cross-workspace matrix of issue 24 over the catalog's route families (sign, credentials,
// register, drop with purge), on the real server and a real S3 server (s3rver), with the warehouse
// at the bucket root (the default): every family's prefix lies inside the catalog's root there.
// Principals: workspace beta's narrow machine client (a client bound to beta), its ws_admin, its
// viewer, anonymous, and the client of a workspace named like the apps prefix ("apps"). Storage
// paths: workspace alpha's table files, query results, app sources, workflow namespace and
// execution files. No principal reads, writes, lists or deletes any of alpha's objects: every
// attempt is refused (401 or 403, 400 for what cannot be a request), nothing is signed, and the
// bucket holds alpha's objects byte for byte afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { IcebergRestCatalog } from 'iceberg-js';
import { startCatalogApp, workspace, person, personToken, clientToken, catalogRequest, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { assertRefused, objectsUnder } from './helpers/tenancy.js';
import { QUEUES } from '../src/queue/queues.js';

let c: CatalogApp;
let alphaId: string;
let alphaKey: string;
let betaKey: string;
let alphaMetadata: string;
const principals: Record<string, string> = {};
const ANON = 'anonymous';
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] };
/** alpha's objects, one per storage path: key -> its secret content. */
const paths: Record<string, string> = {};

const http = (method: string, path: string, token: string, body?: unknown) =>
  token === ANON ? fetch(new URL(path, c.base), { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    .then(async (r) => ({ status: r.status, text: await r.text() }))
    : catalogRequest(c, method, path, token, body);

before(async () => {
  c = await startCatalogApp({ SVC_CATALOG__WAREHOUSE: 's3://warehouse' });
  c.t.clock.set(new Date());
  alphaId = await workspace(c.t, 'alpha');
  await workspace(c.t, 'beta');
  await workspace(c.t, 'apps');
  const admin = await person(c.t, 'bea@example.test', { beta: 'ws_admin' });
  const viewer = await person(c.t, 'vic@example.test', { beta: 'ws_viewer' });
  Object.assign(principals, {
    'beta machine client': await clientToken(c.t, 'beta'),
    'beta ws_admin': await personToken(c.t, admin, 'bea@example.test'),
    'beta viewer': await personToken(c.t, viewer, 'vic@example.test'),
    [ANON]: ANON,
    'client of workspace "apps"': await clientToken(c.t, 'apps'),
  });
  const root = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'alpha', auth: { type: 'bearer', token: CATALOG_TOKEN } });
  await root.createNamespace({ namespace: ['hr'] });
  const created = await root.createTable({ namespace: ['hr'] }, { name: 'salaries', schema: schema as never });
  alphaKey = created.location.replace('s3://warehouse/', '');
  alphaMetadata = (await catalogRequest(c, 'GET', 'v1/alpha/namespaces/hr/tables/salaries', CATALOG_TOKEN)).body['metadata-location'];
  for (const key of [
    `${alphaKey}/data/secret.parquet`, `query-results/${alphaId}/q1.parquet`, `apps/${alphaId}/app1/draft`,
    `workflow/${alphaId}/namespaces/team/files/secret.txt`, `workflow/${alphaId}/executions/e1/tr/1/out.txt`,
  ]) {
    paths[key] = `alpha-secret:${key}`;
    await c.t.services.s3.put(key, paths[key]);
  }
  const beta = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'beta', auth: { type: 'bearer', token: principals['beta ws_admin'] } });
  await beta.createNamespace({ namespace: ['web'] });
  betaKey = (await beta.createTable({ namespace: ['web'] }, { name: 'events', schema: schema as never })).location.replace('s3://warehouse/', '');
});
after(async () => { await c.close(); });

const alphaRoots = () => [`${alphaKey.split('/')[0]}/`, `query-results/${alphaId}/`, `apps/${alphaId}/`, `workflow/${alphaId}/`];
const secrets = () => Object.values(paths);
const expected = (who: string, ...more: number[]) => (who === ANON ? [401] : [403, ...more]);

/** Every S3 request a client could ask to have signed that touches `key`. */
function attempts(key: string): Array<{ method: string; uri: string; headers?: Record<string, string[]>; body?: string }> {
  const e = c.s3.endpoint;
  const dir = key.slice(0, key.lastIndexOf('/') + 1);
  const del = `<Delete><Object><Key>${key}</Key></Object></Delete>`;
  return [
    { method: 'GET', uri: `${e}/warehouse/${key}` }, { method: 'HEAD', uri: `${e}/warehouse/${key}` },
    { method: 'PUT', uri: `${e}/warehouse/${key}` }, { method: 'DELETE', uri: `${e}/warehouse/${key}` },
    { method: 'POST', uri: `${e}/warehouse/${key}?uploads` },
    { method: 'GET', uri: `${e}/warehouse?list-type=2&prefix=${encodeURIComponent(dir)}` },
    { method: 'GET', uri: `${e}/warehouse?list-type=2&prefix=${encodeURIComponent(key.split('/')[0]!)}` },
    { method: 'PUT', uri: `${e}/warehouse/${betaKey}/data/copy`, headers: { 'x-amz-copy-source': [`/warehouse/${key}`] } },
    { method: 'POST', uri: `${e}/warehouse?delete`, body: del, headers: { 'x-amz-content-sha256': [createHash('sha256').update(del).digest('hex')] } },
    { method: 'GET', uri: `http://otherbucket.s3.amazonaws.com/warehouse/${key}` },
    { method: 'GET', uri: `${e}/warehouse/${betaKey}/${'../'.repeat(betaKey.split('/').length)}${key}` },
  ];
}

test('sign: no request touching alpha\'s objects is signed, through beta\'s table or alpha\'s', async () => {
  const before = await objectsUnder(c.t.services.s3, alphaRoots());
  let tried = 0;
  for (const [who, token] of Object.entries(principals)) {
    const own = who.includes('"apps"') ? 'v1/apps/namespaces/web/tables/events/sign' : 'v1/beta/namespaces/web/tables/events/sign';
    for (const key of Object.keys(paths)) {
      for (const a of attempts(key)) {
        for (const route of [own, 'v1/alpha/namespaces/hr/tables/salaries/sign']) {
          const r = await http('POST', route, token, { region: 'us-east-1', headers: {}, ...a });
          assertRefused(`${who} ${a.method} ${a.uri} via ${route}`, r.status, r.text, expected(who), secrets());
          tried++;
        }
      }
    }
  }
  assert.equal(tried, 5 * 5 * 11 * 2);
  assert.deepEqual(await objectsUnder(c.t.services.s3, alphaRoots()), before);
});

test('credentials: none of alpha\'s locations is vended; beta\'s own stay inside beta', async () => {
  for (const [who, token] of Object.entries(principals)) {
    const r = await http('GET', 'v1/alpha/namespaces/hr/tables/salaries/credentials', token);
    assertRefused(`${who} credentials`, r.status, r.text, expected(who), [alphaKey]);
  }
  const own = await catalogRequest(c, 'GET', 'v1/beta/namespaces/web/tables/events/credentials', principals['beta machine client']!);
  assert.equal(own.status, 200, own.text);
  assert.equal(own.body['storage-credentials'][0].prefix, `s3://warehouse/${betaKey}`);
  assert.ok(own.body['storage-credentials'][0].prefix.startsWith('s3://warehouse/beta/'));
});

test('register: alpha\'s metadata (or any file naming alpha\'s location) never becomes beta\'s table', async () => {
  for (const [who, token] of Object.entries(principals)) {
    for (const route of ['v1/beta/namespaces/web/register', 'v1/alpha/namespaces/hr/register']) {
      for (const file of [alphaMetadata, `s3://warehouse/${alphaKey}/data/secret.parquet`, `s3://warehouse/apps/${alphaId}/app1/draft`]) {
        const r = await http('POST', route, token, { name: 'stolen', 'metadata-location': file });
        assertRefused(`${who} register ${file} via ${route}`, r.status, r.text, expected(who, 400), secrets());
      }
    }
  }
  assert.equal((await catalogRequest(c, 'GET', 'v1/beta/namespaces/web/tables/stolen', CATALOG_TOKEN)).status, 404);
});

test('create and commit: no table is placed in alpha\'s storage, nor in another family\'s by a workspace named like it', async () => {
  const targets = () => [`s3://warehouse/alpha/stolen`, `s3://warehouse/${alphaKey}`, `s3://warehouse/apps/${alphaId}`, `s3://warehouse/query-results/${alphaId}`, `s3://warehouse/workflow/${alphaId}`];
  for (const [who, token] of Object.entries(principals)) {
    const prefix = who.includes('"apps"') ? 'apps' : 'beta';
    const ns = await http('POST', `v1/${prefix}/namespaces`, token, { namespace: ['grab'] });
    if (prefix === 'apps') assertRefused(`${who} namespace`, ns.status, ns.text, expected(who), []);
    for (const location of targets()) {
      const r = await http('POST', `v1/${prefix}/namespaces/web/tables`, token, { name: 'grab', schema, location });
      assertRefused(`${who} create at ${location}`, r.status, r.text, expected(who, 400), []);
      const moved = await http('POST', `v1/${prefix}/namespaces/web/tables/events`, token, { requirements: [], updates: [{ action: 'set-location', location }] });
      assertRefused(`${who} set-location ${location}`, moved.status, moved.text, expected(who, 400), []);
    }
  }
  const own = await catalogRequest(c, 'GET', 'v1/beta/namespaces/web/tables/events', CATALOG_TOKEN);
  assert.equal(own.body.metadata.location, `s3://warehouse/${betaKey}`);
});

test('drop with purge: alpha\'s table and files stay, whoever asks', async () => {
  const before = await objectsUnder(c.t.services.s3, alphaRoots());
  for (const [who, token] of Object.entries(principals)) {
    const r = await http('DELETE', 'v1/alpha/namespaces/hr/tables/salaries?purgeRequested=true', token);
    assertRefused(`${who} drop`, r.status, r.text, expected(who), []);
  }
  assert.equal((await catalogRequest(c, 'GET', 'v1/alpha/namespaces/hr/tables/salaries', CATALOG_TOKEN)).status, 200);
  const jobs = await c.t.services.queues.get(QUEUES.catalogPurge).getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed');
  assert.deepEqual(Object.values(jobs).reduce((a, b) => a + b, 0), 0, 'no purge was queued');
  assert.deepEqual(await objectsUnder(c.t.services.s3, alphaRoots()), before);
  for (const [key, content] of Object.entries(paths)) assert.equal(before.get(key), content);
});
