// The runtime (issue 27 point 6): the tests run on Node.js 24 LTS, the native dependencies work on
// it, `svc` started by an older Node re-runs itself on the project's Node 24, and every
// dependency's install script has a recorded decision (package.json `allowScripts`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createTestDatabase } from './helpers/db.js';
import { startS3 } from './helpers/s3.js';
import { ROOT, SVC_BIN, cleanEnv, serviceEnv, waitExit } from './helpers/cli.js';
import { freePort } from './helpers/net.js';

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; allowScripts: Record<string, boolean> };
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
const PINNED = /^SVC_NODE_VERSION=(\S+)$/m.exec(readFileSync(path.join(ROOT, 'scripts/node.sh'), 'utf8'))![1];
const major = (v: string) => Number(v.replace(/^v/, '').split('.')[0]);

test('the tests run on Node.js 24 LTS, the release package.json and scripts/node.sh name', () => {
  assert.equal(pkg.engines.node, '>=24');
  assert.equal(major(PINNED), 24);
  assert.ok(major(process.version) >= 24, `running on ${process.version}: scripts/test.sh puts Node ${PINNED} first on PATH`);
});

test('the native dependencies load and work on this Node: DuckDB, argon2, msgpackr\'s extractor', async () => {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const duck = await DuckDBInstance.create(':memory:');
  const conn = await duck.connect();
  const rows = (await conn.runAndReadAll("SELECT 40 + 2 AS answer, 'ok' AS word")).getRowObjects();
  assert.deepEqual(rows, [{ answer: 42, word: 'ok' }]);
  conn.closeSync();
  duck.closeSync();

  const argon2 = await import('@node-rs/argon2');
  const hash = await argon2.hash('correct horse');
  assert.match(hash, /^\$argon2id\$/);
  assert.equal(await argon2.verify(hash, 'correct horse'), true);
  assert.equal(await argon2.verify(hash, 'wrong horse'), false);

  // BullMQ's msgpackr: the native extractor, not the JavaScript fallback
  const require = createRequire(path.join(ROOT, 'node_modules/bullmq/package.json'));
  const msgpackr = require('msgpackr') as { isNativeAccelerationEnabled: boolean; pack(v: unknown): Buffer; unpack(b: Buffer): unknown };
  assert.equal(msgpackr.isNativeAccelerationEnabled, true);
  assert.deepEqual(msgpackr.unpack(msgpackr.pack({ a: [1, 'two'] })), { a: [1, 'two'] });
});

test('every dependency with an install script has a decision in allowScripts (npm 11 advises, npm 12 blocks)', () => {
  const withScripts = Object.entries(lock.packages)
    .filter(([p, v]) => p !== '' && v.hasInstallScript)
    .map(([p]) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(withScripts.length > 0, 'the lock marks install scripts');
  assert.deepEqual([...new Set(withScripts)].sort(), Object.keys(pkg.allowScripts).sort());
  // none runs: each ships its platform binary as an optional package (docs/decisions.md)
  assert.ok(Object.values(pkg.allowScripts).every((v) => v === false));
  const setup = readFileSync(path.join(ROOT, 'scripts/setup.sh'), 'utf8');
  assert.match(setup, /^\s*npm ci --ignore-scripts /m);
});

// The machines have Node 20 as `node`; `npx svc` starts there. A machine without an older Node
// has nothing to re-run (the test says so and passes).
const OLD_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p) && major(spawnSync(p, ['-v']).stdout.toString()) < 24);
const LOCAL_NODE = path.join(ROOT, '.tools/node/node_modules/.bin/node');

test('svc started by an older Node runs on the project\'s Node 24, with its exit code and signals', { skip: !OLD_NODE || !existsSync(LOCAL_NODE) ? 'no older Node on this machine, or no .tools/node' : false }, async () => {
  // Every Node process of the chain prints its version first (NODE_OPTIONS reaches the child).
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-runtime-'));
  await writeFile(path.join(dir, 'version.mjs'), 'process.stderr.write(`node:${process.version}\\n`);\n');
  const env = { ...cleanEnv(), NODE_OPTIONS: `--import=${path.join(dir, 'version.mjs')}` };
  const v = spawnSync(OLD_NODE!, [SVC_BIN, '-V'], { env, encoding: 'utf8' });
  assert.equal(v.status, 0, v.stderr);
  assert.match(v.stdout.trim(), /^\d+\.\d+\.\d+$/);
  assert.deepEqual(v.stderr.match(/^node:v\d+/gm)?.map((l) => major(l.slice(5))), [major(spawnSync(OLD_NODE!, ['-v']).stdout.toString()), 24]);
  await rm(dir, { recursive: true });

  const bad = spawnSync(OLD_NODE!, [SVC_BIN, 'frobnicate'], { encoding: 'utf8' });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /unknown command 'frobnicate'/);

  // SIGTERM to the wrapper reaches svc serve, which drains and exits 0
  const [db, s3, port] = await Promise.all([createTestDatabase('svc_runtime'), startS3(), freePort()]);
  // its own process group, so that a failure here leaves no server behind (the kill in finally)
  const child = spawn(OLD_NODE!, [SVC_BIN, 'serve'], { env: serviceEnv(db.url, s3, { SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port) }), detached: true });
  try {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    // svc's own line, after which a signal drains (fastify's "Server listening at" comes before it,
    // when a SIGTERM still ends the process as Node's default does)
    const listening = /INFO: listening$/m;
    for (let i = 0; i < 600 && !listening.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(out, listening);
    child.kill('SIGTERM');
    assert.equal(await waitExit(child), 0, out);
    assert.match(out, /stopped/);
  } finally {
    try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* the group has ended */ }
    await Promise.all([db.drop(), s3.stop()]);
  }
});
