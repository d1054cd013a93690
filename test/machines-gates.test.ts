// The catalog gate (bearer JWT of this service for oidc.catalog_audience, or the static
// catalog.auth_token) with the Iceberg REST config route, and the policy service (Ranger-shaped
// plugin API with and without its token, the 304 path, administration by workspace admins).
// Both "not mounted" when switched off: the answer of an unknown route.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, generateKeyPair } from 'jose';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { createClient, CLI_ACTOR } from '../src/idp/clients.js';
import { machines } from '../src/idp/state.js';
import { mintAccessToken } from '../src/idp/tokens.js';
import { ACCESS_TOKEN_TTL_SECS } from '../src/idp/keys.js';

const CATALOG_TOKEN = 'catalog-admin-token-0123456789';
const POLICY_TOKEN = 'policy-token-abcdefghijklmnop';
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

let on: TestApp;   // catalog and policy service enabled, policy token set
let off: TestApp;  // both disabled (defaults)
let open: TestApp; // policy service enabled without a token

before(async () => {
  [on, off, open] = await Promise.all([
    startTestApp({
      SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: CATALOG_TOKEN, SVC_CATALOG__WAREHOUSE: 's3://lake',
      SVC_IDP__ISSUER: 'https://svc.example.test', SVC_POLICY_SERVICE__ENABLED: 'true', SVC_POLICY_SERVICE__AUTH_TOKEN: POLICY_TOKEN,
    }),
    startTestApp(),
    startTestApp({ SVC_POLICY_SERVICE__ENABLED: 'true' }),
  ]);
  for (const t of [on, off, open]) await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
});
after(async () => { await Promise.all([on.close(), off.close(), open.close()]); });

async function tokenFor(t: TestApp, audiences: string[], aud?: string): Promise<string> {
  const c = await createClient(t.services.db, CLI_ACTOR, { name: 'engine', audiences });
  const res = await t.app.inject({
    method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret, ...(aud ? { audience: aud } : {}) }).toString(),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().access_token;
}

const get = (t: TestApp, url: string, authorization?: string) =>
  t.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });

