// One access model: the deny items of the policy service (the same policies engine plugins
// download) restrict the catalog after the workspace role allowed the operation, matching the
// warehouse as `catalog`, the namespace as `schema` and the table as `table`; the refusal names
// the policy. Names are judged from the request alone, so a denied name is 403 whether it exists.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { IcebergRestCatalog, IcebergError } from 'iceberg-js';
import { startCatalogApp, workspace, rolePeople, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';

let c: CatalogApp;
const tokens: Record<string, string> = {};
const schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'n', type: 'long', required: false }] } as never;
const cat = (token: string) => new IcebergRestCatalog({ baseUrl: c.base, catalogName: 'sales', auth: { type: 'bearer', token } });
async function refusal(p: Promise<unknown>): Promise<IcebergError> {
  const err = await p.then(() => assert.fail('expected a refusal'), (e: unknown) => e);
  assert.ok(err instanceof IcebergError && err.status === 403, String(err));
  return err;
}

before(async () => {
  c = await startCatalogApp({ SVC_POLICY_SERVICE__ENABLED: 'true' });
  await workspace(c.t, 'sales');
  Object.assign(tokens, await rolePeople(c.t, 'sales'));
  const now = c.t.clock.now();
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', {
    name: 'salaries are private', resources: { catalog: ['sales'], schema: ['hr'], table: ['salar*'] },
    deny: [{ roles: ['ws_viewer'], accesses: ['select'] }, { roles: ['ws_editor'], accesses: ['alter'] }],
  }, now);
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', {
    name: 'hr is kept', resources: { catalog: ['*'], schema: ['hr'] },
    deny: [{ users: ['ada@example.test'], accesses: ['drop'] }, { groups: ['contractors'], accesses: ['all'] }],
  }, now);
  const admin = cat(CATALOG_TOKEN);
  await admin.createNamespace({ namespace: ['hr'] });
  await admin.createTable({ namespace: ['hr'] }, { name: 'salaries', schema });
  await admin.createTable({ namespace: ['hr'] }, { name: 'teams', schema });
});
after(async () => { await c.close(); });

test('a deny item on a role refuses the viewer, names the policy, and leaks nothing', async () => {
  const denied = await refusal(cat(tokens.viewer).loadTable({ namespace: ['hr'], name: 'salaries' }));
  assert.equal(denied.icebergType, 'ForbiddenException');
  assert.equal(denied.message, 'Forbidden: policy "salaries are private" denies select on sales.hr.salaries to vera@example.test via client:engine-1');
  // A name the pattern covers is refused the same way whether it exists or not.
  const ghost = await refusal(cat(tokens.viewer).loadTable({ namespace: ['hr'], name: 'salaries_2030' }));
  assert.match(ghost.message, /policy "salaries are private"/);
  // Other tables, and other people, are untouched.
  assert.equal((await cat(tokens.viewer).loadTable({ namespace: ['hr'], name: 'teams' }))['format-version'], 2);
  assert.equal((await cat(tokens.editor).loadTable({ namespace: ['hr'], name: 'salaries' }))['format-version'], 2);
});

test('a schema-level deny item on a user refuses drops of every table in it, even to a workspace admin', async () => {
  const denied = await refusal(cat(tokens.owner).dropTable({ namespace: ['hr'], name: 'teams' }));
  assert.equal(denied.message, 'Forbidden: policy "hr is kept" denies drop on sales.hr.teams to ada@example.test via client:engine-1');
  assert.equal(await cat(tokens.owner).tableExists({ namespace: ['hr'], name: 'teams' }), true);
  // The administration token is not a person: policies do not restrict it.
  await cat(CATALOG_TOKEN).dropTable({ namespace: ['hr'], name: 'teams' });
});

test('renames and transactions are judged on every table they name', async () => {
  const post = (path: string, body: unknown) => fetch(new URL(path, c.base), {
    method: 'POST', headers: { authorization: `Bearer ${tokens.editor}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: await r.json() as { error: { message: string } } }));
  const rename = await post('v1/sales/tables/rename', { source: { namespace: ['hr'], name: 'salaries' }, destination: { namespace: ['hr'], name: 'pay' } });
  assert.equal(rename.status, 403);
  assert.equal(rename.body.error.message, 'Forbidden: policy "salaries are private" denies alter on sales.hr.salaries to ed@example.test via client:engine-1');
  const tx = await post('v1/sales/transactions/commit', { 'table-changes': [{ identifier: { namespace: ['hr'], name: 'salaries' }, requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] }] });
  assert.equal(tx.status, 403);
  assert.match(tx.body.error.message, /^Forbidden: policy "salaries are private" denies alter on sales\.hr\.salaries/);
});

test('a policy written for the engines (catalog "iceberg", as Trino names the catalog) governs the REST catalog too', async () => {
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', {
    name: 'engine names', resources: { catalog: ['iceberg'], schema: ['hr'], table: ['bonus'] },
    deny: [{ roles: ['ws_editor'], accesses: ['select'] }],
  }, c.t.clock.now());
  await cat(CATALOG_TOKEN).createTable({ namespace: ['hr'] }, { name: 'bonus', schema });
  c.t.clock.advance(6_000); // past the 5 s policy cache
  const denied = await refusal(cat(tokens.editor).loadTable({ namespace: ['hr'], name: 'bonus' }));
  assert.match(denied.message, /^Forbidden: policy "engine names" denies select on sales\.hr\.bonus/);
  // a policy on another catalog name governs nothing here
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', {
    name: 'elsewhere', resources: { catalog: ['hive'], schema: ['hr'], table: ['bonus'] },
    deny: [{ roles: ['ws_admin'], accesses: ['select'] }],
  }, c.t.clock.now());
  c.t.clock.advance(6_000);
  assert.equal((await cat(tokens.owner).loadTable({ namespace: ['hr'], name: 'bonus' }))['format-version'], 2);
});
