// Sealed secrets: the AES-256-GCM sealing format, workspace connections whose secrets are sealed
// and never returned, the clear 4xx without a master key, the clear "cannot unseal" error under a
// changed master key (for connections and for the identity provider's signing key), and a dump of
// every table proving that no plaintext secret is stored.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { query } from './helpers/db.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { Sealer, UnsealError } from '../src/secrets/seal.js';
import { readConnectionSecret } from '../src/secrets/connections.js';
import { createClient, CLI_ACTOR } from '../src/idp/clients.js';
import { loadConfig } from '../src/config/index.js';
import { createServices, type Services } from '../src/services.js';
import { buildApp } from '../src/api/app.js';
import { createLogging } from '../src/log/logger.js';
import { ManualClock } from '../src/clock.js';

const KEY_A = randomBytes(32).toString('base64');
const KEY_B = randomBytes(48).toString('base64');
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

/** A second replica on an existing database, with other settings (e.g. another master key). */
async function replicaOn(dbUrl: string, env: Record<string, string>): Promise<{ app: FastifyInstance; services: Services; logs(): string; close(): Promise<void> }> {
  const cwd = await mkdtemp(path.join(tmpdir(), 'svc-replica-'));
  const config = loadConfig({ cwd, env: { SVC_DATABASE__URL: dbUrl, SVC_STORAGE__ACCESS_KEY: 'ak', SVC_STORAGE__SECRET_KEY: 'sk', SVC_LOG__FILTER: 'error', ...env } });
  const sink = new PassThrough();
  let logs = '';
  sink.on('data', (d) => { logs += d; });
  const services = createServices(config, { clock: new ManualClock(Date.now()), logging: createLogging({ filter: config.log.filter, json: true }, sink) });
  const app = await buildApp({ services, logger: services.logging.module('svc::api') });
  await app.ready();
  return { app, services, logs: () => logs, async close() { await app.close(); await services.close(); } };
}

