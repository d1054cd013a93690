// The edge rules of issue 10, one test each: NUL bytes and lone surrogates refused at the edge
// (path, query, JSON keys and values) before PostgreSQL sees them, a nesting limit, YAML alias
// and depth limits, 64-bit cursors, concurrent first saves of a flow, framework errors in the
// one error shape without the URL, and the webhook's refused content types.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { sql } from 'kysely';
import { valueProblem, MAX_VALUE_DEPTH } from '../src/util/well-formed.js';
import { buildApp } from '../src/api/app.js';

let t: TestApp;
let admin: Admin;
const json = { 'content-type': 'application/json' };
const yaml = { 'content-type': 'application/x-yaml' };
const KEY = 'k3y-0f-the-webhook-0123456789';
const HOOKED = `id: hooked\nnamespace: company.edge\ntasks:\n  - id: a\n    type: log\n    message: hi\ntriggers:\n  - id: hook\n    type: webhook\n    key: ${KEY}\n`;

before(async () => {
  t = await startTestApp({ SVC_WORKFLOW__WEBHOOKS_ENABLED: 'true' });
  admin = await signInAdmin(t);
  const saved = await admin.browser.request('POST', '/workflows/v1/default/flows', HOOKED, { headers: yaml });
  assert.equal(saved.statusCode, 201, saved.body);
});
after(async () => { await t.close(); });

function assertClientError(res: { statusCode: number; body: string }, status: number, message?: RegExp) {
  assert.equal(res.statusCode, status, res.body);
  const body = JSON.parse(res.body) as { error: unknown; message: unknown };
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
  assert.equal(typeof body.error, 'string');
  if (message) assert.match(String(body.message), message);
  assert.doesNotMatch(res.body, /FST_|Maximum call stack|SQLSTATE|invalid byte sequence|unsupported Unicode|Excessive alias/);
}

describe('NUL bytes and lone surrogates are refused at the edge', () => {
  test('in a path parameter: 400 naming the parameter', async () => {
    assertClientError(await admin.browser.get('/api/workspaces/de%00fault'), 400, /^invalid path parameter ws: contains a NUL character$/);
    assertClientError(await admin.browser.get('/workflows/v1/default/flows/company.edge/hoo%00ked'), 400, /path parameter id/);
  });

  test('in a query string', async () => {
    assertClientError(await admin.browser.get('/workflows/v1/default/flows?namespace=a%00b'), 400, /^invalid query parameter namespace: contains a NUL/);
  });

  test('in JSON values and keys, and lone surrogates, before they reach jsonb', async () => {
    const post = (payload: string) => admin.browser.request('POST', '/api/workspaces/default/connections', payload, { headers: json });
    assertClientError(await post('{"name":"c1","kind":"database","config":{"host":"a\\u0000b"}}'), 400, /^invalid body at config\.host: contains a NUL character$/);
    assertClientError(await post('{"name":"c1","kind":"database","config":{"h\\u0000":"x"}}'), 400, /^invalid body at config: has a key that contains a NUL/);
    assertClientError(await post('{"name":"c1","kind":"database","config":{"host":"\\ud800"}}'), 400, /lone UTF-16 surrogate/);
    assertClientError(await post('{"name":"c1","kind":"database","config":{"\\udfff":1}}'), 400, /key that contains a lone UTF-16 surrogate/);
    // a well-formed pair is fine
    const ok = await post('{"name":"c1","kind":"database","config":{"host":"\\ud83d\\ude00"}}');
    assert.equal(ok.statusCode, 201, ok.body);
  });

  test('in webhook bodies (JSON, text, form)', async () => {
    const hook = '/workflows/v1/default/executions/webhook/company.edge/hooked/' + KEY;
    assertClientError(await t.app.inject({ method: 'POST', url: hook, headers: json, payload: '{"a\\u0000":"\\ud800"}' }), 400);
    assertClientError(await t.app.inject({ method: 'POST', url: hook, headers: { 'content-type': 'text/plain' }, payload: 'a\u0000b' }), 400, /^invalid body: contains a NUL/);
    assertClientError(await t.app.inject({ method: 'POST', url: hook, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=%00' }), 400, /^invalid body at a:/);
  });

  test('in the login email: 400, not a 500 from PostgreSQL', async () => {
    assertClientError(await t.app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: '{"email":"a\\u0000@example.test","password":"x"}' }), 400);
  });

  test('a cookie that is not storable text is ignored, not an error', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/me', headers: { cookie: 'svc_session=a%00b' } });
    assertClientError(res, 401, /sign in required/);
  });
});

