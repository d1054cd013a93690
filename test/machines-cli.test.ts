// `svc client add|list|rotate|delete` and `svc idp rotate-key` as an operator runs them (the built
// binary, a real database); the printed secret is then used at the token endpoint of an app on
// the same database.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createTestDatabase, query, type TestDatabase } from './helpers/db.js';
import { runSvc, cleanEnv } from './helpers/cli.js';
import { loadConfig } from '../src/config/index.js';
import { createServices, type Services } from '../src/services.js';
import { buildApp } from '../src/api/app.js';
import { createLogging } from '../src/log/logger.js';

let db: TestDatabase;
let env: Record<string, string>;
let app: FastifyInstance;
let services: Services;
let stopListening: () => Promise<void>;

before(async () => {
  db = await createTestDatabase();
  env = cleanEnv({ SVC_DATABASE__URL: db.url, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_LOG__FILTER: 'warn' });
  assert.equal((await runSvc(['migrate'], { env })).code, 0);
  const cwd = await mkdtemp(path.join(tmpdir(), 'svc-cli-app-'));
  const config = loadConfig({ cwd, env: { SVC_DATABASE__URL: db.url, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_IDP__ISSUER: 'https://idp.example.test' } });
  const sink = new PassThrough();
  sink.resume();
  services = createServices(config, { logging: createLogging({ filter: 'error', json: true }, sink) });
  // A running server listens for invalidations (as `svc serve` does): the CLI's changes reach it.
  stopListening = await services.invalidator.listen();
  app = await buildApp({ services, logger: services.logging.module('svc::api') });
  await app.ready();
});
after(async () => { await app.close(); await stopListening(); await services.close(); await db.drop(); });

/** Lets I/O that already arrived (an invalidation published by the command that just ended) be handled. */
const settle = () => new Promise((r) => setImmediate(r));

function token(clientId: string, secret: string, audience?: string) {
  return app.inject({
    method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret, ...(audience ? { audience } : {}) }).toString(),
  });
}

function parseCredentials(stdout: string): { id: string; secret: string } {
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, 2, stdout);
  const id = /^client_id: (svc-[A-Za-z0-9_-]+)$/.exec(lines[0]);
  const secret = /^client_secret: (svcs_[A-Za-z0-9_-]{43})$/.exec(lines[1]);
  assert.ok(id && secret, stdout);
  return { id: id[1], secret: secret[1] };
}

