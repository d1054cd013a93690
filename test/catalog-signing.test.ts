// Remote signing: a client sends the S3 request it is about to make to the table's /sign route and
// sends it, signed by the service, to the real S3 server; the AWS SDK's signer agrees with the
// signature (s3rver checks the key, not the SigV4 signature). The
// storage keys never reach the client; a request outside the table location is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { IcebergRestCatalog } from 'iceberg-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { startCatalogApp, workspace, rolePeople, catalogRequest, sendSigned, type CatalogApp } from './helpers/catalog.js';
import { assertSpec } from './helpers/iceberg-spec.js';

let c: CatalogApp;
const tokens: Record<string, string> = {};
let key: string; // the table location's key in the bucket
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] };

const http = (method: string, path: string, token: string, body?: unknown) => catalogRequest(c, method, path, token, body);
const sign = (token: string, method: string, uri: string, headers: Record<string, string[]> = {}) =>
  http('POST', 'v1/sales/namespaces/web/tables/events/sign', token, { region: 'us-east-1', uri, method, headers });
const send = sendSigned;

before(async () => {
  c = await startCatalogApp();
  // Signatures are dated by the service clock and checked by s3rver against its own: same time.
  c.t.clock.set(new Date());
  await workspace(c.t, 'sales');
  Object.assign(tokens, await rolePeople(c.t, 'sales'));
  const ed = new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token: tokens.editor } });
  await ed.createNamespace({ namespace: ['web'] });
  const m = await ed.createTable({ namespace: ['web'] }, { name: 'events', schema: schema as never });
  key = m.location.replace('s3://warehouse/', '');
});
after(async () => { await c.close(); });

test('a table load names the signer and carries no storage keys', async () => {
  const load = await http('GET', 'v1/sales/namespaces/web/tables/events', tokens.viewer);
  const config = load.body.config;
  assert.equal(config['s3.remote-signing-enabled'], 'true');
  assert.equal(config['signer.endpoint'], 'v1/sales/namespaces/web/tables/events/sign');
  assert.equal(config['signer.uri'], 'http://localhost:8080/catalog');
  assert.ok(!load.text.includes(c.s3.secretKey === 'S3RVER' ? 'secret-access-key' : c.s3.secretKey));
  const creds = await http('GET', 'v1/sales/namespaces/web/tables/events/credentials', tokens.viewer);
  assert.equal(creds.status, 200);
  assertSpec('LoadCredentialsResponse', creds.body);
  assert.equal(creds.body['storage-credentials'][0].prefix, `s3://warehouse/${key}`);
});

test('an editor writes a data file through a signed PUT; a viewer reads it through a signed GET', async () => {
  const body = 'PAR1 not really parquet';
  const uri = `${c.s3.endpoint}/warehouse/${key}/data/00000-0.parquet`;
  const put = await sign(tokens.editor, 'PUT', uri, { 'content-type': ['application/octet-stream'], 'x-amz-content-sha256': [createHash('sha256').update(body).digest('hex')] });
  assert.equal(put.status, 200, put.text);
  assertSpec('RemoteSignResult', put.body);
  assert.match(put.body.headers.authorization[0], /^AWS4-HMAC-SHA256 Credential=S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/);
  assert.equal((await send('PUT', put.body, body)).status, 200);

  const get = await sign(tokens.viewer, 'GET', uri);
  assert.equal(get.status, 200, get.text);
  const res = await send('GET', get.body);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), body);

});

test('the signature is the one the AWS SDK\'s own SigV4 signer computes for the same request', async () => {
  // s3rver does not verify SigV4 signatures, so the AWS SDK's signer (@smithy/signature-v4) is
  // the second opinion: same keys, same instant, same headers, same Authorization.
  const uri = `${c.s3.endpoint}/warehouse/${key}/data/00001-0.parquet?x-id=PutObject`;
  const payload = createHash('sha256').update('x').digest('hex');
  const ours = await sign(tokens.editor, 'PUT', uri, { 'content-type': ['application/octet-stream'], 'x-amz-content-sha256': [payload] });
  assert.equal(ours.status, 200, ours.text);
  const url = new URL(uri);
  const date = ours.body.headers['x-amz-date'][0] as string;
  const signer = new SignatureV4({
    service: 's3', region: 'us-east-1', uriEscapePath: false, applyChecksum: false,
    credentials: { accessKeyId: c.s3.accessKey, secretAccessKey: c.s3.secretKey },
    // The SDK's hash constructor: HMAC when given a secret.
    sha256: class {
      private h;
      constructor(secret?: string | Uint8Array) { this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', secret); }
      update(d: string | Uint8Array) { this.h.update(d); }
      async digest() { return new Uint8Array(this.h.digest()); }
    } as never,
  });
  const theirs = await signer.sign({
    method: 'PUT', protocol: url.protocol, hostname: url.hostname, port: Number(url.port), path: url.pathname, query: Object.fromEntries(url.searchParams),
    headers: { host: url.host, 'content-type': 'application/octet-stream', 'x-amz-content-sha256': payload },
  }, { signingDate: new Date(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`) });
  assert.equal(ours.body.headers.authorization[0], theirs.headers.authorization);
});

test('refusals: outside the table location, a viewer writing, listing elsewhere', async () => {
  const outside = await sign(tokens.editor, 'GET', `${c.s3.endpoint}/warehouse/lake/other/secret.parquet`);
  assert.equal(outside.status, 403);
  assert.equal(outside.body.error.type, 'ForbiddenException');
  const otherBucket = await sign(tokens.editor, 'GET', `${c.s3.endpoint}/another-bucket/${key}/x`);
  assert.equal(otherBucket.status, 403);
  const viewerPut = await sign(tokens.viewer, 'PUT', `${c.s3.endpoint}/warehouse/${key}/data/x.parquet`);
  assert.equal(viewerPut.status, 403);
  assert.match(viewerPut.body.error.message, /writing table files needs ws_editor$/);
  const listOk = await sign(tokens.viewer, 'GET', `${c.s3.endpoint}/warehouse?list-type=2&prefix=${encodeURIComponent(`${key}/data/`)}`);
  assert.equal(listOk.status, 200);
  const listed = await send('GET', listOk.body);
  assert.equal(listed.status, 200);
  assert.match(await listed.text(), /00000-0\.parquet/);
  const listAll = await sign(tokens.viewer, 'GET', `${c.s3.endpoint}/warehouse?list-type=2&prefix=lake/`);
  assert.equal(listAll.status, 403);
  const bad = await http('POST', 'v1/sales/namespaces/web/tables/events/sign', tokens.editor, { region: 'x', uri: 'not a url', method: 'GET', headers: {} });
  assert.equal(bad.status, 400);
});
