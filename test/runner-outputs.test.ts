// Output files read from a container stop at workflow.storage.max_file_bytes / max_task_bytes as
// they are read: the local engine's tar stream is not drained past the cap, and the cluster
// helper's gzipped archive is not gunzipped past it (a small archive may hold gigabytes). With a
// sink (RunCallbacks.onOutputFile) a file within the caps goes to the object store as it is read.
import { test, before, after } from 'node:test';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar-stream';
import { readTarFiles } from '../src/runners/output-files.js';
import { parseOutputLog } from '../src/runners/cluster/index.js';
import { OUTPUT_BEGIN, OUTPUT_END } from '../src/runners/cluster/scripts.js';
import { createObjectStore, type ObjectStore } from '../src/storage/object-store.js';
import { startS3, type TestS3 } from './helpers/s3.js';

let s3: TestS3;
let store: ObjectStore;
before(async () => {
  s3 = await startS3();
  store = createObjectStore({ endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, access_key: s3.accessKey, secret_key: s3.secretKey, path_style: true });
});
after(async () => { store.close(); await s3.stop(); });

async function tarOf(files: Record<string, Buffer>): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: Buffer) => chunks.push(c));
  for (const [name, data] of Object.entries(files)) pack.entry({ name, size: data.length }, data);
  pack.finalize();
  await once(pack, 'end');
  return Buffer.concat(chunks);
}

function helperLog(tarBuf: Buffer, count: number): string {
  const gz = gzipSync(tarBuf);
  return [OUTPUT_BEGIN, ...gz.toString('base64').match(/.{1,76}/g)!, `${OUTPUT_END} ${count} ${gz.length}`, ''].join('\n');
}

test('cluster: an archive that gunzips past max_task_bytes stops at the cap', async () => {
  const log = helperLog(await tarOf({ 'zeros.bin': Buffer.alloc(48 * 1024 * 1024) }), 1);
  assert.ok(log.length < 1024 * 1024, 'the archive itself is small');
  await assert.rejects(parseOutputLog(log, ['zeros.bin'], { maxFileBytes: 1 << 30, maxTaskBytes: 1024 * 1024 }),
    { message: 'output files total over workflow.storage.max_task_bytes (1048576)' });
});

test('cluster: a file past max_file_bytes is refused; files within the caps come back', async () => {
  const log = helperLog(await tarOf({ 'a.txt': Buffer.alloc(5000, 97), 'b.txt': Buffer.from('b') }), 2);
  await assert.rejects(parseOutputLog(log, ['*.txt'], { maxFileBytes: 1000, maxTaskBytes: 1 << 30 }),
    { message: 'output file a.txt is 5000 bytes, over workflow.storage.max_file_bytes (1000)' });
  const files = await parseOutputLog(log, ['*.txt'], { maxFileBytes: 5000, maxTaskBytes: 5001 });
  assert.deepEqual(Object.keys(files).sort(), ['a.txt', 'b.txt']);
});

