// The Data API on the real embedded engine (DuckDB), PostgreSQL and Redis: publishing and
// versions, a client made for the workspace getting a token from /oauth/token and calling an
// endpoint, parameter validation naming the parameter, injection attempts (values are bound,
// never written into the SQL), formats, pagination and ETags, and the access checks.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { createClient, CLI_ACTOR } from '../src/idp/clients.js';

const M = '/api/workspaces/default/data-api';
const SALES = {
  sql: 'SELECT region, amount FROM sales WHERE amount >= $min_amount AND (region = $region OR $region = \'all\') ORDER BY amount',
  params: [
    { name: 'region', type: 'string', default: 'all', max_length: 40, description: 'a region, or all' },
    { name: 'min_amount', type: 'integer', default: 0, minimum: 0, maximum: 1_000_000 },
  ],
};

async function token(t: TestApp, clientId: string, secret: string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST', url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.9', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    payload: 'grant_type=client_credentials',
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().access_token as string;
}

describe('Data API endpoints', () => {
  let t: TestApp;
  let admin: Admin;
  let bearer: string;
  const call = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${bearer}`, ...headers } });

  before(async () => {
    t = await startTestApp({ SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINE__MAX_ROWS: '50', SVC_ENGINE__PREVIEW_ROWS: '10', SVC_DATA_API__PUBLIC_URL: 'https://data.example.test/' });
    t.clock.set(new Date());
    admin = await signInAdmin(t);
    const made = await admin.browser.post('/api/workspaces/default/queries', {
      sql: "CREATE TABLE sales AS SELECT * FROM (VALUES ('north', 10), ('south', 20), ('north', 30), ('east', 40), ('west', 50)) v(region, amount)",
      wait_ms: 60_000,
    });
    assert.equal(made.json().state, 'SUCCEEDED', made.body);
  });
  after(async () => { await t.close(); });

  test('publishing makes version 1; the same definition again changes nothing; a change makes version 2', async () => {
    const first = await admin.browser.put(`${M}/endpoints/sales`, SALES);
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(first.json().version, 1);
    assert.equal(first.json().url, 'https://data.example.test/data-api/default/sales');
    const again = await admin.browser.put(`${M}/endpoints/sales`, SALES);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().version, 1);
    const list = (await admin.browser.get(`${M}/endpoints`)).json();
    assert.deepEqual(list.endpoints.map((e: { name: string; version: number }) => [e.name, e.version]), [['sales', 1]]);
  });

  test('a client made for the workspace gets a token at the handed token endpoint and calls the endpoint', async () => {
    const res = await admin.browser.post(`${M}/clients`, { name: 'dashboard', endpoints: ['sales'] });
    assert.equal(res.statusCode, 201, res.body);
    const c = res.json();
    assert.equal(c.token_endpoint, 'https://data.example.test/oauth/token');
    assert.equal(c.audience, 'svc-data-api');
    assert.deepEqual(c.scopes, ['data-api:sales']);
    bearer = await token(t, c.client_id, c.client_secret);
    const r = await call('/data-api/default/sales?min_amount=25');
    assert.equal(r.statusCode, 200, r.body);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    const body = r.json();
    assert.deepEqual(body.data, [{ region: 'north', amount: 30 }, { region: 'east', amount: 40 }, { region: 'west', amount: 50 }]);
    assert.deepEqual(body.meta.map((m: { name: string }) => m.name), ['region', 'amount']);
    assert.equal(body.version, 1);
    assert.equal(body.next_offset, null);
    const post = await t.app.inject({ method: 'POST', url: '/data-api/default/sales', headers: { authorization: `Bearer ${bearer}` }, payload: { region: 'north', min_amount: 0 } });
    assert.equal(post.statusCode, 200, post.body);
    assert.deepEqual(post.json().data, [{ region: 'north', amount: 10 }, { region: 'north', amount: 30 }]);
  });

  test('CSV and NDJSON on request; ETag answers 304 to a current copy; Cache-Control is private', async () => {
    const csv = await call('/data-api/default/sales?region=north&format=csv');
    assert.equal(csv.statusCode, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    assert.equal(csv.body, 'region,amount\r\nnorth,10\r\nnorth,30\r\n');
    const nd = await call('/data-api/default/sales?region=north', { accept: 'application/x-ndjson' });
    assert.equal(nd.body, '{"region":"north","amount":10}\n{"region":"north","amount":30}\n');
    const etag = String(csv.headers.etag);
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
    assert.match(String(csv.headers['cache-control']), /private/);
    const again = await call('/data-api/default/sales?region=north&format=csv', { 'if-none-match': etag });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
  });

  test('pages: limit and offset, next_offset and a Link to the next page', async () => {
    const p1 = await call('/data-api/default/sales?limit=2');
    assert.deepEqual(p1.json().data.map((r: { amount: number }) => r.amount), [10, 20]);
    assert.equal(p1.json().next_offset, 2);
    assert.match(String(p1.headers.link), /<\/data-api\/default\/sales\?.*offset=2.*>; rel="next"/);
    const p3 = await call('/data-api/default/sales?limit=2&offset=4');
    assert.deepEqual(p3.json().data.map((r: { amount: number }) => r.amount), [50]);
    assert.equal(p3.json().next_offset, null);
    const tooBig = await call('/data-api/default/sales?limit=51');
    assert.equal(tooBig.statusCode, 400);
    assert.equal(tooBig.json().message, 'invalid parameter limit: must be an integer from 1 to 50');
  });

  test('bad values are 400s naming the parameter', async () => {
    const cases: Array<[string, string]> = [
      ['min_amount=ten', 'invalid parameter min_amount: must be an integer'],
      ['min_amount=-1', 'invalid parameter min_amount: must be at least 0'],
      ['min_amount=1000001', 'invalid parameter min_amount: must be at most 1000000'],
      ['min_amount=1&min_amount=2', 'invalid parameter min_amount: given more than once'],
      [`region=${'x'.repeat(41)}`, 'invalid parameter region: must be at most 40 characters'],
      ['country=fr', 'unknown parameter country: this endpoint takes region, min_amount'],
      ['format=xml', 'invalid parameter format: must be json, csv or ndjson'],
      ['version=0', 'invalid parameter version: must be an integer from 1 to 2147483647'],
    ];
    for (const [qs, message] of cases) {
      const r = await call(`/data-api/default/sales?${qs}`);
      assert.equal(r.statusCode, 400, qs);
      assert.deepEqual(r.json(), { error: 'bad_request', message }, qs);
    }
    const post = await t.app.inject({ method: 'POST', url: '/data-api/default/sales', headers: { authorization: `Bearer ${bearer}` }, payload: { min_amount: '5.5' } });
    assert.equal(post.json().message, 'invalid parameter min_amount: must be an integer');
  });

  test('injection attempts are values, not SQL: they match nothing and the table survives', async () => {
    for (const region of ["north' OR '1'='1", "'; DROP TABLE sales; --", 'north\' UNION SELECT \'x\', 1 --', '$min_amount']) {
      const r = await call(`/data-api/default/sales?region=${encodeURIComponent(region)}`);
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(r.json().data, [], region);
    }
    assert.equal((await call('/data-api/default/sales')).json().rows, 5);
    // A statement that writes is refused at publication: endpoints run with read-only rights.
    const w = await admin.browser.put(`${M}/endpoints/wipe`, { sql: 'DELETE FROM sales WHERE amount > $n', params: [{ name: 'n', type: 'integer' }] });
    assert.equal(w.statusCode, 400, w.body);
    assert.match(w.json().message, /^the query does not run as a read-only SELECT/);
    const w2 = await admin.browser.put(`${M}/endpoints/wipe`, { sql: 'SELECT $n AS n', params: [{ name: 'n', type: 'integer' }] });
    assert.equal(w2.statusCode, 201, w2.body);
    assert.equal((await call('/data-api/default/sales')).json().rows, 5);
  });

  test('what is published is one query as its engine parses it: text that would close a wrapper around it is refused', async () => {
    const r = await admin.browser.put(`${M}/endpoints/wrapped`, { sql: 'select 1 as x) as endpoint_probe, (select 2' });
    assert.equal(r.statusCode, 400, r.body);
    assert.match(r.json().message, /^the query does not run as a read-only SELECT: /);
    assert.equal((await admin.browser.get(`${M}/endpoints/wrapped`)).statusCode, 404);
  });

  test('an endpoint that fails on its engine answers its consumer 502, naming neither its SQL nor the engine\'s internals', async () => {
    const made = await admin.browser.post('/api/workspaces/default/queries', { sql: 'CREATE TABLE doomed AS SELECT 42 AS secret_column', wait_ms: 60_000 });
    assert.equal(made.json().state, 'SUCCEEDED', made.body);
    assert.equal((await admin.browser.put(`${M}/endpoints/doomed`, { sql: 'SELECT secret_column FROM doomed' })).statusCode, 201);
    const c = (await admin.browser.post(`${M}/clients`, { name: 'doomed-reader', endpoints: ['doomed'] })).json();
    const own = await token(t, c.client_id, c.client_secret);
    const call = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${own}` } });
    assert.deepEqual((await call('/data-api/default/doomed')).json().data, [{ secret_column: 42 }]);
    const dropped = await admin.browser.post('/api/workspaces/default/queries', { sql: 'DROP TABLE doomed', wait_ms: 60_000 });
    assert.equal(dropped.json().state, 'SUCCEEDED', dropped.body);
    const r = await call('/data-api/default/doomed?limit=1'); // (another page than the cached answer)
    assert.equal(r.statusCode, 502, r.body);
    assert.deepEqual(r.json(), { error: 'bad_gateway', message: 'endpoint doomed failed on its engine; its publishers can see why in the server log and test it in the console' });
  });

  test('publishing checks the declarations: undeclared $names, unused or reserved parameters, bad defaults, unknown engines', async () => {
    const cases: Array<[object, number, RegExp]> = [
      [{ sql: 'SELECT $x' }, 400, /the SQL refers to \$x, which is not a declared parameter/],
      [{ sql: 'SELECT 1', params: [{ name: 'x', type: 'integer' }] }, 400, /parameter x is not used in the SQL/],
      [{ sql: 'SELECT $limit', params: [{ name: 'limit', type: 'integer' }] }, 400, /parameter name limit is reserved/],
      [{ sql: 'SELECT $x', params: [{ name: 'x', type: 'integer', default: 5, maximum: 3 }] }, 400, /parameter x: the default must be at most 3/],
      [{ sql: 'SELECT $x', params: [{ name: 'x', type: 'date', default: '2026-02-30' }] }, 400, /parameter x: the default must be a date/],
      [{ sql: 'SELECT 1', engine: 'nope' }, 400, /engine does not exist: nope/],
    ];
    for (const [body, status, message] of cases) {
      const r = await admin.browser.put(`${M}/endpoints/bad`, body);
      assert.equal(r.statusCode, status, r.body);
      assert.match(r.json().message, message);
    }
  });

  test('versions: consumers get the latest unless they pin one', async () => {
    const v2 = await admin.browser.put(`${M}/endpoints/sales`, { ...SALES, sql: SALES.sql.replace('ORDER BY amount', 'ORDER BY amount DESC') });
    assert.equal(v2.statusCode, 201);
    assert.equal(v2.json().version, 2);
    const latest = await call('/data-api/default/sales?region=north');
    assert.deepEqual(latest.json().data.map((r: { amount: number }) => r.amount), [30, 10]);
    assert.equal(latest.headers['x-data-api-version'], '2');
    const pinned = await call('/data-api/default/sales?region=north&version=1');
    assert.deepEqual(pinned.json().data.map((r: { amount: number }) => r.amount), [10, 30]);
    const missing = await call('/data-api/default/sales?version=9');
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().message, 'endpoint sales has no version 9');
    const detail = (await admin.browser.get(`${M}/endpoints/sales`)).json();
    assert.deepEqual(detail.versions.map((v: { version: number }) => v.version), [2, 1]);
  });

  test('access: no token, a token of another audience, an endpoint outside the token, another workspace, a viewer publishing', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/data-api/default/sales' });
    assert.equal(none.statusCode, 401);
    assert.match(String(none.headers['www-authenticate']), /^Bearer/);
    assert.match(none.json().message, /https:\/\/data\.example\.test\/oauth\/token/);
    const cat = await createClient(t.services.db, CLI_ACTOR, { name: 'engine', audiences: ['svc-catalog'], workspace: 'default' });
    const wrongAud = await t.app.inject({ method: 'GET', url: '/data-api/default/sales', headers: { authorization: `Bearer ${await token(t, cat.client_id, cat.client_secret)}` } });
    assert.equal(wrongAud.statusCode, 401);
    assert.equal(wrongAud.json().message, "invalid token: the token's aud does not include svc-data-api");
    const notGranted = await call('/data-api/default/wipe?n=1');
    assert.equal(notGranted.statusCode, 403);
    assert.equal(notGranted.json().message, 'this token may not call endpoint wipe');
    const other = await call('/data-api/elsewhere/sales');
    assert.equal(other.statusCode, 403);
    assert.match(other.json().message, /^this token is not for workspace elsewhere/);
    const u = await createLocalUser(t.services.db, { email: 'viewer@example.test', password: 'password-of-viewer' });
    await grantWorkspaceRoleToUser(t.services.db, admin.workspaceId, u.id, 'ws_viewer', null, t.clock.now());
    const viewer = new Browser(t, '198.51.100.31');
    assert.equal((await viewer.login('viewer@example.test', 'password-of-viewer')).statusCode, 200);
    assert.equal((await viewer.get(`${M}/endpoints`)).statusCode, 200);
    const denied = await viewer.put(`${M}/endpoints/sales`, SALES);
    assert.equal(denied.statusCode, 403);
    assert.equal((await viewer.post(`${M}/clients`, { name: 'x', endpoints: ['*'] })).statusCode, 403);
  });
});
