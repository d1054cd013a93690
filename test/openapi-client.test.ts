// Interoperability of `svc openapi` with generated clients (issue 10): security schemes and a
// requirement on every operation, unique operationIds, no parameter named `*`, /metrics as
// text/plain. The document is turned into types by openapi-typescript, a typed call is compiled
// by tsc (a wrong parameter must fail), and a few routes are called through openapi-fetch.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, writeFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import openapiTS, { astToString } from 'openapi-typescript';
import createClient from 'openapi-fetch';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { buildOpenApiDocument } from '../src/api/openapi.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ADMIN } from './helpers/workflow.js';
import { initAdministrator } from '../src/bootstrap/init.js';

type Op = { operationId?: string; security?: Array<Record<string, string[]>>; parameters?: Array<{ name: string }>; responses: Record<string, { content?: Record<string, unknown> }> };
let doc: { paths: Record<string, Record<string, Op>>; components: { securitySchemes?: Record<string, unknown> } };
let t: TestApp;
let base: string;

before(async () => {
  doc = await buildOpenApiDocument() as typeof doc;
  t = await startTestApp();
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
after(async () => { await t.close(); });

const operations = () => Object.entries(doc.paths).flatMap(([p, ops]) => Object.entries(ops).map(([m, op]) => ({ key: `${m.toUpperCase()} ${p}`, op })));

test('every operation has a unique operationId and a security requirement naming declared schemes', () => {
  const schemes = doc.components.securitySchemes ?? {};
  assert.deepEqual(Object.keys(schemes).sort(), ['bearerJwt', 'catalogToken', 'clientSecretBasic', 'csrf', 'dataApiToken', 'policyToken', 'session']);
  const ids = new Map<string, string>();
  for (const { key, op } of operations()) {
    assert.match(op.operationId ?? '', /^[a-z]+[A-Za-z0-9]+$/, `${key} has no operationId`);
    assert.ok(!ids.has(op.operationId!), `${key} repeats the operationId of ${ids.get(op.operationId!)}`);
    ids.set(op.operationId!, key);
    assert.ok(Array.isArray(op.security), `${key} has no security requirement`);
    for (const req of op.security!) for (const name of Object.keys(req)) assert.ok(name in schemes, `${key} names an undeclared scheme ${name}`);
  }
  assert.ok(ids.size > 70, `${ids.size} operations`);
  const sec = (k: string) => operations().find((o) => o.key === k)!.op.security;
  assert.deepEqual(sec('GET /api/me'), [{ session: [] }]);
  assert.deepEqual(sec('POST /api/groups'), [{ session: [], csrf: [] }]);
  assert.deepEqual(sec('GET /healthz'), []);
  assert.deepEqual(sec('POST /oauth/token'), [{ clientSecretBasic: [] }, {}]);
  assert.deepEqual(sec('GET /catalog/v1/config'), [{ bearerJwt: [] }, { catalogToken: [] }]);
  assert.deepEqual(sec('POST /data-api/{ws}/{endpoint}'), [{ dataApiToken: [] }]);
});

test('no parameter is named `*` (the console route is /ui/{path}); /metrics is documented as text/plain', () => {
  // A '-' is fine (the Iceberg specification's own `{plan-id}`; generated clients quote the key).
  for (const { key, op } of operations()) for (const p of op.parameters ?? []) assert.match(p.name, /^[A-Za-z_][A-Za-z0-9_-]*$/, `${key} has a parameter named ${p.name}`);
  assert.ok(doc.paths['/ui/{path}']?.get, '/ui/{path} is documented');
  assert.equal(doc.paths['/ui/{*}'], undefined);
  assert.deepEqual(Object.keys(doc.paths['/metrics'].get.responses['200'].content ?? {}), ['text/plain; version=0.0.4']);
});

// Issue 27 point 12: the Iceberg schemas kept OpenAPI 3.0's `nullable` (6 `struct` errors) and
// the document named no server (`no-empty-servers`).
test("Redocly's recommended ruleset reports no error; nullable is 3.1's type list; the server is named", async () => {
  const lint = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'svc-openapi.json', config: await createConfig({ extends: ['recommended'] }) });
  assert.deepEqual(lint.filter((p) => p.severity === 'error').map((e) => `${e.ruleId}: ${e.message} ${e.location[0]?.pointer ?? ''}`), []);
  assert.ok(!JSON.stringify(doc.components).includes('"nullable":'), 'no nullable keyword left');
  const schemas = (doc.components as { schemas: Record<string, { type?: unknown; properties?: Record<string, { type?: unknown }> }> }).schemas;
  assert.deepEqual(schemas['iceberg.PageToken'].type, ['string', 'null']);
  assert.deepEqual(schemas['iceberg.LoadTableResult'].properties!['metadata-location'].type, ['string', 'null']);
  assert.equal(schemas['iceberg.TableIdentifier'].properties!.name.type, 'string', 'nullable: false is just dropped');
  const { servers } = doc as unknown as { servers: Array<{ url: string; variables: { origin: { default: string } } }> };
  assert.equal(servers.length, 1);
  assert.equal(servers[0].url, '{origin}');
  assert.equal(servers[0].variables.origin.default, 'http://localhost:8080');
});

