// The bundle's rewrites of fastify, avvio and find-my-way (scripts/bundle-rewrites.mjs) change when
// work is done, not what a server does: fastify bundled with them, as `npm run build` bundles it,
// answers like the original for routes declared around error handlers and reply serializers,
// plugins (awaited, not awaited, encapsulated or not, declaring routes themselves), afters,
// parameters, wildcards, constraints, HEAD and near misses.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import OriginalFastify from 'fastify';
import originalFp from 'fastify-plugin';
import { ROOT } from './helpers/cli.js';
// @ts-expect-error a build script in JavaScript, without types
import { FASTIFY_REWRITES, asciiEscaped } from '../scripts/bundle-rewrites.mjs';

type FastifyFactory = typeof OriginalFastify;
type Fp = typeof originalFp;

let dir: string;
let bundled: { Fastify: FastifyFactory; fp: Fp };
let code: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-bundle-rewrites-'));
  await build({
    stdin: { contents: "export { default as Fastify } from 'fastify'; export { default as fp } from 'fastify-plugin';", resolveDir: ROOT, loader: 'js' },
    bundle: true, format: 'esm', platform: 'node', target: 'node24', outfile: path.join(dir, 'fastify.mjs'), logLevel: 'error',
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    plugins: FASTIFY_REWRITES,
  });
  code = await readFile(path.join(dir, 'fastify.mjs'), 'utf8');
  bundled = await import(pathToFileURL(path.join(dir, 'fastify.mjs')).href);
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

/** Routes declared around the things that decide how a route is finished; what each answers. */
async function scenario(Fastify: FastifyFactory, fp: Fp): Promise<Record<string, unknown>> {
  const app = Fastify();
  const fail = async () => { throw new Error('boom'); };
  const handler = (by: string) => (_e: Error, _req: unknown, reply: { code(n: number): { send(v: unknown): unknown } }) => reply.code(500).send({ by });
  app.setErrorHandler(handler('root'));
  app.get('/a', fail);
  // not awaited, not encapsulated: it changes the root's handler when the boot reaches it
  app.register(fp(async (i) => { i.setErrorHandler(handler('fp')); }));
  app.get('/b', fail);
  app.register(async (child) => {
    child.get('/c', fail);
    child.setErrorHandler(handler('child'));
    child.get('/d', fail);
    await child.register(async (g) => {
      g.get('/e', fail);
      g.setErrorHandler(handler('grandchild'));
    });
    child.get('/f', fail);
    child.register(fp(async (i) => { i.setErrorHandler(handler('child fp')); }));
    child.get('/g', fail);
    child.get('/p/:x/:y', async (req) => req.params);
    child.post('/limited', { bodyLimit: 8 }, async (req) => req.body);
  });
  app.get('/h', async () => 'hello');
  app.get('/files/*', async (req) => req.params);
  app.after(() => { app.get('/late', fail); });
  // a plugin sharing the root (fastify-plugin) declares a route, then queues one that changes the
  // root's error handler and reply serializer: its route is finished before that one runs
  app.register(fp(async (i) => {
    i.get('/shared', fail);
    i.get('/shared/ok', async () => ({ shared: true }));
    i.register(fp(async (j) => {
      j.setErrorHandler(handler('shared fp'));
      j.setReplySerializer((payload) => JSON.stringify({ serialized: payload }));
    }));
  }));
  app.get('/after-shared', fail);
  app.get('/after-shared/ok', async () => ({ after: true }));
  // a route declared once an after has run still gets its hooks
  app.register(async (c) => {
    c.addHook('onRequest', async (_req, reply) => { reply.header('x-hooked', 'yes'); });
    c.get('/hooked/before', async () => 'before');
    await c.after();
    c.get('/hooked/after', async () => 'after');
  });
  // a constraint (find-my-way's constraints matcher)
  app.get('/versioned', { constraints: { version: '1.2.0' } }, async () => 'v1');
  app.get('/versioned', async () => 'any');
  await app.ready();
  const answers: Record<string, unknown> = {};
  for (const url of ['/a', '/b', '/c', '/d', '/e', '/f', '/g', '/late', '/p/1/two', '/files/x/y.txt', '/shared', '/shared/ok', '/after-shared', '/after-shared/ok']) {
    const r = await app.inject(url);
    answers[url] = [r.statusCode, r.body];
  }
  for (const url of ['/hooked/before', '/hooked/after']) {
    const r = await app.inject(url);
    answers[url] = [r.statusCode, r.headers['x-hooked'], r.body];
  }
  for (const version of ['1.2.0', '1.x', undefined]) {
    const r = await app.inject({ url: '/versioned', headers: version ? { 'accept-version': version } : {} });
    answers[`/versioned ${version}`] = [r.statusCode, r.body];
  }
  const head = await app.inject({ method: 'HEAD', url: '/h' });
  answers.head = [head.statusCode, head.headers['content-length'], head.body];
  const big = await app.inject({ method: 'POST', url: '/limited', payload: { much: 'too long' } });
  answers.limited = big.statusCode;
  for (const miss of ['/hh', '/H', '/p/1', '/filesx']) answers[miss] = (await app.inject(miss)).statusCode;
  await app.close();
  // the smallest case of a plugin sharing the root: its route is finished before the plugin it
  // queued runs, the root's route declared after it only after that
  const small = Fastify();
  small.setErrorHandler(handler('root'));
  small.register(fp(async (i) => {
    i.get('/y', fail);
    i.register(fp(async (j) => { j.setErrorHandler(handler('inner')); }));
  }));
  small.get('/x', fail);
  await small.ready();
  for (const url of ['/x', '/y']) answers[`small ${url}`] = (await small.inject(url)).body;
  await small.close();
  return answers;
}

