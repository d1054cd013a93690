// Output files read from a container stop at workflow.storage.max_file_bytes / max_task_bytes as
// they are read: the local engine's tar stream is not drained past the cap, and the cluster
// helper's gzipped archive is not gunzipped past it (a small archive may hold gigabytes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar-stream';
import { readTarFiles } from '../src/runners/output-files.js';
import { parseOutputLog } from '../src/runners/cluster/index.js';
import { OUTPUT_BEGIN, OUTPUT_END } from '../src/runners/cluster/scripts.js';

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
    { message: 'output file a.txt is over workflow.storage.max_file_bytes (1000)' });
  const files = await parseOutputLog(log, ['*.txt'], { maxFileBytes: 5000, maxTaskBytes: 5001 });
  assert.deepEqual(Object.keys(files).sort(), ['a.txt', 'b.txt']);
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
    { message: 'output file big.bin is over workflow.storage.max_file_bytes (1048576)' });
  assert.ok(pulled < 8 * 1024 * 1024, `read ${pulled} bytes of 64 MiB`);
});