test('openapi-typescript generates types that tsc accepts for a right call and refuses for a wrong one', async () => {
  const types = astToString(await openapiTS(doc as never));
  assert.match(types, /getWorkspacesConnectionsByWsAndName: \{/);
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-openapi-'));
  try {
    await writeFile(path.join(dir, 'schema.ts'), types);
    const client = (call: string) => `import createClient from 'openapi-fetch';\nimport type { paths } from './schema.js';\nconst c = createClient<paths>({ baseUrl: 'http://x' });\nexport const r = ${call};\n`;
    await writeFile(path.join(dir, 'right.ts'), client(`c.GET('/api/workspaces/{ws}/connections/{name}', { params: { path: { ws: 'default', name: 'pg' } } })`));
    await writeFile(path.join(dir, 'wrong.ts'), client(`c.GET('/api/workspaces/{ws}/connections/{name}', { params: { path: { ws: 'default' } } })`));
    const tsc = path.resolve('node_modules/typescript/bin/tsc');
    const compile = (file: string) => promisify(execFile)(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', path.join(dir, file)]);
    // openapi-fetch is resolved from this project's node_modules
    await writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
    await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
    await compile('right.ts');
    await assert.rejects(compile('wrong.ts'), (e: { stdout?: string }) => /name/.test(String(e.stdout)));
  } finally { await rm(dir, { recursive: true, force: true }); }
});

test('openapi-fetch calls the routes: health, sign-in, the signed-in user, metrics as text', async () => {
  // The paths type is what openapi-typescript makes of the document; here only runtime matters.
  const api = createClient<Record<string, never>>({ baseUrl: base }) as unknown as ReturnType<typeof createClient>;
  const health = await api.GET('/healthz' as never);
  assert.deepEqual(health.data, { status: 'ok' });
  const login = await api.POST('/api/auth/login' as never, { body: { email: ADMIN.email, password: ADMIN.password } } as never);
  assert.equal(login.response.status, 200);
  const cookie = login.response.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const me = await api.GET('/api/me' as never, { headers: { cookie } } as never);
  assert.equal((me.data as { user: { email: string } }).user.email, ADMIN.email);
  const metrics = await api.GET('/metrics' as never, { parseAs: 'text' } as never);
  assert.match(String(metrics.response.headers.get('content-type')), /^text\/plain/);
  assert.match(metrics.data as unknown as string, /^# HELP /m);
  const missing = await api.GET('/api/me' as never);
  assert.deepEqual(Object.keys(missing.error as object).sort(), ['error', 'message']);
});
