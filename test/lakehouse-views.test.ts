// Catalog views on the embedded engine (issue 25 point 1: "every table and view"): a view made
// through the REST catalog (as Trino or Spark would make it) reads as iceberg.<ns>.<view>, its
// names resolved in the workspace's catalog, its SQL held to the same rules as a person's, the
// reader's policies applied to what it reads. Expected rows come from the same query on the table.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { runQuery } from '../src/queries/run.js';
import { QueryFailure } from '../src/queries/types.js';

let c: CatalogApp;
let wsId: string;
let token: string;
const as = (name: string, groups: string[] = []) => async (sql: string) => (await runQuery(c.t.services.queryEngines, c.t.services.config, {
  workspace: wsId, engine: 'embedded', sql, principal: { name, role: 'ws_editor', groups },
})).rows;
const ed = as('ed@example.com');
const analyst = as('ann@example.com', ['analysts']);
const refused = async (p: Promise<unknown>, re: RegExp) => {
  try { await p; } catch (err) { assert.ok(err instanceof QueryFailure); assert.equal(err.kind, 'refused', err.message); assert.match(err.message, re); return; }
  assert.fail('the statement ran');
};
async function view(name: string, sql: string, fields: Array<[string, string]>, dialect = 'trino', extra: Record<string, unknown> = {}) {
  const res = await fetch(new URL('v1/sales/namespaces/lake/views', c.base), {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name, schema: { type: 'struct', 'schema-id': 0, fields: fields.map(([n, t], i) => ({ id: i + 1, name: n, type: t, required: false })) },
      'view-version': { 'version-id': 1, 'timestamp-ms': 1780000000000, 'schema-id': 0, summary: { 'engine-name': dialect }, representations: [{ type: 'sql', sql, dialect }], 'default-namespace': ['lake'], ...extra },
      properties: {},
    }),
  });
  assert.equal(res.status, 200, await res.text());
}

before(async () => {
  c = await startCatalogApp({ SVC_ENGINES__PROVISIONER: 'none', SVC_POLICY_SERVICE__ENABLED: 'true', SVC_POLICY_SERVICE__AUTH_TOKEN: 'policy-token-abcdefghijklmnop' });
  wsId = await workspace(c.t, 'sales');
  token = (await rolePeople(c.t, 'sales')).editor;
  const made = await fetch(new URL('v1/sales/namespaces', c.base), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ namespace: ['lake'] }) });
  assert.equal(made.status, 200);
  await ed("CREATE TABLE iceberg.lake.orders AS SELECT range AS id, range * 7 % 50 AS amount, 'c' || (range % 4) AS customer FROM range(40)");
  await view('big_orders', 'SELECT id, amount, customer FROM orders WHERE amount > 30', [['id', 'long'], ['amount', 'long'], ['customer', 'string']]);
  await view('big_by_customer', 'SELECT customer, count(*) AS n FROM lake.big_orders GROUP BY customer', [['customer', 'string'], ['n', 'long']], 'spark');
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', { name: 'hide customers', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['orders'], column: ['customer'] }, masks: [{ groups: ['analysts'], type: 'MASK_NULL' }] }, new Date());
  await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', { name: 'no summaries', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['big_by_customer'] }, deny: [{ users: ['eve@example.com'], accesses: ['select'] }] }, new Date());
});
after(async () => { await c.close(); });

describe('catalog views', () => {
  test('a view reads as iceberg.<ns>.<view>, with the rows of its query on the table; views read views', async () => {
    const want = await ed('SELECT id, amount, customer FROM iceberg.lake.orders WHERE amount > 30 ORDER BY id');
    assert.ok(want.length > 5);
    assert.deepEqual(await ed('SELECT * FROM iceberg.lake.big_orders ORDER BY id'), want);
    assert.deepEqual(await ed('SELECT b.id FROM iceberg.lake.big_orders AS b JOIN iceberg.lake.orders AS o ON o.id = b.id WHERE b.id < 20 ORDER BY 1'), want.filter((r) => Number(r[0]) < 20).map((r) => [r[0]]));
    const counts = await ed('SELECT customer, count(*) FROM iceberg.lake.orders WHERE amount > 30 GROUP BY 1 ORDER BY 1');
    assert.deepEqual(await ed('SELECT * FROM iceberg.lake.big_by_customer ORDER BY 1'), counts);
    assert.deepEqual((await ed('DESCRIBE iceberg.lake.big_orders')).map((r) => r.slice(0, 2)), [['id', 'BIGINT'], ['amount', 'BIGINT'], ['customer', 'VARCHAR']]);
  });

  test('the reader\'s policies apply through the view; a deny on the view refuses it', async () => {
    const seen = await analyst('SELECT DISTINCT customer FROM iceberg.lake.big_orders');
    assert.deepEqual(seen, [[null]], 'the mask on the table applies to a reader of the view');
    await refused(as('eve@example.com')('SELECT * FROM iceberg.lake.big_by_customer'), /policy "no summaries" denies select/);
  });

  test('a view reaches nothing its reader could not: other catalogs, files and itself are refused', async () => {
    await view('elsewhere', 'SELECT * FROM hive.lake.orders', [['x', 'long']]);
    await refused(ed('SELECT * FROM iceberg.lake.elsewhere'), /outside the workspace's catalog/);
    await view('files', "SELECT * FROM read_csv('/etc/passwd')", [['x', 'string']]);
    await refused(ed('SELECT * FROM iceberg.lake.files'), /read_csv is not allowed/);
    await view('loop', 'SELECT * FROM loop', [['x', 'long']]);
    await refused(ed('SELECT * FROM iceberg.lake.loop'), /more than 8 deep/);
    await refused(ed('SELECT * FROM iceberg.lake.big_orders FOR VERSION AS OF 1'), /time travel applies to tables/);
  });

  // A view's SQL is stored by any editor's client (up to the 1 MiB body) and parsed again at each
  // reference to it (a statement may hold 1,000): its tree is bounded as a person's statement is.
  test('a view whose parse tree is over the bound is refused, not read', async () => {
    await view('wide', `SELECT ${'1,'.repeat(75_000)}1 AS x`, [['x', 'int']]);
    await refused(ed('SELECT count(*) FROM iceberg.lake.wide'), /^the statement's parse tree is \d+ characters, over the \d+ the embedded engine reads/);
    // each tree within the bound, but named eight times: the statement's trees together are bounded too
    await view('half_wide', `SELECT ${'1,'.repeat(30_000)}1 AS x`, [['x', 'int']]);
    const eight = Array.from({ length: 8 }, (_, i) => `iceberg.lake.half_wide AS h${i}`).join(', ');
    await refused(ed(`SELECT count(*) FROM ${eight}`), /^the statement's parse trees \(its views, each time it names them, and scans\) come to over \d+ characters/);
  });
});