test('the rewrites are in the bundle', () => {
  for (const name of ['matchPrefix', 'svcLazyParamsObject', 'svcLazyMatcher', 'svcBatchedAfter', '_svcAdds']) assert.ok(code.includes(name), name);
});

test('fastify bundled with the rewrites finishes and answers routes as the original does', async () => {
  const original = await scenario(OriginalFastify, originalFp);
  // the scenario tells the cases apart (a route finishes with the handler in place at its point of the boot)
  const by = (name: string) => JSON.stringify({ by: name });
  assert.deepEqual(original['/a'], [500, by('root')]);
  assert.deepEqual(original['/b'], [500, by('fp')]);
  assert.deepEqual(original['/c'], [500, by('child')]);
  assert.deepEqual(original['/g'], [500, by('child fp')]);
  assert.deepEqual(original['/p/1/two'], [200, JSON.stringify({ x: '1', y: 'two' })]);
  assert.deepEqual(original['/shared'], [500, by('fp')]);
  assert.deepEqual(original['/shared/ok'], [200, JSON.stringify({ shared: true })]);
  assert.deepEqual(original['/after-shared'], [500, JSON.stringify({ serialized: { by: 'shared fp' } })]);
  assert.deepEqual(original['/after-shared/ok'], [200, JSON.stringify({ serialized: { after: true } })]);
  assert.deepEqual(original['/hooked/after'], [200, 'yes', 'after']);
  assert.deepEqual(original['/versioned 1.2.0'], [200, 'v1']);
  assert.deepEqual([original['small /y'], original['small /x']], [by('root'), by('inner')]);
  assert.deepEqual(await scenario(bundled.Fastify, bundled.fp), original);
});

test('a chunk is made ASCII only where that changes nothing: its characters were in comments or strings', async () => {
  assert.equal(await asciiEscaped('const s = "ascii";\n'), 'const s = "ascii";\n');
  assert.equal(await asciiEscaped('// a \u2014 dash\nconst s = "caf\u00e9";\n'), '// a \\u2014 dash\nconst s = "caf\\u00e9";\n');
  // in a pattern and in a tagged template's raw text an escape can change the program (a `\—`
  // in a pattern, the text a tag reads), which the check does not tell apart: left as it is
  for (const code of ['const r = /\\\u2014/;', 'const r = /[^\\s\u2502,]+/g;', 'const s = String.raw`caf\u00e9`;']) assert.equal(await asciiEscaped(code), null, code);
});
