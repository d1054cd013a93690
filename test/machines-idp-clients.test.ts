// The machine identity provider's rate limiter, its client cache across replicas and the clients
// API, through a real listening server (test/helpers/machines-idp.ts).
import { test, beforeEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { startReplica, Browser } from './helpers/app.js';
import { EXCHANGE, ADMIN, t, admin, adminBrowser, discover, form, tokenRequest, newClient, useIdpApp } from './helpers/machines-idp.js';

useIdpApp();

describe('rate limit (rate_limit.token_*: 60 per 60 s, 60 s lockout)', () => {
  test('wrong secrets count: the 61st request in the window gets 429 with Retry-After, for that client from any address', async () => {
    const c = await newClient();
    for (let i = 0; i < 60; i++) {
      const r = await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, `svcs_guess${i}`], ip: `10.1.${i}.1` });
      assert.equal(r.statusCode, 401, `attempt ${i + 1}`);
    }
    const blocked = await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '10.1.200.1' });
    assert.equal(blocked.statusCode, 429);
    assert.equal(blocked.headers['retry-after'], '60');
    assert.equal(blocked.json().error, 'too_many_requests');
    assert.equal(blocked.headers['cache-control'], 'no-store');
    await assert.rejects(client.clientCredentialsGrant(await discover(c.client_id, c.client_secret)),
      (err: unknown) => err instanceof client.ResponseBodyError && err.status === 429 && err.error === 'too_many_requests');
    t.clock.advance(59_000);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '10.1.201.1' })).statusCode, 429, 'still blocked');
    t.clock.advance(2_000);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '10.1.202.1' })).statusCode, 200, 'counting again');
  });

  test('per address: 60 requests of unknown clients from one address, then 429 there only', async () => {
    for (let i = 0; i < 60; i++) assert.equal((await tokenRequest({ grant_type: 'client_credentials', client_id: `svc-x${i}`, client_secret: 'no' }, { ip: '203.0.113.50' })).statusCode, 401);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { ip: '203.0.113.50' })).statusCode, 429);
    const c = await newClient();
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '203.0.113.51' })).statusCode, 200);
  });

  test('a 1 MB client_id is counted under its hash: 300 such requests keep the table small', async () => {
    const limiter = t.services.tokenLimiter;
    const before = limiter.bytes;
    for (let i = 0; i < 300; i++) {
      const r = await tokenRequest({ grant_type: 'client_credentials', client_id: `${i}-${'x'.repeat(1_000_000)}`, client_secret: 'no' }, { ip: `198.18.${i >> 8}.${i & 255}` });
      assert.equal(r.statusCode, 401);
      assert.ok(r.body.length < 1000, 'the answer does not echo the id');
    }
    assert.ok(limiter.bytes - before < 300 * 2 * 500, `300 requests grew the table by ${limiter.bytes - before} bytes`);
  });

  test('malformed requests count for their address too', async () => {
    for (let i = 0; i < 30; i++) assert.equal((await tokenRequest({ scope: 'x' }, { ip: '203.0.113.60' })).statusCode, 400);
    for (let i = 0; i < 30; i++) {
      const r = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.60' }, payload: '{' });
      assert.equal(r.statusCode, 400);
    }
    const r = await tokenRequest({ grant_type: 'client_credentials' }, { ip: '203.0.113.60' });
    assert.equal(r.statusCode, 429);
    assert.equal(r.json().error, 'too_many_requests');
  });

  test('a repeated, already verified secret is not counted: 100 requests all succeed; guesses are still counted', async () => {
    const c = await newClient();
    for (let i = 0; i < 100; i++) {
      const r = await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '198.51.100.20' });
      assert.equal(r.statusCode, 200, `request ${i + 1}`);
    }
    // The first verification counted once; 59 guesses fill the window; the 60th guess is refused.
    for (let i = 0; i < 59; i++) assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, `svcs_g${i}`], ip: '198.51.100.20' })).statusCode, 401, `guess ${i + 1}`);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, 'svcs_g60'], ip: '198.51.100.20' })).statusCode, 429);
    // A blocked key stays blocked, even for the verified secret.
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '198.51.100.21' })).statusCode, 429);
  });

  test('through openid-client: 100 token requests with the same secret all succeed', async () => {
    const c = await newClient();
    const config = await discover(c.client_id, c.client_secret, 'post');
    for (let i = 0; i < 100; i++) await client.clientCredentialsGrant(config);
  });

  test('a rotated secret is no longer "verified": it is refused and counted', async () => {
    const c = await newClient();
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret] })).statusCode, 200);
    const rotated = await (await adminBrowser()).post(`/api/clients/${c.client_id}/rotate`);
    assert.equal(rotated.statusCode, 200);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret] })).statusCode, 401);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, rotated.json().client_secret] })).statusCode, 200);
  });
});