test('cluster: an archive that does not gunzip fails with a clear message', async () => {
  const gz = Buffer.from('this is not a gzip stream');
  const log = [OUTPUT_BEGIN, gz.toString('base64'), `${OUTPUT_END} 1 ${gz.length}`, ''].join('\n');
  await assert.rejects(parseOutputLog(log, ['*'], { maxFileBytes: 1000, maxTaskBytes: 1000 }),
    /^Error: collecting output files failed: the archive does not gunzip \(/);
});

test('local engine: the tar stream is not read past the cap', async () => {
  // A 64 MiB file produced lazily; count what the reader pulls.
  const pack = tar.pack();
  pack.on('error', (e) => { assert.equal((e as { code?: string }).code, 'PREMATURE_CLOSE', 'only the early close the reader causes'); });
  const entry = pack.entry({ name: 'work/big.bin', size: 64 * 1024 * 1024 });
  void (async () => {
    const chunk = Buffer.alloc(64 * 1024);
    for (let i = 0; i < 1024; i++) if (!entry.write(chunk)) await once(entry, 'drain');
    entry.end(); pack.finalize();
  })().catch(() => { /* the reader stops it early on purpose */ });
  let pulled = 0;
  const counted = new PassThrough();
  counted.on('data', (c: Buffer) => { pulled += c.length; });
  pack.pipe(counted);
  await assert.rejects(readTarFiles(counted, (n) => n.replace(/^work\//, ''), { maxFileBytes: 1024 * 1024, maxTaskBytes: 1 << 30 }),
    { message: 'output file big.bin is 67108864 bytes, over workflow.storage.max_file_bytes (1048576)' });
  assert.ok(pulled < 8 * 1024 * 1024, `read ${pulled} bytes of 64 MiB`);
});

/**
 * A tar stream holding one `mib` MiB file `work/big.bin`, produced lazily 64 KiB at a time (each
 * chunk different); `pulled` counts what the reader took, `sha256` is the file's, once produced.
 */
function lazyTar(mib: number) {
  const pack = tar.pack();
  pack.on('error', (e) => { assert.equal((e as { code?: string }).code, 'PREMATURE_CLOSE', 'only the early close the reader causes'); });
  const entry = pack.entry({ name: 'work/big.bin', size: mib * 1024 * 1024 });
  const hash = createHash('sha256');
  const state = { pulled: 0, sha256: '' };
  void (async () => {
    for (let i = 0; i < mib * 16; i++) {
      const chunk = Buffer.alloc(64 * 1024, i % 251);
      chunk.writeUInt32BE(i, 0);
      hash.update(chunk);
      if (!entry.write(chunk)) await once(entry, 'drain');
    }
    state.sha256 = hash.digest('hex');
    entry.end(); pack.finalize();
  })().catch(() => { /* the reader stops it early on purpose */ });
  const counted = new PassThrough();
  counted.on('data', (c: Buffer) => { state.pulled += c.length; });
  pack.pipe(counted);
  return { stream: counted, state };
}

/** A sink storing each file under `prefix` in the object store, counting what it was handed. */
function storeSink(prefix: string, seen: { delivered: number; biggestChunk: number; onChunk?: () => void }) {
  return async (name: string, body: Readable) => {
    const counter = new Transform({
      transform(c: Buffer, _e, cb) {
        seen.delivered += c.length;
        seen.biggestChunk = Math.max(seen.biggestChunk, c.length);
        seen.onChunk?.();
        cb(null, c);
      },
    });
    body.on('error', (e) => counter.destroy(e));
    await store.putStream(`${prefix}${name}`, body.pipe(counter));
  };
}

test('a 64 MiB file within the caps streams to the object store: the reader holds a few chunks, never the file', async () => {
  const { stream, state } = lazyTar(64);
  // bytes taken from the container's tar stream but not yet handed to the upload: what the reader holds
  let peakHeld = 0;
  const seen = { delivered: 0, biggestChunk: 0, onChunk: () => { peakHeld = Math.max(peakHeld, state.pulled - seen.delivered); } };
  stream.on('data', () => { peakHeld = Math.max(peakHeld, state.pulled - seen.delivered); });
  const files = await readTarFiles(stream, (n) => n.replace(/^work\//, ''), { maxFileBytes: 64 * 1024 * 1024, maxTaskBytes: 1 << 30 }, storeSink('ok/', seen));
  assert.deepEqual(files, {}, 'nothing is returned whole');
  assert.equal(seen.delivered, 64 * 1024 * 1024);
  assert.ok(seen.biggestChunk <= 1024 * 1024, `largest chunk handed on: ${seen.biggestChunk} bytes`);
  assert.ok(peakHeld < 4 * 1024 * 1024, `the reader held at most ${peakHeld} bytes of a 64 MiB file`);
  const got = await store.getStream('ok/big.bin');
  assert.ok(got);
  const hash = createHash('sha256');
  for await (const c of got.body) hash.update(c as Buffer);
  assert.equal(hash.digest('hex'), state.sha256, 'the stored object is the file');
});

test('a streamed file past max_task_bytes fails with the cap message mid-upload and leaves no object', async () => {
  const { stream, state } = lazyTar(64);
  const seen = { delivered: 0, biggestChunk: 0 };
  await assert.rejects(readTarFiles(stream, (n) => n.replace(/^work\//, ''), { maxFileBytes: 1 << 30, maxTaskBytes: 12 * 1024 * 1024 }, storeSink('over/', seen)),
    { message: 'output files total over workflow.storage.max_task_bytes (12582912)' });
  assert.ok(seen.delivered > 0, 'the upload had started');
  assert.ok(state.pulled < 24 * 1024 * 1024, `read ${state.pulled} bytes of 64 MiB`);
  assert.equal(await store.get('over/big.bin'), null, 'the aborted upload stored nothing');
});