describe('sealing format (AES-256-GCM)', () => {
  const sealer = new Sealer(KEY_A);

  test('round trip; versioned format with key id and a random nonce per value', () => {
    const a = sealer.seal('hunter2', 'connections:w:n:secret');
    const b = sealer.seal('hunter2', 'connections:w:n:secret');
    assert.match(a, /^v1\.[0-9a-f]{16}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    assert.notEqual(a, b, 'random nonce');
    assert.equal(a.split('.')[1], sealer.keyId);
    assert.equal(sealer.unseal(a, 'connections:w:n:secret').toString(), 'hunter2');
    assert.ok(!a.includes('hunter2'));
  });

  test('the context binds the row: another context does not open', () => {
    const a = sealer.seal('x', 'connections:w1:n:secret');
    assert.throws(() => sealer.unseal(a, 'connections:w2:n:secret'), (e: unknown) => e instanceof UnsealError && /altered or belongs to another record/.test(e.message));
  });

  test('a changed master key is reported as such, not as garbage', () => {
    const a = sealer.seal('x', 'ctx');
    const other = new Sealer(KEY_B);
    assert.throws(() => other.unseal(a, 'ctx'), (e: unknown) => e instanceof UnsealError && e.status === 503
      && e.message === `cannot unseal stored secret: it was sealed with master key ${sealer.keyId}, the configured key is ${other.keyId}`);
    assert.throws(() => new Sealer('').unseal(a, 'ctx'), /secrets\.master_key is not set/);
  });

  test('a tampered value fails authentication', () => {
    const a = sealer.seal('secret-value', 'ctx');
    const parts = a.split('.');
    const body = Buffer.from(parts[3], 'base64url');
    body[0] ^= 1;
    assert.throws(() => sealer.unseal([...parts.slice(0, 3), body.toString('base64url')].join('.'), 'ctx'), /authentication failed/);
    assert.throws(() => sealer.unseal('garbage', 'ctx'), /unknown format/);
  });

  test('no master key: sealing is disabled', () => {
    const none = new Sealer('');
    assert.equal(none.enabled, false);
    assert.throws(() => none.seal('x', 'ctx'), /secrets\.master_key is not set/);
  });
});

describe('connections with a master key', () => {
  let t: TestApp;
  let admin: Browser;
  let viewer: Browser;
  const DB_PASSWORD = `db-pw-${randomBytes(8).toString('hex')}`;
  const S3_SECRET = `s3-secret-${randomBytes(8).toString('hex')}`;
  let clientSecret = '';

  before(async () => {
    t = await startTestApp({ SVC_SECRETS__MASTER_KEY: KEY_A });
    await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
    admin = new Browser(t, '198.51.100.1');
    assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    assert.equal((await admin.post('/api/users', { email: 'viewer@example.test', password: 'viewer-password-1' })).statusCode, 201);
    assert.equal((await admin.post('/api/groups', { name: 'viewers' })).statusCode, 201);
    assert.equal((await admin.put('/api/groups/viewers/members/viewer@example.test')).statusCode, 200);
    assert.equal((await admin.put('/api/workspaces/default/members/groups/viewers', { role: 'ws_viewer' })).statusCode, 200);
    viewer = new Browser(t, '198.51.100.2');
    assert.equal((await viewer.login('viewer@example.test', 'viewer-password-1')).statusCode, 200);
  });
  after(async () => { await t.close(); });

  test('register with a secret: sealed, never returned (has_secret), read back internally', async () => {
    const res = await admin.post('/api/workspaces/default/connections', { name: 'warehouse-db', kind: 'database', config: { host: 'db.internal', port: 5432, user: 'etl' }, secret: DB_PASSWORD });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().config, { host: 'db.internal', port: 5432, user: 'etl' });
    assert.equal(res.json().has_secret, true);
    assert.equal(res.json().secret, undefined);
    assert.ok(!res.body.includes(DB_PASSWORD));
    const s3 = await admin.post('/api/workspaces/default/connections', { name: 'lake', kind: 'storage', config: { bucket: 'b', access_key: 'AKIA1' }, secret: { secret_key: S3_SECRET } });
    assert.equal(s3.statusCode, 201, s3.body);
    for (const url of ['/api/workspaces/default/connections', '/api/workspaces/default/connections/warehouse-db', '/api/workspaces/default/connections/lake']) {
      const r = await viewer.get(url);
      assert.equal(r.statusCode, 200);
      assert.ok(!r.body.includes(DB_PASSWORD) && !r.body.includes(S3_SECRET), url);
    }
    const sealer = new Sealer(KEY_A);
    assert.equal(await readConnectionSecret(t.services.db, sealer, 'default', 'warehouse-db'), DB_PASSWORD);
    assert.deepEqual(await readConnectionSecret(t.services.db, sealer, 'default', 'lake'), { secret_key: S3_SECRET });
    const [row] = await query<{ secret_sealed: string }>(t.db.url, "SELECT secret_sealed FROM connections WHERE name = 'warehouse-db'");
    assert.match(row.secret_sealed, new RegExp(`^v1\\.${sealer.keyId}\\.`));
  });

  test('a connection without a secret; rules: credentials in config refused, duplicate 409, viewer may not change', async () => {
    const plain = await admin.post('/api/workspaces/default/connections', { name: 'public-files', kind: 'storage', config: { bucket: 'open-data' } });
    assert.equal(plain.statusCode, 201);
    assert.equal(plain.json().has_secret, false);
    const leak = await admin.post('/api/workspaces/default/connections', { name: 'leaky', kind: 'database', config: { host: 'h', password: 'oops' } });
    assert.equal(leak.statusCode, 400);
    assert.match(leak.json().message, /config key password looks like a credential/);
    assert.equal((await admin.post('/api/workspaces/default/connections', { name: 'public-files', kind: 'storage' })).statusCode, 409);
    assert.equal((await admin.post('/api/workspaces/default/connections', { name: 'Bad Name', kind: 'storage' })).statusCode, 400);
    assert.equal((await admin.post('/api/workspaces/default/connections', { name: 'x', kind: 'ftp' })).statusCode, 400);
    assert.equal((await viewer.post('/api/workspaces/default/connections', { name: 'mine', kind: 'storage' })).statusCode, 403);
    assert.equal((await viewer.delete('/api/workspaces/default/connections/public-files')).statusCode, 403);
    assert.equal((await admin.delete('/api/workspaces/default/connections/public-files')).statusCode, 204);
    assert.equal((await admin.get('/api/workspaces/default/connections/public-files')).statusCode, 404);
    assert.equal((await admin.get('/api/workspaces/nope/connections')).statusCode, 404);
  });

  test('a changed master key: "cannot unseal" naming both key ids, for connections and for the signing key', async () => {
    const c = await createClient(t.services.db, CLI_ACTOR, { name: 'engine', audiences: ['svc-catalog'] });
    clientSecret = c.client_secret;
    const replica = await replicaOn(t.db.url, { SVC_SECRETS__MASTER_KEY: KEY_B });
    try {
      const other = new Sealer(KEY_B);
      await assert.rejects(readConnectionSecret(replica.services.db, other, 'default', 'warehouse-db'), (e: unknown) =>
        e instanceof UnsealError && e.status === 503 && e.message === `cannot unseal stored secret: it was sealed with master key ${new Sealer(KEY_A).keyId}, the configured key is ${other.keyId}`);
      const res = await replica.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }).toString(),
      });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().error, 'temporarily_unavailable');
      assert.match(res.json().error_description, /^cannot unseal stored secret: it was sealed with master key [0-9a-f]{16}, the configured key is [0-9a-f]{16}; run `svc idp rotate-key`/);
    } finally {
      await replica.close();
    }
  });

  test('no plaintext secret anywhere in the database (every table dumped as text)', async () => {
    const sealer = new Sealer(KEY_A);
    assert.ok(clientSecret);
    const tables = await query<{ table_name: string }>(t.db.url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
    assert.ok(tables.some((x) => x.table_name === 'connections') && tables.some((x) => x.table_name === 'idp_signing_keys'));
    let dump = '';
    for (const { table_name } of tables) {
      const rows = await query<{ row: string }>(t.db.url, `SELECT t::text AS row FROM "${table_name}" t`);
      dump += rows.map((r) => r.row).join('\n');
    }
    // The signing key's private part, unsealed for the check.
    const [key] = await query<{ kid: string; private_key: string; sealed: boolean }>(t.db.url, 'SELECT kid, private_key, sealed FROM idp_signing_keys');
    assert.equal(key.sealed, true);
    const d = JSON.parse(sealer.unseal(key.private_key, `idp_signing_keys:${key.kid}:private_key`).toString()).d as string;
    for (const [what, secret] of [['database password', DB_PASSWORD], ['storage secret', S3_SECRET], ['client secret', clientSecret], ['private key', d], ['master key', KEY_A]] as const) {
      assert.ok(!dump.includes(secret), `${what} appears in the database`);
    }
    assert.ok(dump.includes('warehouse-db') && dump.includes('v1.'), 'the dump covers the sealed rows');
  });
});