describe('client cache', () => {
  test('a secret rotated or a client deleted through one replica\'s API stops working on another that answered from its cache', async () => {
    const other = await startReplica(t);
    try {
      const c = await newClient();
      const there = (secret: string) => other.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.90' },
        payload: form({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: secret }),
      });
      assert.equal((await there(c.client_secret)).statusCode, 200, 'read and cached there');
      const rotated = await (await adminBrowser()).post(`/api/clients/${c.client_id}/rotate`);
      assert.equal(rotated.statusCode, 200);
      await eventually(async () => (await there(c.client_secret)).statusCode === 401, 'the old secret is refused on the other replica');
      assert.equal((await there(rotated.json().client_secret)).statusCode, 200);
      assert.equal((await (await adminBrowser()).delete(`/api/clients/${c.client_id}`)).statusCode, 204);
      await eventually(async () => (await there(rotated.json().client_secret)).statusCode === 401, 'a deleted client is refused on the other replica');
    } finally {
      await other.close();
    }
  });
});

/** Asks until `ok`: an invalidation travels over Redis, so it lands a moment after the change (the clock is not moved). */
async function eventually(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${what}: not within 5 s of real time (the cached client was not invalidated)`);
}

describe('clients API (platform_admin)', () => {
  beforeEach(async () => { await adminBrowser(); });
  test('create, list, rotate, delete; the secret appears only in create and rotate answers; governance audited', async () => {
    const created = await admin.post('/api/clients', { name: 'engine', audiences: ['svc-catalog', 'engine-a'], grant_types: ['client_credentials', EXCHANGE], workspace: 'default' });
    assert.equal(created.statusCode, 201, created.body);
    const c = created.json();
    assert.match(c.client_id, /^svc-/);
    assert.match(c.client_secret, /^svcs_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(c.audiences, ['svc-catalog', 'engine-a']);
    assert.equal(c.workspace, 'default');
    const list = await admin.get('/api/clients');
    const listed = list.json().clients.find((x: { client_id: string }) => x.client_id === c.client_id);
    assert.ok(listed);
    assert.equal(listed.client_secret, undefined);
    assert.ok(!list.body.includes(c.client_secret));
    const rotated = await admin.post(`/api/clients/${c.client_id}/rotate`);
    assert.notEqual(rotated.json().client_secret, c.client_secret);
    const del = await admin.delete(`/api/clients/${c.client_id}`);
    assert.equal(del.statusCode, 204);
    assert.equal((await admin.delete(`/api/clients/${c.client_id}`)).statusCode, 404);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials', audience: 'svc-catalog' }, { basic: [c.client_id, rotated.json().client_secret] })).statusCode, 401);
    const audit = await admin.get('/api/audit?kind=governance&limit=50');
    const actions = audit.json().events.filter((e: { target: string }) => e.target === `client:${c.client_id}`).map((e: { action: string; actor: string }) => [e.action, e.actor]);
    assert.deepEqual(actions, [['client.delete', ADMIN.email], ['client.rotate', ADMIN.email], ['client.create', ADMIN.email]]);
    assert.ok(!audit.body.includes(c.client_secret));
  });

  test('validation: no audience, unknown workspace, unknown grant type; non-admins are refused', async () => {
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: [] })).statusCode, 400);
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: ['a b'] })).statusCode, 400);
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: ['a'], workspace: 'nope' })).statusCode, 404);
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: ['a'], grant_types: ['password'] })).statusCode, 400);
    assert.equal((await new Browser(t, '198.51.100.99').get('/api/clients')).statusCode, 401);
    await admin.post('/api/users', { email: 'user@example.test', password: 'user-password-1' });
    const user = new Browser(t, '198.51.100.98');
    assert.equal((await user.login('user@example.test', 'user-password-1')).statusCode, 200);
    assert.equal((await user.get('/api/clients')).statusCode, 403);
    assert.equal((await user.post('/api/clients', { name: 'x', audiences: ['a'] })).statusCode, 403);
  });

  test('the token endpoint ignores the session layer: a browser with a session cookie and no CSRF header can still post', async () => {
    const c = await newClient();
    const res = await admin.request('POST', '/oauth/token', form({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }),
      { csrf: false, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(res.statusCode, 200, res.body);
  });
});
