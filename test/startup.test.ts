// Start-up does only what the command needs (issue 27 point 8; the figures are in
// bench/cold-start.ts): `svc -V` and `svc openapi` load no route module and no heavy client, and
// `svc serve` loads none of the heavy clients (Kubernetes, dockerode, DuckDB, playwright) while
// they are not enabled (the AWS SDK comes right after listening, for the bucket check). Which modules a process loads is recorded
// by a module hook (module.registerHooks, in the process itself) given through NODE_OPTIONS; svc
// runs the bundle of the build (dist/bundle/, scripts/bundle.mjs), so what a command loads is
// counted in bundle files and in the packages kept out of it.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, readFile, readdir, rm, writeFile, utimes } from 'node:fs/promises';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { ROOT, SVC_BIN, cleanEnv, runSvc, serviceEnv, waitExit } from './helpers/cli.js';
import { freePort } from './helpers/net.js';
import { prebuiltDocument } from '../src/cli/openapi.js';
import { buildOpenApiDocument } from '../src/api/openapi.js';

const HEAVY = ['@kubernetes/client-node', 'dockerode', '@duckdb/node-api', 'playwright-core'];
const ON_FIRST_USE = ['ajv', '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'light-my-request'];
const pkgOf = (url: string) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-startup-'));
  await writeFile(path.join(dir, 'record.mjs'), `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
registerHooks({ load(url, context, next) { appendFileSync(process.env.SVC_TEST_LOADED, url + '\\n'); return next(url, context); } });
`);
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

/** The env of a process whose loaded module URLs are appended to `file`. */
const recording = (file: string, env: Record<string, string>) => ({ ...env, SVC_TEST_LOADED: file, NODE_OPTIONS: `--import=${path.join(dir, 'record.mjs')}` });
const loaded = async (file: string) => (await readFile(file, 'utf8')).split('\n').filter(Boolean);

/** Files of the bundle the build writes (dist/bundle/, scripts/bundle.mjs), which bin/svc.js runs. */
const bundled = (urls: string[]) => urls.filter((u) => u.includes('/dist/bundle/'));
/** KiB of bundle files loaded: the entry (commander, the command table) and small shared chunks stay under it; the route tree is megabytes. */
const SMALL_KIB = 256;
const kib = (urls: string[]) => bundled(urls).reduce((n, u) => n + statSync(fileURLToPath(u)).size, 0) / 1024;

test('svc -V loads the bundle\'s entry and small shared chunks: no package of node_modules, no command', async () => {
  const file = path.join(dir, 'version.txt');
  const r = await runSvc(['-V'], { env: recording(file, cleanEnv()) });
  assert.equal(r.code, 0, r.stderr);
  const urls = await loaded(file);
  assert.deepEqual(urls.map(pkgOf).filter(Boolean), [], 'commander is in the bundle');
  assert.ok(kib(urls) < SMALL_KIB, `${kib(urls)} KiB`);
  assert.ok(!urls.some((u) => /\/dist\/(?!bundle\/)/.test(u)), 'no module of the compiled tree');
});

test('svc openapi prints the prebuilt document of the build, the same as building it, loading no route', async () => {
  const file = path.join(dir, 'openapi.txt');
  const r = await runSvc(['openapi'], { env: recording(file, cleanEnv()) });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), await buildOpenApiDocument());
  const urls = await loaded(file);
  assert.ok(!urls.some((u) => /\/dist\/(?!bundle\/)/.test(u)), 'no module of the compiled tree');
  assert.deepEqual(urls.map(pkgOf).filter(Boolean), []);
  // the entry, the command's chunk and the small chunks they share: never the route tree's
  assert.ok(kib(urls) < SMALL_KIB, `${kib(urls)} KiB`);
});

test('a prebuilt document older than any compiled file is not used', async () => {
  const d = await mkdtemp(path.join(dir, 'dist-'));
  const doc = path.join(d, 'openapi.json');
  await writeFile(doc, '{"openapi":"3.1.0"}\n');
  await writeFile(path.join(d, 'app.js'), '');
  await writeFile(path.join(d, '.tsbuildinfo'), '');
  const old = new Date(Date.now() - 60_000);
  await utimes(path.join(d, 'app.js'), old, old);
  assert.equal(prebuiltDocument(doc), '{"openapi":"3.1.0"}\n', 'newer than what it was built from: used (bookkeeping files do not count)');
  const later = new Date(Date.now() + 60_000);
  await utimes(path.join(d, 'app.js'), later, later);
  assert.equal(prebuiltDocument(doc), null, 'a compiled file changed after it: rebuilt from the routes');
  assert.equal(prebuiltDocument(path.join(d, 'missing.json')), null);
});

