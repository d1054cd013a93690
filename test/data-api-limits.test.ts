// Rate limits and the response cache of the Data API across two app instances sharing one Redis
// (data_api.replicas 2, shared_store_url): one bucket per client and endpoint for both, 429 with
// Retry-After and RateLimit headers, refill on a moved clock; a cache hit on the other instance,
// a miss after a new version and for another grant. With the shared store down, calls still
// answer and the limit holds per instance.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startReplica, startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { createClient, CLI_ACTOR } from '../src/idp/clients.js';
import { freePort } from './helpers/net.js';

const M = '/api/workspaces/default/data-api';
// No table: each replica's embedded engine has its own in-memory databases.
const KV = "SELECT k, v AS v FROM (VALUES ('a', 1), ('b', 2)) t(k, v) WHERE v >= $min ORDER BY k";
const LIMITS = { SVC_ENGINES__PROVISIONER: 'none', SVC_DATA_API__RATE_LIMIT_PER_MINUTE: '60', SVC_DATA_API__RATE_LIMIT_BURST: '3', SVC_DATA_API__CACHE_TTL_SECS: '30' };

async function tokenOf(t: TestApp, scopes: string[]): Promise<string> {
  const c = await createClient(t.services.db, CLI_ACTOR, { name: 'consumer', audiences: ['svc-data-api'], scopes, workspace: 'default' });
  const res = await t.app.inject({
    method: 'POST', url: '/oauth/token', payload: 'grant_type=client_credentials',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.44', authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` },
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().access_token;
}

async function setUp(t: TestApp): Promise<Admin> {
  t.clock.set(new Date());
  const admin = await signInAdmin(t);
  for (const name of ['one', 'two']) {
    const r = await admin.browser.put(`${M}/endpoints/${name}`, { sql: KV.replace('v AS v', 'v'), params: [{ name: 'min', type: 'integer', default: 0 }] });
    assert.equal(r.statusCode, 201, r.body);
  }
  return admin;
}

const get = (t: TestApp, url: string, token: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

describe('Data API limits across two replicas sharing Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let admin: Admin;
  before(async () => {
    a = await startTestApp({ ...LIMITS, SVC_DATA_API__REPLICAS: '2', SVC_DATA_API__SHARED_STORE_URL: 'redis://127.0.0.1:6379' });
    b = await startReplica(a);
    admin = await setUp(a);
  });
  after(async () => { await b.close(); await a.close(); });

  test('one bucket per client and endpoint for both replicas: the fourth call is a 429 with Retry-After and RateLimit headers; the clock refills it', async () => {
    const token = await tokenOf(a, ['data-api:*']);
    const seen = [];
    for (const app of [a, b, a, b]) seen.push(await get(app, '/data-api/default/one?min=1', token));
    assert.deepEqual(seen.map((r) => r.statusCode), [200, 200, 200, 429]);
    assert.equal(seen[0].headers['ratelimit-policy'], '"endpoint";q=3;w=3');
    assert.equal(seen[2].headers.ratelimit, '"endpoint";r=0;t=3');
    const refused = seen[3];
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(refused.headers.ratelimit, '"endpoint";r=0;t=1');
    assert.deepEqual(refused.json(), { error: 'too_many_requests', message: 'rate limit of endpoint one reached for this client (60 calls a minute, 3 at once): retry in 1 s' });
    // Another endpoint has its own bucket; another client too.
    assert.equal((await get(b, '/data-api/default/two', token)).statusCode, 200);
    assert.equal((await get(b, '/data-api/default/one', await tokenOf(a, ['data-api:*']))).statusCode, 200);
    a.clock.advance(1_000);
    assert.equal((await get(b, '/data-api/default/one?min=1', token)).statusCode, 200);
    assert.equal((await get(a, '/data-api/default/one?min=1', token)).statusCode, 429);
  });

  test('the response cache: a hit on the other replica; a new version and another grant miss', async () => {
    const token = await tokenOf(a, ['data-api:*']);
    const first = await get(a, '/data-api/default/two?min=2', token);
    assert.equal(first.headers['x-data-api-cache'], 'miss');
    assert.match(String(first.headers['cache-control']), /^private, max-age=30$/);
    const second = await get(b, '/data-api/default/two?min=2', token);
    assert.equal(second.headers['x-data-api-cache'], 'hit');
    assert.equal(second.body, first.body);
    assert.equal(second.headers.etag, first.headers.etag);
    // The same call with another grant (only this endpoint) is not served the other grant's answer.
    const narrow = await get(b, '/data-api/default/two?min=2', await tokenOf(a, ['data-api:two']));
    assert.equal(narrow.headers['x-data-api-cache'], 'miss');
    const v2 = await admin.browser.put(`${M}/endpoints/two`, { sql: KV.replace('v AS v', 'v * 10 AS v'), params: [{ name: 'min', type: 'integer', default: 0 }] });
    assert.equal(v2.json().version, 2);
    const after = await get(b, '/data-api/default/two?min=2', token);
    assert.equal(after.statusCode, 200, after.body);
    assert.equal(after.headers['x-data-api-cache'], 'miss');
    assert.deepEqual(after.json().data, [{ k: 'b', v: 20 }]);
  });
});

describe('Data API with its shared store down', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ ...LIMITS, SVC_DATA_API__REPLICAS: '2', SVC_DATA_API__SHARED_STORE_URL: `redis://127.0.0.1:${await freePort()}` });
    await setUp(t);
  });
  after(async () => { await t.close(); });

  test('calls still answer, limited per replica', async () => {
    const token = await tokenOf(t, ['data-api:one']);
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await get(t, '/data-api/default/one', token)).statusCode);
    assert.deepEqual(codes, [200, 200, 200, 429]);
  });
});
