// Issue 24, points 1-6, against the real server and a real S3 server (s3rver): a principal of
// workspace beta, whose catalog signs, vends, registers and purges, never reaches workspace
// alpha's objects in the shared bucket. Each test failed on main before the storage rule:
// 1. a signed PUT carrying x-amz-copy-source copied alpha's file into beta's table;
// 2. a bulk delete (POST ?delete) was signed with UNSIGNED-PAYLOAD, so any keys could follow;
// 3. register took the table location from a metadata file's own `location` field;
// 4. a purge followed such a location and deleted alpha's files;
// 5. a request to another host (another bucket, virtual-hosted) was signed;
// 6. a malformed percent escape in the uri was a 500.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { IcebergRestCatalog } from 'iceberg-js';
import { startCatalogApp, workspace, rolePeople, catalogRequest, sendSigned, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { purgeTable } from '../src/catalog/purge.js';

let c: CatalogApp;
const tokens: Record<string, string> = {};
let alphaKey: string; // alpha's table location in the bucket
let betaKey: string; // beta's
const SECRET = 'alpha secret rows';
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] };

const http = (method: string, path: string, token: string, body?: unknown) => catalogRequest(c, method, path, token, body);
const sign = (token: string, method: string, uri: string, headers: Record<string, string[]> = {}, body?: string) =>
  http('POST', 'v1/beta/namespaces/web/tables/events/sign', token, { region: 'us-east-1', uri, method, headers, ...(body !== undefined ? { body } : {}) });
const send = sendSigned;
const object = async (key: string) => {
  const b = await c.t.services.s3.get(key);
  return b ? Buffer.from(b).toString() : null;
};
const alphaKeys = async () => (await c.t.services.s3.list('lake/alpha/')).map((o) => o.key).sort();

before(async () => {
  c = await startCatalogApp();
  c.t.clock.set(new Date());
  await workspace(c.t, 'alpha');
  await workspace(c.t, 'beta');
  Object.assign(tokens, await rolePeople(c.t, 'beta'));
  const admin = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'alpha', auth: { type: 'bearer', token: CATALOG_TOKEN } });
  await admin.createNamespace({ namespace: ['hr'] });
  alphaKey = (await admin.createTable({ namespace: ['hr'] }, { name: 'salaries', schema: schema as never })).location.replace('s3://warehouse/', '');
  await c.t.services.s3.put(`${alphaKey}/data/secret.parquet`, SECRET);
  const ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'beta', auth: { type: 'bearer', token: tokens.editor } });
  await ed.createNamespace({ namespace: ['web'] });
  betaKey = (await ed.createTable({ namespace: ['web'] }, { name: 'events', schema: schema as never })).location.replace('s3://warehouse/', '');
});
after(async () => { await c.close(); });

test('1. a PUT that copies (x-amz-copy-source) is not signed: no object of alpha reaches beta\'s table', async () => {
  const into = `${c.s3.endpoint}/warehouse/${betaKey}/data/stolen.parquet`;
  const copy = await sign(tokens.editor, 'PUT', into, { 'x-amz-copy-source': [`/warehouse/${alphaKey}/data/secret.parquet`] });
  assert.equal(copy.status, 403, copy.text);
  assert.equal(copy.body.error.type, 'ForbiddenException');
  assert.match(copy.body.error.message, /the header x-amz-copy-source is not one svc signs/);
  const part = await sign(tokens.editor, 'PUT', `${into}?partNumber=1&uploadId=u1`, { 'x-amz-copy-source': [`/warehouse/${alphaKey}/data/secret.parquet`] });
  assert.equal(part.status, 403, 'UploadPartCopy');
  for (const sub of ['acl', 'tagging', 'retention']) assert.equal((await sign(tokens.editor, 'PUT', `${into}?${sub}`)).status, 403, sub);
  assert.equal((await sign(tokens.editor, 'PUT', into, { 'x-amz-website-redirect-location': ['/x'] })).status, 403);
  assert.equal(await object(`${betaKey}/data/stolen.parquet`), null);
  // A plain PUT of beta's own bytes is still signed and stored.
  const put = await sign(tokens.editor, 'PUT', into, { 'x-amz-content-sha256': [createHash('sha256').update('beta rows').digest('hex')] });
  assert.equal(put.status, 200, put.text);
  assert.equal((await send('PUT', put.body, 'beta rows')).status, 200);
  assert.equal(await object(`${betaKey}/data/stolen.parquet`), 'beta rows');
});

