// The policy service as an Apache Ranger plugin sees it: the exact request sequence of Ranger's
// RangerAdminRESTClient (secure download paths with `Authorization: Bearer`, its query
// parameters), first with -1 versions (everything), then with what it holds (304 for each); the
// roles are the workspace roles; the user store and GDS downloads answer empty, then 304. Each
// poll is recorded, and administrators see which plugin lags behind a policy change.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { render } from '../src/engines/render.js';
import { resolveImage } from '../src/engines/images.js';

const TOKEN = 'policy-token-abcdefghijklmnop';
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };
const PLUGIN = 'trino@coordinator-1-default';
let t: TestApp;
let admin: Browser;

before(async () => {
  t = await startTestApp({ SVC_POLICY_SERVICE__ENABLED: 'true', SVC_POLICY_SERVICE__AUTH_TOKEN: TOKEN });
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  admin = new Browser(t);
  assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
});
after(async () => { await t.close(); });

/** One poll round of RangerAdminRESTClient (secure mode): policies, tags, roles, user store, GDS. */
async function pollRound(held: { policy: number; tag: number; role: number; userStore: number; gds: number }, activation: number) {
  const plugin = `lastActivationTime=${activation}&pluginId=${encodeURIComponent(PLUGIN)}`;
  const common = `${plugin}&clusterName=prod`;
  const caps = 'pluginCapabilities=7ffff';
  const urls = [
    `/service/plugins/secure/policies/download/default?lastKnownVersion=${held.policy}&${common}&supportsPolicyDeltas=true&${caps}`,
    // The tag download is the one that sends no clusterName.
    `/service/tags/secure/download/default?lastKnownVersion=${held.tag}&${plugin}&supportsTagDeltas=true&${caps}`,
    `/service/roles/secure/download/default?lastKnownRoleVersion=${held.role}&${common}&${caps}`,
    `/service/xusers/secure/download/default?lastKnownUserStoreVersion=${held.userStore}&${common}&${caps}`,
    `/service/gds/secure/download/default?lastKnownGdsVersion=${held.gds}&${common}&${caps}`,
  ];
  const out = [];
  for (const url of urls) {
    out.push(await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/json' } }));
  }
  return out;
}

test('a Ranger plugin\'s first round downloads everything; the next round at the held versions is all 304', async () => {
  const [policies, tags, roles, users, gds] = await pollRound({ policy: -1, tag: -1, role: -1, userStore: -1, gds: -1 }, 0);
  for (const r of [policies, tags, roles, users, gds]) assert.equal(r.statusCode, 200, `${r.statusCode} ${r.body}`);
  const sp = policies.json();
  assert.equal(sp.serviceName, 'default');
  assert.equal(sp.serviceDef.name, 'trino');
  assert.ok(sp.serviceDef.accessTypes.length > 0);
  // The Trino definition's masks and row filters, so the plugin can apply policies of types 1 and 2.
  assert.deepEqual(sp.serviceDef.dataMaskDef.accessTypes.map((a: { name: string }) => a.name), ['select']);
  assert.deepEqual(sp.serviceDef.dataMaskDef.resources.map((r: { name: string }) => r.name), ['catalog', 'schema', 'table', 'column']);
  const maskTypes = sp.serviceDef.dataMaskDef.maskTypes.map((m: { name: string }) => m.name);
  for (const m of ['MASK', 'MASK_SHOW_LAST_4', 'MASK_SHOW_FIRST_4', 'MASK_HASH', 'MASK_NULL', 'MASK_NONE', 'MASK_DATE_SHOW_YEAR', 'CUSTOM']) assert.ok(maskTypes.includes(m), m);
  assert.deepEqual(sp.serviceDef.rowFilterDef.resources.map((r: { name: string }) => r.name), ['catalog', 'schema', 'table']);
  assert.deepEqual(sp.serviceDef.rowFilterDef.accessTypes.map((a: { name: string }) => a.name), ['select']);
  const rr = roles.json();
  assert.equal(rr.serviceName, 'default');
  assert.deepEqual(rr.rangerRoles.map((r: { name: string }) => r.name), ['ws_viewer', 'ws_editor', 'ws_admin']);
  assert.deepEqual(rr.rangerRoles[2].users, [{ name: ADMIN.email, isAdmin: false }]);
  assert.deepEqual(users.json().userGroupMapping, {});
  assert.deepEqual(gds.json().dataShares, []);

  const held = { policy: sp.policyVersion, tag: tags.json().tagVersion, role: rr.roleVersion, userStore: users.json().userStoreVersion, gds: gds.json().gdsVersion };
  const again = await pollRound(held, 1780000000000);
  assert.deepEqual(again.map((r) => r.statusCode), [304, 304, 304, 304, 304]);
  // The plain (non-secure) paths answer the same.
  assert.equal((await t.app.inject({ method: 'GET', url: `/service/roles/download/default?lastKnownRoleVersion=${held.role}`, headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, 304);
  assert.equal((await t.app.inject({ method: 'GET', url: '/service/gds/download/default?lastKnownGdsVersion=-1', headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, 200);
});

test('administrators see each plugin\'s last poll and held versions, and which lag behind a change', async () => {
  const before = (await admin.get('/api/workspaces/default/policy-plugins')).json();
  assert.equal(before.plugins.length, 1);
  const p = before.plugins[0];
  assert.equal(p.plugin_id, PLUGIN);
  assert.equal(p.cluster_name, 'prod');
  assert.equal(p.policy_version_held, before.service.policy_version);
  assert.equal(p.lagging, false);
  assert.equal(p.last_activation_time, new Date(1780000000000).toISOString(), 'lastActivationTime of the last round');
  // A tag poll alone (Ranger's tag refresher runs on its own and sends no clusterName) keeps the cluster.
  const tagOnly = await t.app.inject({ method: 'GET', url: `/service/tags/secure/download/default?lastKnownVersion=${p.tag_version_held}&lastActivationTime=1780000000500&pluginId=${encodeURIComponent(PLUGIN)}&supportsTagDeltas=true`, headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(tagOnly.statusCode, 304);
  assert.equal((await admin.get('/api/workspaces/default/policy-plugins')).json().plugins[0].cluster_name, 'prod');

  const created = await admin.post('/api/workspaces/default/policies', { name: 'no pii', resources: { catalog: ['default'], schema: ['hr'], table: ['*'] }, deny: [{ roles: ['ws_viewer'], accesses: ['select'] }] });
  assert.equal(created.statusCode, 201, created.body);
  const lag = (await admin.get('/api/workspaces/default/policy-plugins')).json();
  assert.equal(lag.plugins[0].policies_behind, 1);
  assert.equal(lag.plugins[0].lagging, true);

  // The plugin polls, gets the new version (it only goes up), and is current again.
  const [policies] = await pollRound({ policy: p.policy_version_held, tag: 0, role: 0, userStore: 1, gds: 1 }, 1780000001000);
  assert.equal(policies.statusCode, 200);
  assert.equal(policies.json().policyVersion, p.policy_version_held + 1);
  assert.deepEqual(policies.json().policies[0].denyPolicyItems[0].roles, ['ws_viewer']);
  const now = (await admin.get('/api/workspaces/default/policy-plugins')).json();
  assert.equal(now.plugins[0].lagging, false);
  assert.equal(now.plugins[0].policy_version_held, lag.service.policy_version);
});

test('without the token: 401; an unknown service: 404 for policies, never a 500', async () => {
  const none = await t.app.inject({ method: 'GET', url: '/service/gds/secure/download/default?lastKnownGdsVersion=-1' });
  assert.equal(none.statusCode, 401);
  const unknown = await t.app.inject({ method: 'GET', url: '/service/plugins/secure/policies/download/nope?lastKnownVersion=-1', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(unknown.statusCode, 404);
  // Ranger's body word for word: RangerServiceNotFoundException.throwExceptionIfServiceNotFound
  // compares the start of the body with "\"RANGER_ERROR_SERVICE_NOT_FOUND: ServiceName=<name>\""
  assert.ok(unknown.body.startsWith('"RANGER_ERROR_SERVICE_NOT_FOUND: ServiceName=nope"'), unknown.body);
  assert.equal(JSON.parse(unknown.body), 'RANGER_ERROR_SERVICE_NOT_FOUND: ServiceName=nope');
  const bad = await t.app.inject({ method: 'GET', url: '/service/roles/secure/download/default?lastKnownRoleVersion=abc', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(bad.statusCode, 400);
});

test('column masks and row filters reach the plugin as Ranger policies of types 1 and 2', async () => {
  const mask = await admin.post('/api/workspaces/default/policies', {
    name: 'hash emails', resources: { catalog: ['default'], schema: ['crm'], table: ['people'], column: ['email'] },
    masks: [{ roles: ['ws_viewer'], type: 'MASK_HASH' }, { groups: ['support'], type: 'CUSTOM', expression: "substr({col}, 1, 2) || '***'" }],
  });
  assert.equal(mask.statusCode, 201, mask.body);
  assert.deepEqual(mask.json().masks[0], { users: [], groups: [], roles: ['ws_viewer'], type: 'MASK_HASH' });
  const filter = await admin.post('/api/workspaces/default/policies', {
    name: 'eu rows only', resources: { catalog: ['default'], schema: ['crm'], table: ['orders'] },
    row_filters: [{ groups: ['eu-sales'], filter: "region = 'eu'" }],
  });
  assert.equal(filter.statusCode, 201, filter.body);

  const res = await t.app.inject({ method: 'GET', url: '/service/plugins/secure/policies/download/default?lastKnownVersion=-1', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.statusCode, 200);
  const byName = new Map(res.json().policies.map((p: { name: string }) => [p.name, p]));
  const m = byName.get('hash emails') as Record<string, unknown>;
  assert.equal(m.policyType, 1);
  assert.deepEqual(m.policyItems, []);
  assert.deepEqual(m.dataMaskPolicyItems, [
    { accesses: [{ type: 'select', isAllowed: true }], users: [], groups: [], roles: ['ws_viewer'], conditions: [], delegateAdmin: false, dataMaskInfo: { dataMaskType: 'MASK_HASH' } },
    { accesses: [{ type: 'select', isAllowed: true }], users: [], groups: ['support'], roles: [], conditions: [], delegateAdmin: false, dataMaskInfo: { dataMaskType: 'CUSTOM', valueExpr: "substr({col}, 1, 2) || '***'" } },
  ]);
  const f = byName.get('eu rows only') as Record<string, unknown>;
  assert.equal(f.policyType, 2);
  assert.deepEqual(f.rowFilterPolicyItems, [{ accesses: [{ type: 'select', isAllowed: true }], users: [], groups: ['eu-sales'], roles: [], conditions: [], delegateAdmin: false, rowFilterInfo: { filterExpr: "region = 'eu'" } }]);
  assert.equal((byName.get('no pii') as Record<string, unknown>).policyType, 0);

  // One kind per policy; a mask names columns, a row filter names tables; CUSTOM needs its expression.
  for (const [body, message] of [
    [{ name: 'x', resources: { catalog: ['default'], schema: ['crm'], table: ['people'] }, masks: [{ roles: ['ws_viewer'], type: 'MASK' }] }, 'a mask policy names its columns: resources down to column'],
    [{ name: 'x', resources: { catalog: ['default'], schema: ['crm'] }, row_filters: [{ roles: ['ws_viewer'], filter: 'true' }] }, 'a row filter policy names tables: resources down to table, no column'],
    [{ name: 'x', resources: { catalog: ['default'], schema: ['crm'], table: ['t'], column: ['c'] }, masks: [{ roles: ['ws_viewer'], type: 'CUSTOM' }] }, 'masks[0]: a CUSTOM mask needs an expression'],
    [{ name: 'x', resources: { catalog: ['default'], schema: ['crm'], table: ['t'], column: ['c'] }, masks: [{ roles: ['ws_viewer'], type: 'MASK_NULL' }], deny: [{ roles: ['ws_viewer'], accesses: ['select'] }] }, 'a policy holds one kind of item: allow and deny, masks, or row_filters'],
    [{ name: 'x', resources: { catalog: ['default'], schema: ['crm'], table: ['t'], column: ['c'] }, masks: [{ type: 'MASK_NULL' }] }, 'masks[0] needs users, groups or roles'],
  ] as const) {
    const r = await admin.post('/api/workspaces/default/policies', body);
    assert.equal(r.statusCode, 400, r.body);
    assert.equal(r.json().message, message);
  }
  const unknownType = await admin.post('/api/workspaces/default/policies', { name: 'x', resources: { catalog: ['default'], schema: ['crm'], table: ['t'], column: ['c'] }, masks: [{ roles: ['ws_viewer'], type: 'MASK_ROT13' }] });
  assert.equal(unknownType.statusCode, 400);
});

test('an engine svc provisions polls under the service name it is configured with, <workspace>.<engine>, and gets its workspace\'s policies', async () => {
  const ws = await t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  await t.services.db.insertInto('engines').values({
    workspace_id: ws.id, name: 'eng1', kind: 'trino', image: 'docker.io/trinodb/trino:479', resources: JSON.stringify({ cpu: '2', memory: '4Gi' }),
    provisioner: 'local_container', state: 'running', desired: 'running', config_hash: 'h', idp_issuer: 'http://issuer', endpoint_url: null,
  } as never).execute();
  // the name the engine's Ranger plugin is configured with, as provisioning renders it
  const files = render({
    kind: 'trino', workspace: 'default', engine: 'eng1', engineId: 'e1', image: resolveImage('trino', {}), resources: { cpu: '2', memory: '4Gi' },
    callbackUrl: 'http://svc.test:8080', clientId: 'c1', catalogAudience: 'svc-catalog',
  }).files;
  const service = /^ranger\.service\.name=(.+)$/m.exec(files['access-control.properties']!)![1]!;
  assert.equal(service, 'default.eng1');
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${TOKEN}` } });
  const own = (await get('/service/plugins/secure/policies/download/default?lastKnownVersion=-1')).json();
  const p = await get(`/service/plugins/secure/policies/download/${service}?lastKnownVersion=-1&pluginId=trino%40eng1`);
  assert.equal(p.statusCode, 200, p.body);
  assert.equal(p.json().serviceName, 'default.eng1');
  assert.deepEqual(p.json().policies.map((x: { name: string }) => x.name), own.policies.map((x: { name: string }) => x.name));
  assert.ok(own.policies.length > 0, 'the workspace has policies to compare');
  for (const url of [`/service/tags/secure/download/${service}?lastKnownVersion=-1`, `/service/roles/secure/download/${service}?lastKnownRoleVersion=-1`]) {
    assert.equal((await get(url)).statusCode, 200, url);
  }
  const plugins = (await admin.get('/api/workspaces/default/policy-plugins')).json();
  assert.ok(JSON.stringify(plugins).includes('trino@eng1'), 'the engine\'s poll is recorded for the workspace');
  for (const unknown of ['default.nope', 'nope.eng1', 'default.eng1.x']) {
    const r = await get(`/service/plugins/secure/policies/download/${unknown}?lastKnownVersion=-1`);
    assert.equal(r.statusCode, 404, unknown);
    assert.match(r.body, /RANGER_ERROR_SERVICE_NOT_FOUND/);
  }
});
