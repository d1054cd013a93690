// The malformed-input sweep (issue 10): every operation of `svc openapi`, with wrong types, NUL
// bytes, lone surrogates, deep nesting, numbers past 64 bits, long and odd path parameters and
// wrong content types, sent by an anonymous caller, a signed-in administrator (session cookie
// and CSRF header) and a machine (bearer JWT of this service). No answer may be a 5xx, and no
// body may carry internal text (stack frames, framework codes, PostgreSQL messages). Error
// answers keep their documented shape.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { buildOpenApiDocument } from '../src/api/openapi.js';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { startS3, storageEnv, type TestS3 } from './helpers/s3.js';
import { signInAdmin, ADMIN, type Admin } from './helpers/workflow.js';
import { clientToken } from './helpers/catalog.js';
import { variantsOf, INTERNAL_TEXT, type Variant } from './helpers/malformed.js';

let t: TestApp;
let s3: TestS3;
let admin: Admin;
let machineToken: string;
let paths: Record<string, Record<string, Record<string, unknown>>>;

before(async () => {
  s3 = await startS3('sweep');
  t = await startTestApp({
    SVC_WORKFLOW__WEBHOOKS_ENABLED: 'true', SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: 'catalog-admin-token-0123456789',
    SVC_CATALOG__WAREHOUSE: 's3://sweep/lake', SVC_IDP__ISSUER: 'https://svc.example.test', SVC_POLICY_SERVICE__ENABLED: 'true',
    ...storageEnv(s3),
  });
  admin = await signInAdmin(t);
  machineToken = await clientToken(t, 'default');
  paths = (await buildOpenApiDocument()).paths as typeof paths;
});
after(async () => { await t.close(); await s3.stop(); });

/** Routes that answer in another protocol's error shape (OAuth, Iceberg REST, Ranger) or HTML. */
const OWN_SHAPE = /^\/(oauth\/|catalog\/|service\/|\.well-known\/|ui\/|$)/;

function problemsOf(v: Variant, status: number, body: string, contentType: string): string[] {
  const out: string[] = [];
  if (status >= 500) out.push(`${status}`);
  const m = INTERNAL_TEXT.exec(body);
  if (m) out.push(`internal text "${m[0]}"`);
  const path = v.url.split('?')[0];
  if (status >= 400 && !OWN_SHAPE.test(path) && contentType.startsWith('application/json')) {
    let parsed: unknown;
    try { parsed = JSON.parse(body); } catch { out.push('a JSON error body that does not parse'); }
    const p = parsed as { error?: unknown; message?: unknown } | undefined;
    if (parsed !== undefined && (typeof p?.error !== 'string' || typeof p?.message !== 'string')) out.push('an error body without {"error","message"}');
  }
  return out;
}

async function sweep(caller: 'anonymous' | 'session' | 'machine'): Promise<string[]> {
  const failures: string[] = [];
  let sent = 0;
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      // Signing out would end the sweep's own session; the route is swept anonymously.
      if (caller === 'session' && path === '/api/auth/logout') continue;
      for (const v of variantsOf(path, method, op, caller === 'session')) {
        const headers = { 'x-forwarded-for': '192.0.2.10', ...v.headers, ...(caller === 'machine' ? { authorization: `Bearer ${machineToken}` } : {}) };
        const res = caller === 'session'
          ? await admin.browser.request(v.method, v.url, v.payload, { headers })
          : await t.app.inject({ method: v.method as never, url: v.url, headers, payload: v.payload });
        sent++;
        const problems = problemsOf(v, res.statusCode, res.body, String(res.headers['content-type'] ?? ''));
        if (problems.length) failures.push(`${caller} ${v.what} → ${res.statusCode} ${problems.join(', ')}: ${res.body.slice(0, 200)}`);
      }
      if (caller === 'session' && (await admin.browser.get('/api/me')).statusCode === 401) {
        await admin.browser.login(ADMIN.email, ADMIN.password);
      }
    }
  }
  assert.ok(sent > 1000, `the sweep sent only ${sent} requests`);
  return failures;
}

// The three callers run side by side: the sweep waits on the database more than on the CPU.
describe('every operation of svc openapi', { concurrency: 3 }, () => {
  for (const caller of ['anonymous', 'session', 'machine'] as const) {
    test(`no 5xx and no internal text for ${caller} callers`, async () => {
      const failures = await sweep(caller);
      assert.deepEqual(failures.slice(0, 40), [], `${failures.length} bad answers`);
    });
  }
});

test('the sweep itself can fail: a route that answers 500 is reported', () => {
  const v: Variant = { what: 'GET /x', method: 'GET', url: '/api/x', headers: {} };
  assert.deepEqual(problemsOf(v, 500, '{"error":"internal","message":"internal error"}', 'application/json'), ['500']);
  assert.match(problemsOf(v, 400, '{"error":"bad_request","message":"RangeError: Maximum call stack size exceeded"}', 'application/json').join(), /internal text/);
  assert.match(problemsOf(v, 414, '{"code":"FST_ERR_MAX_PARAM_LENGTH"}', 'application/json').join(), /error","message/);
});
