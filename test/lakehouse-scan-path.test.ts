// The parts of a catalog table scan that bench/lakehouse.ts made faster, held to what they must
// still do (docs/engines.md "The lakehouse"):
// - the file cache copies files while planning still runs (prefetch): each object is read once
//   however many ask for it, prefetched files stay pinned until released, a failed copy is
//   reported by the hold that follows, nothing starts after release; an evicted file read again
//   at once is copied anew (its removal finishes first);
// - a manifest is one bounded GET: larger than the bound is refused whether announced or not;
// - DuckDB's parser answers are memoized per workspace (scope), each call gets its own tree, a
//   failed parse is not kept.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { startS3, type TestS3 } from './helpers/s3.js';
import { FileCache } from '../src/queries/lakehouse/file-cache.js';
import { readBounded } from '../src/queries/lakehouse/lakehouse.js';
import { duckdbParser } from '../src/queries/sql/parser.js';
import { QueryFailure } from '../src/queries/types.js';

let s3: TestS3;
let client: S3Client;
let root: string;
let opens: string[] = [];
const WS = 'ws-1';

/** The cache's reader: an S3 GET of the location's key, counted. */
const open = async (location: string) => {
  opens.push(location);
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: 'warehouse', Key: location }));
    return { body: out.Body as Readable, size: out.ContentLength ?? 0 };
  } catch (err) {
    if ((err as { name?: string }).name === 'NoSuchKey') return null;
    throw err;
  }
};

before(async () => {
  s3 = await startS3('warehouse');
  client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: s3.accessKey, secretAccessKey: s3.secretKey } });
  for (const k of ['a', 'b', 'c']) await client.send(new PutObjectCommand({ Bucket: 'warehouse', Key: k, Body: Buffer.alloc(40, k) }));
  root = await mkdtemp(path.join(tmpdir(), 'svc-scan-path-'));
});
after(async () => { client.destroy(); await s3.stop(); await rm(root, { recursive: true, force: true }); });

describe('the file cache copies while planning runs', () => {
  test('prefetched files are read once, pinned until released, and found by the hold that follows', async () => {
    opens = [];
    const cache = new FileCache(path.join(root, 'one'), 100, open, pino({ level: 'silent' }));
    const early = cache.prefetch(WS);
    early.add(['a', 'b']);
    const held = await cache.hold(WS, ['a', 'b']);
    assert.deepEqual(opens.sort(), ['a', 'b'], 'the hold shares the copies already under way');
    assert.deepEqual(await readFile(held.files[1]!), Buffer.alloc(40, 'b'));
    held.release();
    // 80 of 100 bytes are pinned by the prefetch: c (40) does not fit and nothing may be evicted
    await assert.rejects(cache.hold(WS, ['c']), (err: unknown) => err instanceof QueryFailure && err.kind === 'refused' && /embedded_cache_bytes/.test(err.message));
    early.release();
    const c = await cache.hold(WS, ['c']);
    assert.equal(cache.bytes, 80, 'the least recently used file went for c');
    c.release();
    early.add(['a']);
    assert.equal(opens.filter((o) => o === 'a').length, 1, 'nothing starts after release');
  });

  test('a copy that fails in the prefetch is reported by the hold, not lost', async () => {
    const cache = new FileCache(path.join(root, 'two'), 1000, open, pino({ level: 'silent' }));
    const early = cache.prefetch(WS);
    early.add(['missing']);
    await assert.rejects(cache.hold(WS, ['missing']), /missing from the object store: missing/);
    early.release();
  });

  test('a file evicted and read again at once is copied anew, never lost to its own removal', async () => {
    // two files fit: b's copy evicts a (the least recently used); a is asked for again the moment
    // b's answer arrives, so a's copy starts while a's removal may still be running
    let again: Promise<{ files: string[]; release: () => void }> | undefined;
    const racing = async (location: string) => {
      const obj = await open(location);
      if (location === 'b' && !again) setImmediate(() => { again = cache.hold(WS, ['a']); });
      return obj;
    };
    const cache = new FileCache(path.join(root, 'four'), 100, racing, pino({ level: 'silent' }));
    for (let i = 0; i < 30; i++) {
      again = undefined;
      (await cache.hold(WS, ['a'])).release();
      (await cache.hold(WS, ['c'])).release();
      const b = await cache.hold(WS, ['b']);
      while (!again) await new Promise((r) => setImmediate(r));
      const a = await again;
      await new Promise((r) => setTimeout(r, 2));
      assert.deepEqual(await readFile(a.files[0]!), Buffer.alloc(40, 'a'), `round ${i}`);
      a.release();
      b.release();
      (await cache.hold(WS, ['c'])).release(); // b then a go next round: start again from a, c
    }
  });

  test('an aborted query starts no prefetch', async () => {
    opens = [];
    const cache = new FileCache(path.join(root, 'three'), 1000, open, pino({ level: 'silent' }));
    const stop = new AbortController();
    stop.abort();
    cache.prefetch(WS, stop.signal).add(['a', 'b']);
    assert.deepEqual(opens, []);
  });
});