describe('logs', () => {
  test('secrets never reach the log, even at trace level (token requests, connection secrets)', async () => {
    const t = await startTestApp({ SVC_SECRETS__MASTER_KEY: KEY_A });
    try {
      await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
      const replica = await replicaOn(t.db.url, { SVC_SECRETS__MASTER_KEY: KEY_A, SVC_LOG__FILTER: 'trace' });
      try {
        const c = await createClient(t.services.db, CLI_ACTOR, { name: 'x', audiences: ['a'] });
        const inject = (payload: string, headers: Record<string, string> = {}) => replica.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload });
        assert.equal((await inject(new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }).toString())).statusCode, 200);
        assert.equal((await inject('grant_type=client_credentials', { authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` })).statusCode, 200);
        assert.equal((await inject(new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: `${c.client_secret}x` }).toString())).statusCode, 401);
        const login = await replica.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: ADMIN.email, password: ADMIN.password } });
        const cookies = Object.fromEntries((login.cookies as Array<{ name: string; value: string }>).map((k) => [k.name, k.value]));
        const created = await replica.app.inject({
          method: 'POST', url: '/api/workspaces/default/connections',
          headers: { cookie: `svc_session=${cookies.svc_session}; svc_csrf=${cookies.svc_csrf}`, 'x-svc-csrf': cookies.svc_csrf },
          payload: { name: 'db', kind: 'database', secret: 'connection-password-xyz' },
        });
        assert.equal(created.statusCode, 201, created.body);
        const logs = replica.logs();
        assert.ok(logs.includes('/oauth/token'), 'requests were logged');
        for (const secret of [c.client_secret, 'connection-password-xyz', KEY_A]) assert.ok(!logs.includes(secret), 'a secret reached the log');
      } finally {
        await replica.close();
      }
    } finally {
      await t.close();
    }
  });
});

describe('without a master key', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
    await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  });
  after(async () => { await t.close(); });

  test('registering a connection with a secret fails with a clear 400; without a secret it works', async () => {
    const b = new Browser(t, '198.51.100.3');
    assert.equal((await b.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    const res = await b.post('/api/workspaces/default/connections', { name: 'db', kind: 'database', config: { host: 'h' }, secret: 'pw' });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { error: 'bad_request', message: 'secrets.master_key is not set: cannot store a connection secret' });
    assert.equal((await query(t.db.url, 'SELECT 1 FROM connections')).length, 0);
    assert.equal((await b.post('/api/workspaces/default/connections', { name: 'db', kind: 'database', config: { host: 'h' } })).statusCode, 201);
  });

  test('the signing key is stored unsealed, and sealed at the next start with a master key', async () => {
    const [before] = await query<{ sealed: boolean; private_key: string }>(t.db.url, 'SELECT sealed, private_key FROM idp_signing_keys');
    assert.equal(before.sealed, false);
    assert.ok(JSON.parse(before.private_key).d);
    const replica = await replicaOn(t.db.url, { SVC_SECRETS__MASTER_KEY: KEY_A });
    try {
      const [after] = await query<{ sealed: boolean; private_key: string }>(t.db.url, 'SELECT sealed, private_key FROM idp_signing_keys');
      assert.equal(after.sealed, true);
      assert.match(after.private_key, /^v1\./);
      const c = await createClient(replica.services.db, CLI_ACTOR, { name: 'x', audiences: ['a'] });
      const res = await replica.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }).toString(),
      });
      assert.equal(res.statusCode, 200, res.body);
    } finally {
      await replica.close();
    }
  });
});