describe('svc serve with no cluster, container engine, engine or renderer enabled', () => {
  let db: TestDatabase;
  let s3: TestS3;
  before(async () => { [db, s3] = await Promise.all([createTestDatabase('svc_startup'), startS3()]); });
  after(async () => { await Promise.all([db?.drop(), s3?.stop()]); });

  test('loads none of the heavy clients by the time it listens', async () => {
    const file = path.join(dir, 'serve.txt');
    const port = await freePort();
    const env = recording(file, serviceEnv(db.url, s3, { SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port) }));
    const child = spawn(process.execPath, [SVC_BIN, 'serve'], { env, cwd: ROOT });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    try {
      // svc's own line (fastify's "Server listening at" comes before the apps listener and the checks' end)
      const listening = /"msg":"listening"|INFO: listening$/m;
      for (let i = 0; i < 900 && !listening.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
      assert.match(out, listening);
      const urls = await loaded(file);
      const pkgs = new Set(urls.map(pkgOf).filter(Boolean));
      assert.ok(bundled(urls).length > 1 && pkgs.has('pino'), 'the recording works (the bundle, and a package kept out of it)');
      assert.deepEqual(HEAVY.filter((p) => pkgs.has(p)), []);
      // Nor what only a route's first compiled answer, the queue dashboard or fastify's default
      // compilers need (kept out of the bundle, loaded from node_modules on first use); of
      // fast-json-stringify, fastify's error serializer takes the runtime of its generated code.
      assert.deepEqual(ON_FIRST_USE.filter((p) => pkgs.has(p)), []);
      assert.deepEqual(urls.filter((u) => pkgOf(u) === 'fast-json-stringify').map((u) => u.replace(/.*\/fast-json-stringify\//, '')).sort(), ['lib/serializer.js', 'lib/v8.js']);
      // Node's child_process is loaded by what starts processes (a pod, a subcommand) when it does,
      // and by bullmq, which the loops load once it listens: not on the way there (the recording
      // sees Node's own modules, in the order they load; crypto is loaded by the sessions and pg).
      assert.ok(urls.includes('node:crypto'), 'the recording sees Node\'s modules');
      const childProcess = urls.indexOf('node:child_process');
      const bullmq = urls.findIndex((u) => pkgOf(u) === 'bullmq');
      assert.ok(childProcess === -1 || (bullmq !== -1 && bullmq < childProcess), 'node:child_process is loaded only after bullmq, by it');
      // Every chunk is ASCII (scripts/bundle.mjs asciiOnly): one other character makes a two-byte string of it.
      assert.deepEqual(bundled(urls).filter((u) => /[^\x00-\x7f]/.test(readFileSync(fileURLToPath(u), 'latin1'))), []);
      // An ES import of node:http reads its `WebSocket` export, which loads Node's undici (about
      // 25 ms of the start): the loaded chunks reach it through require() (src/util/node-http.ts).
      const esHttp = bundled(urls).filter((u) => /^import \S+ from "node:https?";$/m.test(readFileSync(fileURLToPath(u), 'utf8')));
      assert.deepEqual(esHttp, []);
      // The bundle's router matches static paths with its own prefix check (scripts/bundle.mjs
      // routerPrefixMatch): a route answers, a path differing from it in one character does not.
      const base = `http://127.0.0.1:${port}`;
      assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
      assert.deepEqual(await (await fetch(`${base}/readyz`)).json(), { status: 'ok', db: 'up' });
      for (const miss of ['/healthy', '/healthzz', '/hEalthz', '/health', '/readyzz']) {
        const r = await fetch(`${base}${miss}`);
        assert.doesNotMatch(await r.text(), /"status":"ok"/, miss);
      }
      // The console's files are sent by @fastify/static, whose mime, http-errors and glob the bundle
      // loads on first use (scripts/bundle.mjs lazyPackages): a page, an asset, its 304, its .br.
      const page = await fetch(`${base}/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
      const icon = await fetch(`${base}/ui/favicon.svg`);
      assert.equal(icon.status, 200);
      assert.equal(icon.headers.get('content-type'), 'image/svg+xml');
      assert.match(await icon.text(), /<svg/);
      // (through node:http: fetch gets a 200 here, as it did before the bundle loaded these lazily)
      const revalidated = await new Promise<number>((resolve, reject) => {
        http.get(`${base}/ui/favicon.svg`, { headers: { 'if-none-match': icon.headers.get('etag')! } }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject);
      });
      assert.equal(revalidated, 304);
      const unsatisfiable = await fetch(`${base}/ui/favicon.svg`, { headers: { range: 'bytes=9999-' } });
      assert.equal(unsatisfiable.status, 416);
      assert.equal((await unsatisfiable.json()).message, 'Range Not Satisfiable', 'the error http-errors makes');
      const script = (await readdir(path.join(ROOT, 'ui/dist/assets'))).find((f) => f.endsWith('.js') && !f.includes('.js.'))!;
      const packed = await fetch(`${base}/ui/assets/${script}`, { headers: { 'accept-encoding': 'br' } });
      assert.equal(packed.status, 200);
      assert.equal(packed.headers.get('content-encoding'), 'br');
      assert.equal(await packed.text(), await readFile(path.join(ROOT, 'ui/dist/assets', script), 'utf8'));
    } finally {
      child.kill('SIGTERM');
      await waitExit(child);
    }
  });
});

test('bin/svc.js loads ioredis with its commands defined on a prototype in dictionary mode (bin/load-hooks.js)', async () => {
  // The line the hook rewrites is still in the installed ioredis, and V8 sees the effect: the
  // prototype is not in fast mode right after the module's load (without the hook it is).
  const script = `const s = require('./bin/load-hooks.js').ioredisCommandsInDictionaryMode();
const proto = require('ioredis/built/utils/Commander.js').default.prototype;
process.stdout.write(JSON.stringify({ rewritten: s.rewritten, fast: %HasFastProperties(proto), get: typeof proto.get }));`;
  const run = (hook: boolean) => new Promise<{ rewritten: boolean; fast: boolean; get: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--allow-natives-syntax', '-e', hook ? script : script.replace("require('./bin/load-hooks.js').ioredisCommandsInDictionaryMode()", '{ rewritten: false }')], { cwd: ROOT });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(out))));
  });
  assert.deepEqual(await run(true), { rewritten: true, fast: false, get: 'function' });
  assert.deepEqual(await run(false), { rewritten: false, fast: true, get: 'function' });
});
