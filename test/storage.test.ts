// The object-store client against a real S3 wire-protocol server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startS3, type TestS3 } from './helpers/s3.js';
import net from 'node:net';
import http from 'node:http';
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

// The URL parser folds "." and ".." segments away ("a/../b" is "/b", and path-style "../x" leaves
// the bucket): the SDK sent them as they are. svc's storage rule refuses such keys before the raw
// store; the raw read must not address another object if one ever gets this far.
test('reads: a key with a "." or ".." segment is refused, never read as the object it would fold to', async () => {
  await store.put('other/secret', 'not yours');
  for (const key of ['lake/ns/../../other/secret', 'other/./secret', `../${s3.bucket}/other/secret`]) {
    await assert.rejects(store.get(key), /"\." or "\.\." segment/, key);
    await assert.rejects(store.getStream(key), /"\." or "\.\." segment/, key);
  }
});

// The SDK read only NoSuchKey as "no object": a bucket that is not there (a wrong name, deleted)
// must stay an error, not make every object look missing.
test('reads: a missing bucket is an error naming it, not a missing object', async () => {
  const missing = createObjectStore({ endpoint: s3.endpoint, region: 'us-east-1', bucket: 'nope', access_key: s3.accessKey, secret_key: s3.secretKey, path_style: true });
  const err = await missing.get('k/x').then((v) => v, (e: unknown) => e);
  missing.close();
  assert.equal((err as Error | null)?.name, 'NoSuchBucket');
  assert.equal(unreachableDependency(err), undefined);
});

/** A store on a local port that answers every request with `answer` (or never, when it is undefined). */
async function fakeStore(answer: ((res: http.ServerResponse) => void) | undefined) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => { hits.push(req.url!); answer?.(res); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const cfg = { endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', bucket: 'b', access_key: 'k', secret_key: 's', path_style: true };
  return { cfg, hits, stop: () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); } };
}

// The file cache reserves the answer's Content-Length before it writes the body: an answer without
// one counted 0 bytes however long its body ran.
test('reads: an answer without a Content-Length is refused (its size is what the caches count)', async () => {
  const fake = await fakeStore((res) => { res.writeHead(200, { 'transfer-encoding': 'chunked' }); res.end('x'.repeat(1000)); });
  const reader = createObjectStore(fake.cfg);
  const err = await reader.getStream('k/x').then(() => null, (e: unknown) => e as Error);
  reader.close();
  await fake.stop();
  assert.match(String(err?.message), /without a Content-Length/);
  assert.doesNotMatch(String(err?.message), /127\.0\.0\.1/);
  assert.equal(fake.hits.length, 1, 'a malformed answer is not asked again');
});

// A store that takes the connection and never answers (or a kept-alive socket to a host that went
// away) held the read, and the query or download waiting on it, with no end.
test('reads: a store that never answers is an outage after the answer timeout, on every attempt', async () => {
  const fake = await fakeStore(undefined);
  const reader = createObjectStore(fake.cfg, { answerTimeoutMs: 200 });
  const err = await reader.getStream('k/x').then(() => null, (e: unknown) => e);
  reader.close();
  await fake.stop();
  assert.equal(fake.hits.length, 3);
  assert.equal(unreachableDependency(err), 'object store');
  assert.doesNotMatch(String((err as Error).message), /127\.0\.0\.1/);
});