describe('catalog gate', () => {
  test('no token: 401 with WWW-Authenticate: Bearer and an Iceberg error body', async () => {
    const res = await get(on, '/catalog/v1/config');
    assert.equal(res.statusCode, 401);
    assert.match(String(res.headers['www-authenticate']), /^Bearer realm="svc-catalog"$/);
    assert.deepEqual(Object.keys(res.json().error).sort(), ['code', 'message', 'type']);
    assert.equal(res.json().error.type, 'NotAuthorizedException');
    assert.equal(res.json().error.code, 401);
  });

  test('a JWT of this service with aud oidc.catalog_audience passes; /v1/config answers per the Iceberg REST spec', async () => {
    // A client bound to no workspace passes the gate; /v1/config then asks for a warehouse, and
    // the client reaches none (the access rules are tested in catalog-namespaces.test.ts).
    const token = await tokenFor(on, ['svc-catalog']);
    const res = await get(on, '/catalog/v1/config', `Bearer ${token}`);
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error.type, 'BadRequestException');
    const named = await get(on, '/catalog/v1/config?warehouse=default', `Bearer ${token}`);
    assert.equal(named.statusCode, 403);
    assert.match(named.json().error.message, /is bound to no workspace$/);
  });

  test('a token with another aud is refused', async () => {
    const token = await tokenFor(on, ['engine-a']);
    const res = await get(on, '/catalog/v1/config', `Bearer ${token}`);
    assert.equal(res.statusCode, 401);
    assert.match(res.json().error.message, /aud/);
    assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/);
  });

  test('a token naming another issuer is refused, even when signed with this service\'s key', async () => {
    const m = machines(on.services);
    const { token } = await mintAccessToken(m.keys, on.services.clock, 'https://not-us.example', { sub: 'x', audiences: ['svc-catalog'], clientId: 'x', scope: '' });
    const res = await get(on, '/catalog/v1/config', `Bearer ${token}`);
    assert.equal(res.statusCode, 401);
    assert.match(res.json().error.message, /not issued by https:\/\/svc\.example\.test/);
  });

  test('a token signed by a foreign key is refused', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const now = Math.floor(on.clock.now().getTime() / 1000);
    const forged = await new SignJWT({ client_id: 'x' }).setProtectedHeader({ alg: 'ES256', kid: 'forged' }).setIssuer('https://svc.example.test')
      .setSubject('x').setAudience('svc-catalog').setIssuedAt(now).setExpirationTime(now + 60).sign(privateKey);
    assert.equal((await get(on, '/catalog/v1/config', `Bearer ${forged}`)).statusCode, 401);
  });

  test('an expired token is refused (by the service clock), also after it was accepted once (the gate keeps verified tokens no longer than their exp)', async () => {
    const token = await tokenFor(on, ['svc-catalog']);
    assert.notEqual((await get(on, '/catalog/v1/config', `Bearer ${token}`)).statusCode, 401);
    on.clock.advance((ACCESS_TOKEN_TTL_SECS + 1) * 1000);
    const res = await get(on, '/catalog/v1/config', `Bearer ${token}`);
    assert.equal(res.statusCode, 401);
    assert.match(res.json().error.message, /expired/);
  });

  test('the static catalog.auth_token passes; a near miss does not', async () => {
    assert.equal((await get(on, '/catalog/v1/config?warehouse=default', `Bearer ${CATALOG_TOKEN}`)).statusCode, 200);
    assert.equal((await get(on, '/catalog/v1/config', `Bearer ${CATALOG_TOKEN}x`)).statusCode, 401);
    assert.equal((await get(on, '/catalog/v1/config', `Bearer ${CATALOG_TOKEN.slice(0, -1)}`)).statusCode, 401);
    assert.equal((await get(on, '/catalog/v1/config', `Basic ${Buffer.from(`x:${CATALOG_TOKEN}`).toString('base64')}`)).statusCode, 401);
  });

  test('other /catalog/* paths pass the same gate', async () => {
    assert.equal((await get(on, '/catalog/v1/namespaces')).statusCode, 401);
    const res = await get(on, '/catalog/v1/default/nothing-here', `Bearer ${CATALOG_TOKEN}`);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.type, 'NotFoundException');
  });

  test('catalog.enabled false: not mounted, exactly the answer of an unknown route', async () => {
    for (const url of ['/catalog/v1/config', '/catalog/v1/namespaces']) {
      const res = await get(off, url, `Bearer ${CATALOG_TOKEN}`);
      assert.equal(res.statusCode, 404);
      assert.deepEqual(res.json(), { error: 'not_found', message: `no route for GET ${url}` });
      const unknown = await get(off, `/nope${url}`);
      assert.deepEqual(Object.keys(res.json()), Object.keys(unknown.json()));
    }
  });
});

