// The object-store client against a real S3 wire-protocol server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startS3, type TestS3 } from './helpers/s3.js';
import net from 'node:net';
import { createObjectStore, type ObjectStore } from '../src/storage/object-store.js';
import { objectUrl } from '../src/storage/object-get.js';
import { unreachableDependency } from '../src/errors.js';
import { freePort } from './helpers/net.js';

let s3: TestS3;
let store: ObjectStore;

before(async () => {
  s3 = await startS3();
  store = createObjectStore({ endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, access_key: s3.accessKey, secret_key: s3.secretKey, path_style: true });
});
after(async () => { store.close(); await s3.stop(); });

test('put, get, list and delete objects in the bucket', async () => {
  await store.checkBucket();
  await store.put('apps/a.txt', 'alpha', 'text/plain');
  await store.put('apps/b/c.bin', new Uint8Array([1, 2, 3]));
  await store.put('other/x', 'x');
  assert.equal(Buffer.from((await store.get('apps/a.txt'))!).toString(), 'alpha');
  const listed = (await store.list('apps/')).map((o) => [o.key, o.size]);
  assert.deepEqual(listed, [['apps/a.txt', 5], ['apps/b/c.bin', 3]]);
  await store.delete('apps/a.txt');
  assert.equal(await store.get('apps/a.txt'), null);
});

test('a missing bucket is a one-line error naming it', async () => {
  const missing = createObjectStore({ endpoint: s3.endpoint, region: 'us-east-1', bucket: 'nope', access_key: s3.accessKey, secret_key: s3.secretKey, path_style: true });
  await assert.rejects(missing.checkBucket(), /object store bucket "nope" is not reachable/);
  missing.close();
});

// Reads skip the SDK (src/storage/object-get.ts): they must address, sign and fail as the SDK does.
test('reads: keys with spaces, unicode and reserved characters, streams, a missing key, a nested prefix', async () => {
  const keys = ['lake/ns/t/data/a file (1).parquet', 'lake/ns/t/data/ünï+cødé!*\'~.bin', 'lake/ns/t/data/percent%20and&amp=;.txt'];
  for (const [i, k] of keys.entries()) await store.put(k, `body ${i}`);
  for (const [i, k] of keys.entries()) {
    assert.equal(Buffer.from((await store.get(k))!).toString(), `body ${i}`, k);
    const s = await store.getStream(k);
    assert.equal(s!.size, `body ${i}`.length);
    const chunks: Buffer[] = [];
    for await (const c of s!.body) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), `body ${i}`);
  }
  assert.equal(await store.get('lake/ns/t/data/none'), null);
  assert.equal(await store.getStream('lake/ns/t/data/none'), null);
  // 300 kB: more than one chunk on the wire
  const big = Buffer.alloc(300_000, 7);
  await store.put('lake/big.bin', big);
  assert.deepEqual(Buffer.from((await store.get('lake/big.bin'))!), big);
});

test('reads: a wrong key is the store\'s refusal, not an outage; a store that is down is an outage, after retries', async () => {
  await store.put('k/x', 'x');
  const wrong = createObjectStore({ endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, access_key: 'NOBODY', secret_key: 'not-the-secret', path_style: true });
  const refused = await wrong.get('k/x').then(() => null, (e: unknown) => e);
  wrong.close();
  assert.equal((refused as Error).name, 'InvalidAccessKeyId');
  assert.equal((refused as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode, 403);
  assert.equal(unreachableDependency(refused), undefined);

  const port = await freePort();
  const down = createObjectStore({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', bucket: s3.bucket, access_key: s3.accessKey, secret_key: s3.secretKey, path_style: true });
  const hits: number[] = [];
  // a listener that accepts and resets every connection: three attempts, then the error
  const server = net.createServer((sock) => { hits.push(Date.now()); sock.resetAndDestroy(); });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const outage = await down.getStream('k/x').then(() => null, (e: unknown) => e);
  server.close();
  down.close();
  assert.equal(hits.length, 3);
  assert.equal(unreachableDependency(outage), 'object store');
});

test('reads: path-style and virtual-host addresses as the SDK builds them', () => {
  const cfg = { endpoint: 'http://minio:9000', region: 'eu-west-1', bucket: 'lake', path_style: true };
  assert.equal(objectUrl(cfg, 'a b/c+d').href, 'http://minio:9000/lake/a%20b/c%2Bd');
  assert.equal(objectUrl({ ...cfg, path_style: false }, 'k/x').href, 'http://lake.minio:9000/k/x');
  assert.equal(objectUrl({ ...cfg, endpoint: '', path_style: false }, 'k/x').href, 'https://lake.s3.eu-west-1.amazonaws.com/k/x');
  assert.equal(objectUrl({ ...cfg, endpoint: '' }, 'k/x').href, 'https://s3.eu-west-1.amazonaws.com/lake/k/x');
});