test('2. a bulk delete is signed only with its body, each key checked and the body\'s hash signed', async () => {
  const uri = `${c.s3.endpoint}/warehouse?delete`;
  const bare = await sign(tokens.editor, 'POST', `${uri}&prefix=${encodeURIComponent(`${betaKey}/`)}`);
  assert.equal(bare.status, 403, bare.text);
  const noBody = await sign(tokens.editor, 'POST', uri);
  assert.equal(noBody.status, 400, noBody.text);
  assert.equal(noBody.body.error.type, 'BadRequestException');
  const xml = (...keys: string[]) => `<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${keys.map((k) => `<Object><Key>${k}</Key></Object>`).join('')}</Delete>`;
  const mixed = await sign(tokens.editor, 'POST', uri, {}, xml(`${betaKey}/data/stolen.parquet`, `${alphaKey}/data/secret.parquet`));
  assert.equal(mixed.status, 403, mixed.text);
  assert.match(mixed.body.error.message, /lies outside the storage of workspace beta/);
  const cdata = await sign(tokens.editor, 'POST', uri, {}, `<Delete><Object><Key><![CDATA[${alphaKey}/data/secret.parquet]]></Key></Object></Delete>`);
  assert.equal(cdata.status, 400, cdata.text);
  const unsigned = await sign(tokens.editor, 'POST', uri, { 'x-amz-content-sha256': ['UNSIGNED-PAYLOAD'] }, xml(`${betaKey}/data/stolen.parquet`));
  assert.equal(unsigned.status, 400);
  assert.equal((await sign(tokens.viewer, 'POST', uri, {}, xml(`${betaKey}/data/stolen.parquet`))).status, 403, 'a viewer deletes nothing');

  const body = xml(`${betaKey}/data/stolen.parquet`);
  const ok = await sign(tokens.editor, 'POST', uri, {}, body);
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(ok.body.headers['x-amz-content-sha256'], [createHash('sha256').update(body).digest('hex')]);
  assert.deepEqual(ok.body.headers['content-md5'], [createHash('md5').update(body).digest('base64')]);
  assert.match(ok.body.headers.authorization[0], /SignedHeaders=content-md5;host;x-amz-content-sha256;x-amz-date,/);
  const res = await send('POST', ok.body, body);
  assert.equal(res.status, 200, await res.text());
  assert.equal(await object(`${betaKey}/data/stolen.parquet`), null);
  assert.equal(await object(`${alphaKey}/data/secret.parquet`), SECRET);
});

/** Writes a metadata file into beta's table location through the signer, as a client would. */
async function writeThroughSigner(key: string, text: string) {
  const put = await sign(tokens.editor, 'PUT', `${c.s3.endpoint}/warehouse/${key}`, { 'x-amz-content-sha256': [createHash('sha256').update(text).digest('hex')] });
  assert.equal(put.status, 200, put.text);
  assert.equal((await send('PUT', put.body, text)).status, 200);
}