describe('svc client', () => {
  test('add prints exactly the client_id and client_secret lines; the secret works; only its hash is stored', async () => {
    const r = await runSvc(['client', 'add', '--name', 'trino', '--audience', 'svc-catalog', '--audience', 'engine-a', '--workspace', 'default'], { env });
    // workspace default does not exist before `svc init`
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), 'not_found: workspace does not exist: default');
    assert.equal((await runSvc(['init'], { env })).code, 0);
    const ok = await runSvc(['client', 'add', '--name', 'trino', '--audience', 'svc-catalog', '--audience', 'engine-a', '--workspace', 'default'], { env });
    assert.equal(ok.code, 0, ok.stderr);
    const { id, secret } = parseCredentials(ok.stdout);
    const res = await token(id, secret, 'engine-a');
    assert.equal(res.statusCode, 200, res.body);
    const claims = decodeJwt(res.json().access_token);
    assert.equal(claims.iss, 'https://idp.example.test');
    assert.equal(claims.sub, id);
    assert.equal(claims.workspace, 'default');
    const rows = await query<{ row: string }>(db.url, 'SELECT c::text AS row FROM oauth_clients c');
    assert.ok(!rows.map((x) => x.row).join('').includes(secret));
    const audit = await query<{ action: string; actor: string }>(db.url, "SELECT action, actor FROM audit_events WHERE target = $1", [`client:${id}`]);
    assert.deepEqual(audit, [{ action: 'client.create', actor: 'svc-cli' }]);
  });

  test('list, rotate (old secret stops working), delete', async () => {
    const { id, secret } = parseCredentials((await runSvc(['client', 'add', '--name', 'spark jobs', '--audience', 'svc-catalog', '--scope', 'catalog', '--token-exchange'], { env })).stdout);
    const list = await runSvc(['client', 'list'], { env });
    assert.equal(list.code, 0, list.stderr);
    const line = list.stdout.split('\n').find((l) => l.startsWith(id));
    assert.ok(line, list.stdout);
    assert.match(line, /spark jobs\s+svc-catalog\s+client_credentials,token_exchange\s+-\s+ES256\s+\d{4}-/);
    assert.ok(!list.stdout.includes(secret));

    const rotated = await runSvc(['client', 'rotate', id], { env });
    assert.equal(rotated.code, 0, rotated.stderr);
    const fresh = parseCredentials(rotated.stdout);
    assert.equal(fresh.id, id);
    await settle();
    assert.equal((await token(id, secret)).statusCode, 401);
    assert.equal((await token(id, fresh.secret)).statusCode, 200);

    const del = await runSvc(['client', 'delete', id], { env });
    assert.equal(del.code, 0, del.stderr);
    assert.equal(del.stdout.trim(), `deleted: ${id}`);
    await settle();
    assert.equal((await token(id, fresh.secret)).statusCode, 401);
    const again = await runSvc(['client', 'delete', id], { env });
    assert.equal(again.code, 1);
    assert.equal(again.stderr.trim(), `not_found: client does not exist: ${id}`);
  });

  test('usage errors: --audience is required; a bad audience is one line', async () => {
    const r = await runSvc(['client', 'add', '--name', 'x'], { env });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--audience/);
    const bad = await runSvc(['client', 'add', '--name', 'x', '--audience', 'has space'], { env });
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
    assert.match(bad.stderr, /^bad_request: invalid audience/);
    const help = await runSvc(['--help'], { env });
    assert.match(help.stdout, /\bclient\b/);
    assert.match(help.stdout, /\bidp\b/);
  });
});

describe('svc idp rotate-key', () => {
  test('creates new ES256 and RS256 keys and retires the old ones, which stay published; the app signs with the new keys', async () => {
    const keysBefore = (await app.inject('/.well-known/jwks.json')).json().keys as Array<{ kid: string; alg: string }>;
    assert.deepEqual(keysBefore.map((k) => k.alg).sort(), ['ES256', 'RS256']);
    const r = await runSvc(['idp', 'rotate-key'], { env });
    assert.equal(r.code, 0, r.stderr);
    const kid = /^kid: (\S+) \(ES256\)$/m.exec(r.stdout)?.[1];
    const rsKid = /^kid: (\S+) \(RS256\)$/m.exec(r.stdout)?.[1];
    assert.ok(kid && rsKid, r.stdout);
    for (const old of keysBefore) {
      assert.match(r.stdout, new RegExp(`^retired: ${old.kid} \\(${old.alg}, published until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)$`, 'm'));
    }
    assert.equal(r.stdout.trim().split('\n').length, 4);
    assert.match(r.stderr, /secrets\.master_key is not set/);
    const { machines } = await import('../src/idp/state.js');
    machines(services).keys.forget(); // this replica's cache, as after KEY_CACHE_MS
    const kids = ((await app.inject('/.well-known/jwks.json')).json().keys as Array<{ kid: string }>).map((k) => k.kid).sort();
    assert.deepEqual(kids, [...keysBefore.map((k) => k.kid), kid, rsKid].sort());
    const { id, secret } = parseCredentials((await runSvc(['client', 'add', '--name', 'k', '--audience', 'a'], { env })).stdout);
    const res = await token(id, secret);
    assert.equal(decodeProtectedHeader(res.json().access_token).kid, kid);
    const rs = parseCredentials((await runSvc(['client', 'add', '--name', 'legacy', '--audience', 'a', '--signing-alg', 'RS256'], { env })).stdout);
    const rsToken = (await token(rs.id, rs.secret)).json().access_token;
    assert.deepEqual([decodeProtectedHeader(rsToken).alg, decodeProtectedHeader(rsToken).kid], ['RS256', rsKid]);
  });
});