describe('policy service', () => {
  async function wsAdminBrowser(t: TestApp): Promise<Browser> {
    const b = new Browser(t, `198.51.100.${Math.floor(Math.random() * 200) + 1}`);
    assert.equal((await b.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    return b;
  }
  const bearer = `Bearer ${POLICY_TOKEN}`;

  test('with a token configured: none or a wrong one gets 401; the token (Bearer, or Basic password) passes', async () => {
    const none = await get(on, '/service/plugins/services');
    assert.equal(none.statusCode, 401);
    assert.match(String(none.headers['www-authenticate']), /^Bearer/);
    assert.equal(none.json().error, 'unauthorized');
    assert.equal((await get(on, '/service/plugins/services', 'Bearer wrong')).statusCode, 401);
    assert.equal((await get(on, '/service/plugins/policies/download/default')).statusCode, 401);
    assert.equal((await get(on, '/service/tags/download/default')).statusCode, 401);
    assert.equal((await get(on, '/service/plugins/services', bearer)).statusCode, 200);
    assert.equal((await get(on, '/service/plugins/services', `Basic ${Buffer.from(`ranger:${POLICY_TOKEN}`).toString('base64')}`)).statusCode, 200);
  });

  test('without a token configured: open to anyone (read-only)', async () => {
    const res = await get(open, '/service/plugins/services');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json().services.map((s: { name: string; type: string }) => [s.name, s.type]), [['default', 'trino']]);
    assert.equal((await get(open, '/service/plugins/policies/download/default')).statusCode, 200);
    assert.equal((await open.app.inject({ method: 'POST', url: '/service/plugins/services' })).statusCode, 404, 'read-only');
  });

  test('policies: administration bumps the version (audited); downloads are Ranger ServicePolicies; 304 at lastKnownVersion', async () => {
    const b = await wsAdminBrowser(on);
    const first = await get(on, '/service/plugins/policies/download/default?lastKnownVersion=-1', bearer);
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().policyVersion, 0);
    assert.deepEqual(first.json().policies, []);
    assert.equal((await get(on, '/service/plugins/policies/download/default?lastKnownVersion=0', bearer)).statusCode, 304);

    const created = await b.post('/api/workspaces/default/policies', {
      name: 'analysts read sales', resources: { catalog: ['hive'], schema: ['sales'], table: ['*'] },
      allow: [{ groups: ['analysts'], accesses: ['select', 'show'] }], deny: [{ users: ['mallory'], accesses: ['select'] }],
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().policy_version, 1);

    const dl = await get(on, '/service/plugins/policies/download/default?lastKnownVersion=0&pluginId=trino@host', bearer);
    assert.equal(dl.statusCode, 200);
    const sp = dl.json();
    assert.equal(sp.serviceName, 'default');
    assert.equal(sp.policyVersion, 1);
    assert.equal(typeof sp.policyUpdateTime, 'number');
    assert.equal(sp.serviceDef.name, 'trino');
    assert.deepEqual(sp.serviceDef.resources.map((r: { name: string }) => r.name), ['catalog', 'schema', 'table', 'column']);
    assert.equal(sp.policies.length, 1);
    const p = sp.policies[0];
    assert.equal(p.name, 'analysts read sales');
    assert.equal(p.service, 'default');
    assert.equal(p.isEnabled, true);
    assert.deepEqual(p.resources.schema, { values: ['sales'], isExcludes: false, isRecursive: false });
    assert.deepEqual(p.policyItems, [{ accesses: [{ type: 'select', isAllowed: true }, { type: 'show', isAllowed: true }], users: [], groups: ['analysts'], roles: [], conditions: [], delegateAdmin: false }]);
    assert.equal(p.denyPolicyItems[0].users[0], 'mallory');

    const unchanged = await get(on, '/service/plugins/policies/download/default?lastKnownVersion=1', bearer);
    assert.equal(unchanged.statusCode, 304);
    assert.equal(unchanged.body, '');

    const id = created.json().id;
    const updated = await b.put(`/api/workspaces/default/policies/${id}`, { name: 'analysts read sales', resources: { catalog: ['hive'] }, allow: [{ groups: ['analysts'], accesses: ['all'] }] });
    assert.equal(updated.statusCode, 200, updated.body);
    assert.equal(updated.json().policy_version, 2);
    assert.equal(updated.json().version, 2);
    assert.equal((await get(on, '/service/plugins/policies/download/default?lastKnownVersion=1', bearer)).json().policyVersion, 2);
    const del = await b.delete(`/api/workspaces/default/policies/${id}`);
    assert.deepEqual(del.json(), { policy_version: 3 });
    const services = (await get(on, '/service/plugins/services', bearer)).json();
    assert.equal(services.services[0].policyVersion, 3);

    const audit = (await b.get('/api/audit?kind=governance&limit=20')).json().events.map((e: { action: string }) => e.action);
    assert.deepEqual(audit.filter((a: string) => a.startsWith('policy.')), ['policy.delete', 'policy.update', 'policy.create']);
  });

  test('tags: ServiceTags download with its own version and 304', async () => {
    const b = await wsAdminBrowser(on);
    const t1 = await b.post('/api/workspaces/default/tags', { type: 'PII', attributes: { level: 'high' }, resources: { catalog: ['hive'], schema: ['sales'], table: ['customers'], column: ['email'] } });
    assert.equal(t1.statusCode, 201, t1.body);
    assert.equal(t1.json().tag_version, 1);
    const dl = await get(on, '/service/tags/download/default?lastKnownVersion=0', bearer);
    assert.equal(dl.statusCode, 200);
    const st = dl.json();
    assert.equal(st.serviceName, 'default');
    assert.equal(st.tagVersion, 1);
    assert.equal(st.serviceResources.length, 1);
    assert.deepEqual(st.serviceResources[0].resourceElements.column, { values: ['email'], isExcludes: false, isRecursive: false });
    const tagId = String(st.serviceResources[0].id);
    assert.equal(st.tags[tagId].type, 'PII');
    assert.deepEqual(st.tags[tagId].attributes, { level: 'high' });
    assert.deepEqual(st.resourceToTagIds[tagId], [Number(tagId)]);
    assert.equal(Object.values(st.tagDefinitions as Record<string, { name: string }>)[0].name, 'PII');
    assert.equal((await get(on, '/service/tags/download/default?lastKnownVersion=1', bearer)).statusCode, 304);
    assert.deepEqual((await b.delete(`/api/workspaces/default/tags/${t1.json().id}`)).json(), { tag_version: 2 });
    assert.equal((await get(on, '/service/tags/download/default?lastKnownVersion=1', bearer)).json().tagVersion, 2);
  });

  test('validation and access: unknown resources or accesses are 400; only ws_admin administers; unknown service 404', async () => {
    const b = await wsAdminBrowser(on);
    assert.equal((await b.post('/api/workspaces/default/policies', { name: 'x', resources: { database: ['a'] }, allow: [{ groups: ['g'], accesses: ['select'] }] })).statusCode, 400);
    assert.equal((await b.post('/api/workspaces/default/policies', { name: 'x', resources: { catalog: ['a'] }, allow: [{ groups: ['g'], accesses: ['fly'] }] })).statusCode, 400);
    assert.equal((await b.post('/api/workspaces/default/policies', { name: 'x', resources: { catalog: ['a'], table: ['t'] }, allow: [{ groups: ['g'], accesses: ['select'] }] })).statusCode, 400, 'table needs schema');
    assert.equal((await b.post('/api/workspaces/default/policies', { name: 'x', resources: { catalog: ['a'] }, allow: [{ accesses: ['select'] }] })).statusCode, 400, 'nobody');
    assert.equal((await b.post('/api/workspaces/default/policies', { name: 'x', resources: { catalog: ['a'] } })).statusCode, 400, 'no items');
    assert.equal((await b.put('/api/workspaces/default/policies/999999', { name: 'x', resources: { catalog: ['a'] }, allow: [{ groups: ['g'], accesses: ['select'] }] })).statusCode, 404);
    assert.equal((await new Browser(on, '198.51.100.250').get('/api/workspaces/default/policies')).statusCode, 401);
    assert.equal((await get(on, '/service/plugins/policies/download/nope', bearer)).statusCode, 404);
    const dup = { name: 'dup', resources: { catalog: ['a'] }, allow: [{ groups: ['g'], accesses: ['select'] }] };
    assert.equal((await b.post('/api/workspaces/default/policies', dup)).statusCode, 201);
    assert.equal((await b.post('/api/workspaces/default/policies', dup)).statusCode, 409);
  });

  test('policy_service.enabled false: plugin API and administration not mounted', async () => {
    for (const url of ['/service/plugins/services', '/service/plugins/policies/download/default', '/service/tags/download/default']) {
      const res = await get(off, url);
      assert.equal(res.statusCode, 404);
      assert.deepEqual(res.json(), { error: 'not_found', message: `no route for GET ${url}` });
    }
    const b = new Browser(off, '198.51.100.201');
    await b.login(ADMIN.email, ADMIN.password);
    const res = await b.get('/api/workspaces/default/policies');
    assert.deepEqual(res.json(), { error: 'not_found', message: 'no route for GET /api/workspaces/default/policies' });
  });
});