describe('limits of size and shape', () => {
  test('bodies nested 5,000 deep: 400 naming the limit, never a stack overflow', async () => {
    const deep = '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000);
    const hook = '/workflows/v1/default/executions/webhook/company.edge/hooked/' + KEY;
    assertClientError(await t.app.inject({ method: 'POST', url: hook, headers: json, payload: deep }), 400, new RegExp(`nests deeper than ${MAX_VALUE_DEPTH} levels`));
    const arrays = '['.repeat(5_000) + ']'.repeat(5_000);
    assertClientError(await admin.browser.request('POST', '/api/workspaces/default/connections', `{"name":"c2","kind":"database","config":{"x":${arrays}}}`, { headers: json }), 400, /nests deeper/);
    // the limit is exact: 64 levels pass the edge
    assert.equal(valueProblem(JSON.parse('['.repeat(MAX_VALUE_DEPTH) + ']'.repeat(MAX_VALUE_DEPTH))), null);
    assert.notEqual(valueProblem(JSON.parse('['.repeat(MAX_VALUE_DEPTH + 1) + ']'.repeat(MAX_VALUE_DEPTH + 1))), null);
  });

  test('YAML with excessive aliases, and deep YAML, are 400 on save and validate', async () => {
    const aliases = `id: laughs\nnamespace: company.edge\nx: &a [1]\ny: [${Array.from({ length: 150 }, () => '*a').join(', ')}]\ntasks:\n  - id: a\n    type: log\n    message: hi\n`;
    const deep = `id: deep\nnamespace: company.edge\nx: ${'['.repeat(3_000)}${']'.repeat(3_000)}\ntasks:\n  - id: a\n    type: log\n    message: hi\n`;
    const save = (src: string) => admin.browser.request('POST', '/workflows/v1/default/flows', src, { headers: yaml });
    assertClientError(await save(aliases), 400, /too many alias references \(at most 100\)/);
    assertClientError(await save(deep), 400, /nests too deeply \(at most 64 levels\)/);
    // validate answers 200 {valid: false, problems} for any invalid flow
    const validate = (src: string) => admin.browser.request('POST', '/workflows/v1/default/flows/validate', src, { headers: yaml });
    assert.deepEqual((await validate(aliases)).json(), { valid: false, problems: [{ path: '', message: 'invalid YAML: too many alias references (at most 100)' }] });
    assert.deepEqual((await validate(deep)).json(), { valid: false, problems: [{ path: '', message: 'invalid YAML: the document nests too deeply (at most 64 levels)' }] });
  });

  test('cursors past 64 bits: ?before= of the audit log and ?after= of execution logs are 400', async () => {
    assertClientError(await admin.browser.get('/api/audit?before=99999999999999999999'), 400, /before/);
    assertClientError(await admin.browser.get('/api/audit?before=9223372036854775808'), 400, /64 bits/);
    assert.equal((await admin.browser.get('/api/audit?before=9223372036854775807')).statusCode, 200);
    const run = await admin.browser.post('/workflows/v1/default/executions/company.edge/hooked', {});
    assert.equal(run.statusCode, 201, run.body);
    assertClientError(await admin.browser.get(`/workflows/v1/default/executions/${run.json().id}/logs?after=18446744073709551616`), 400, /after/);
  });
});

test('eight concurrent first saves of the same flow: no 500; one creates it, the others succeed idempotently', async () => {
  const source = 'id: raced\nnamespace: company.edge\ntasks:\n  - id: a\n    type: log\n    message: hi\n';
  const answers = await Promise.all(Array.from({ length: 8 }, () => admin.browser.request('POST', '/workflows/v1/default/flows', source, { headers: yaml })));
  const codes = answers.map((r) => r.statusCode).sort();
  assert.deepEqual(codes, [200, 200, 200, 200, 200, 200, 200, 201], answers.map((r) => r.body).join('\n'));
  const revisions = await admin.browser.get('/workflows/v1/default/flows/company.edge/raced/revisions');
  assert.equal(revisions.json().revisions.length, 1, revisions.body);
});

test('the error handler maps what reached PostgreSQL anyway: a unique violation is 409, a data exception 400, neither echoes PostgreSQL', async () => {
  // A second app on the same services with probe routes that make PostgreSQL raise each error.
  const app = await buildApp({ services: t.services, logger: t.services.logging.module('svc::api') });
  app.get('/probe/unique', () => t.services.db.transaction().execute(async (tx) => {
    await sql`CREATE TEMP TABLE probe (k text PRIMARY KEY) ON COMMIT DROP`.execute(tx);
    await sql`INSERT INTO probe VALUES ('a'), ('a')`.execute(tx);
  }));
  app.get('/probe/range', async () => { await sql`SELECT ${'99999999999999999999'}::bigint`.execute(t.services.db); });
  await app.ready();
  try {
    assertClientError(await app.inject({ method: 'GET', url: '/probe/unique' }), 409, /already exists/);
    assertClientError(await app.inject({ method: 'GET', url: '/probe/range' }), 400, /out of range or not valid/);
  } finally { await app.close(); }
});

describe('framework-made errors keep the one shape and never echo the URL', () => {
  test('over-long path parameter: 414 without the URL; malformed percent-encoding: 400', async () => {
    const long = 'x'.repeat(300);
    const res = await admin.browser.get(`/api/workspaces/${long}`);
    assertClientError(res, 414, /too long/);
    assert.ok(!res.body.includes(long));
    const bad = await admin.browser.get('/api/workspaces/%E0%A4%A');
    assertClientError(bad, 400);
    assert.ok(!bad.body.includes('%E0'));
  });

  test('over a real socket: 431 for oversized headers and 400 for malformed HTTP, as {"error","message"}', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const raw = (req: string) => new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.end(req));
      let got = '';
      s.on('data', (d) => { got += d.toString(); });
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
    const big = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(big, /^HTTP\/1\.1 431 /);
    assert.deepEqual(JSON.parse(big.slice(big.indexOf('\r\n\r\n') + 4)), { error: 'request_header_fields_too_large', message: 'the request headers are too large' });
    const junk = await raw('NOT HTTP AT ALL\r\n\r\n');
    assert.match(junk, /^HTTP\/1\.1 400 /);
    assert.deepEqual(Object.keys(JSON.parse(junk.slice(junk.indexOf('\r\n\r\n') + 4))).sort(), ['error', 'message']);
  });
});

test('the webhook refuses XML and YAML bodies with 415, as docs/workflows-operations.md says', async () => {
  const hook = '/workflows/v1/default/executions/webhook/company.edge/hooked/' + KEY;
  for (const type of ['application/xml', 'text/xml', 'application/x-yaml']) {
    assertClientError(await t.app.inject({ method: 'POST', url: hook, headers: { 'content-type': type }, payload: '<a/>' }), 415);
  }
});
