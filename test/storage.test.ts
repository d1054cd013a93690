// The object-store client against a real S3 wire-protocol server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startS3, type TestS3 } from './helpers/s3.js';
import { createObjectStore, type ObjectStore } from '../src/storage/object-store.js';

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