describe('a manifest is one bounded read', () => {
  const tooLarge = (n: number) => new QueryFailure('refused', `a manifest of ${n} bytes is larger than 10`);
  test('within the bound: the bytes', async () => {
    assert.deepEqual(Buffer.from(await readBounded(Readable.from([Buffer.from('hello'), Buffer.from('!')]), 6, 10, tooLarge)), Buffer.from('hello!'));
  });
  test('announced larger: refused without reading; larger than announced: refused while reading', async () => {
    let read = false;
    const body = new Readable({ read() { read = true; this.push(null); } });
    await assert.rejects(readBounded(body, 11, 10, tooLarge), /11 bytes is larger than 10/);
    assert.equal(read, false);
    await assert.rejects(readBounded(Readable.from([Buffer.alloc(6), Buffer.alloc(6)]), 5, 10, tooLarge), /12 bytes is larger than 10/);
  });
});

describe('DuckDB\'s parser answers, memoized per workspace', () => {
  let instance: DuckDBInstance;
  let conn: DuckDBConnection;
  let calls: string[] = [];
  const scalar = async (sql: string, arg: string) => { calls.push(sql); return String((await conn.runAndReadAll(sql, [arg])).getRows()[0]![0]); };
  before(async () => { instance = await DuckDBInstance.create(':memory:'); conn = await instance.connect(); });
  after(() => { conn.closeSync(); instance.closeSync(); });

  test('a repeat in the same scope asks DuckDB once and gets a tree of its own; another scope asks again', async () => {
    calls = [];
    const sql = 'SELECT 41 + 1 AS answer_memo_test';
    const a = duckdbParser(scalar, 'ws-a');
    const first = await a.parse(sql);
    const second = await duckdbParser(scalar, 'ws-a').parse(sql);
    assert.ok(first.ok && second.ok);
    assert.equal(calls.length, 1);
    assert.deepEqual(first.statements, second.statements);
    (first.statements[0]!.node as Record<string, unknown>).select_list = [];
    assert.notDeepEqual(first.statements, second.statements, 'rewriting one tree leaves the next caller\'s alone');
    await duckdbParser(scalar, 'ws-b').parse(sql);
    assert.equal(calls.length, 2, 'a workspace never sees another\'s memo, not even in timings');
    await duckdbParser(scalar).parse(sql);
    await duckdbParser(scalar).parse(sql);
    assert.equal(calls.length, 4, 'without a scope nothing is kept');

    const printed = await a.print(second.statements[0]!);
    assert.equal(await a.print(second.statements[0]!), printed);
    assert.equal(calls.length, 5);
    assert.match(printed, /answer_memo_test/);
  });

  test('a statement that does not parse is asked again', async () => {
    calls = [];
    const p = duckdbParser(scalar, 'ws-a');
    for (let i = 0; i < 2; i++) assert.equal((await p.parse('SELEC nonsense')).ok, false);
    assert.equal(calls.length, 2);
  });
});

describe('one workspace\'s running scan does not refuse another\'s read outright', () => {
  test('room pinned by another workspace is waited for; room pinned by the same workspace is refused at once', async () => {
    opens = [];
    const cache = new FileCache(path.join(root, 'fair'), 100, open, pino({ level: 'silent' }));
    const long = await cache.hold('ws-a', ['a', 'b']); // 80 of 100 bytes, held by a running query of ws-a
    // ws-a itself needing c (40) cannot fit beside its own 80: refused at once, nothing to wait for
    await assert.rejects(cache.hold('ws-a', ['c']), (err: unknown) => err instanceof QueryFailure && err.kind === 'refused');
    // ws-b's read waits for ws-a's query to let go, then gets its file
    let done = false;
    const other = cache.hold('ws-b', ['c']).then((h) => { done = true; return h; });
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(done, false, 'waiting while ws-a holds the room');
    long.release();
    const got = await other;
    assert.deepEqual(await readFile(got.files[0]!), Buffer.alloc(40, 'c'));
    got.release();
  });
});