test('3. register takes no location from a metadata file: one naming another workspace\'s prefix is refused', async () => {
  const loaded = await http('GET', 'v1/beta/namespaces/web/tables/events', tokens.editor);
  for (const [file, location] of [
    [`${betaKey}/evil.json`, 's3://warehouse/lake/alpha'],
    [`${betaKey}/metadata/00009-evil.metadata.json`, `s3://warehouse/${alphaKey}`],
    [`${betaKey}/apps.json`, 's3://warehouse/apps'],
  ]) {
    await writeThroughSigner(file!, JSON.stringify({ ...loaded.body.metadata, location }));
    const reg = await http('POST', 'v1/beta/namespaces/web/register', tokens.editor, { name: 'evil', 'metadata-location': `s3://warehouse/${file}` });
    assert.equal(reg.status, 400, reg.text);
    assert.equal(reg.body.error.type, 'BadRequestException');
    assert.match(reg.body.error.message, /names the table location .* outside the warehouse s3:\/\/warehouse\/lake\/beta\//);
  }
  const outside = await http('POST', 'v1/beta/namespaces/web/register', tokens.editor, { name: 'evil', 'metadata-location': `s3://warehouse/${alphaKey}/metadata/x.metadata.json` });
  assert.equal(outside.status, 400);
  assert.equal((await http('GET', 'v1/beta/namespaces/web/tables/evil', tokens.editor)).status, 404);
  // A metadata file of beta's own, naming beta's location, still registers.
  await writeThroughSigner(`${betaKey}/copy.json`, JSON.stringify(loaded.body.metadata));
  const own = await http('POST', 'v1/beta/namespaces/web/register', tokens.editor, { name: 'copy', 'metadata-location': `s3://warehouse/${betaKey}/copy.json` });
  assert.equal(own.status, 200, own.text);
  const creds = await http('GET', 'v1/beta/namespaces/web/tables/copy/credentials', tokens.viewer);
  assert.equal(creds.body['storage-credentials'][0].prefix, `s3://warehouse/${betaKey}`);
});

test('4. a table whose location is not the workspace\'s (registered before the rule) purges nothing, vends nothing, signs nothing', async () => {
  // The row main's register wrote for a file outside /metadata/ whose `location` named alpha.
  const loaded = await http('GET', 'v1/beta/namespaces/web/tables/events', tokens.editor);
  const ns = await c.t.services.db.selectFrom('catalog_namespaces as n').innerJoin('workspaces as w', 'w.id', 'n.workspace_id')
    .select('n.id').where('w.slug', '=', 'beta').executeTakeFirstOrThrow();
  await c.t.services.db.insertInto('catalog_tables').values({
    namespace_id: ns.id, name: 'legacy', kind: 'table', metadata_location: `s3://warehouse/${betaKey}/legacy.json`,
    metadata: JSON.stringify({ ...loaded.body.metadata, location: 's3://warehouse/lake/alpha' }),
  } as never).execute();
  const before = await alphaKeys();
  assert.ok(before.includes(`${alphaKey}/data/secret.parquet`));

  const drop = await http('DELETE', 'v1/beta/namespaces/web/tables/legacy?purgeRequested=true', tokens.owner);
  assert.equal(drop.status, 403, drop.text);
  assert.match(drop.body.error.message, /the prefix "lake\/alpha\/" lies outside the storage of workspace beta/);
  assert.equal((await http('GET', 'v1/beta/namespaces/web/tables/legacy/credentials', tokens.viewer)).status, 403);
  const read = await http('POST', 'v1/beta/namespaces/web/tables/legacy/sign', tokens.viewer, { region: 'us-east-1', uri: `${c.s3.endpoint}/warehouse/${alphaKey}/data/secret.parquet`, method: 'GET', headers: {} });
  assert.equal(read.status, 403);
  // The job itself (queued by a drop on main) refuses too, and says so in the audit log.
  const out = await purgeTable(c.t.services, { tableId: 'x', workspace: 'beta', table: 'web.legacy', location: 's3://warehouse/lake/alpha', files: [`s3://warehouse/${alphaKey}/data/secret.parquet`], requestedBy: 'test' });
  assert.equal(out.deleted, 0);
  assert.match(out.refused!, /lies outside the storage of workspace beta/);
  assert.deepEqual(await alphaKeys(), before);
  assert.equal(await object(`${alphaKey}/data/secret.parquet`), SECRET);
  const event = await c.t.services.db.selectFrom('audit_events').select('details').where('action', '=', 'catalog.table.purge').executeTakeFirstOrThrow();
  assert.match(String((event.details as { refused?: string }).refused), /outside the storage of workspace beta/);
  // A plain drop (no purge) of such a table still works: it removes the row, no file.
  assert.equal((await http('DELETE', 'v1/beta/namespaces/web/tables/legacy', tokens.owner)).status, 204);
  assert.deepEqual(await alphaKeys(), before);
});

test('5. the signature covers the host: another bucket\'s virtual host or any foreign host is refused', async () => {
  for (const uri of [
    `http://otherbucket.s3.amazonaws.com/warehouse/${betaKey}/data/x`,
    `http://warehouse.evil.example/${betaKey}/data/x`,
    `http://127.0.0.1:1/warehouse/${betaKey}/data/x`,
  ]) {
    const r = await sign(tokens.viewer, 'GET', uri);
    assert.equal(r.status, 403, `${uri}: ${r.text}`);
    assert.match(r.body.error.message, /neither the storage endpoint/);
  }
  const ok = await sign(tokens.viewer, 'GET', `${c.s3.endpoint}/warehouse/${betaKey}/data/x`);
  assert.equal(ok.status, 200);
  assert.match(ok.body.headers.authorization[0], /SignedHeaders=host;x-amz-content-sha256;x-amz-date,/);
});

test('6. bad input is a 400 in the Iceberg error shape: malformed escapes, too many headers', async () => {
  for (const uri of [`${c.s3.endpoint}/warehouse/${betaKey}/%zz`, `${c.s3.endpoint}/warehouse/${betaKey}/%E2%82`, `${c.s3.endpoint}/warehouse?list-type=2&prefix=%`]) {
    const r = await sign(tokens.viewer, 'GET', uri);
    assert.equal(r.status, 400, `${uri}: ${r.text}`);
    assert.equal(r.body.error.type, 'BadRequestException');
  }
  const many = await sign(tokens.viewer, 'GET', `${c.s3.endpoint}/warehouse/${betaKey}/x`, Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-h-${i}`, ['v']])));
  assert.equal(many.status, 400);
});
