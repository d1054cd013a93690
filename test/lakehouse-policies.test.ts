// The workspace's policies on the embedded engine (issue 25, point 6): masks, row filters and
// deny items apply to every statement on a catalog table for the person it runs for, on the plan,
// so SELECT *, subqueries, CTEs, joins, EXPLAIN, COUNT(*) and time travel cannot get around them;
// a query's own predicates see the masked value; a refusal names the policy. The table is the Java
// API's fixture (imported); the expected rows come from the table without policies, through the
// same engine for a person no policy names.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startCatalogApp, workspace, rolePeople, type CatalogApp } from './helpers/catalog.js';
import { FIXTURES } from './helpers/iceberg-memory.js';
import { importTable } from '../src/catalog/import.js';
import { systemCaller } from '../src/catalog/access.js';
import { findWarehouse } from '../src/catalog/warehouse.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { runQuery } from '../src/queries/run.js';
import { QueryFailure, type QueryRole } from '../src/queries/types.js';

let c: CatalogApp;
let wsId: string;
const T = 'iceberg.lake.bunnies';
const as = (name: string, groups: string[] = [], role: QueryRole = 'ws_viewer') => (sql: string) => runQuery(c.t.services.queryEngines, c.t.services.config, {
  workspace: wsId, engine: 'embedded', sql, principal: { name, role, groups },
});
const free = as('owner@example.com', [], 'ws_admin');
const analyst = as('ann@example.com', ['analysts']);
const filtered = as('bob@example.com');
const outsider = as('eve@example.com', ['contractors']);
const rows = async (run: ReturnType<typeof as>, sql: string) => (await run(sql)).rows;
const refusal = async (p: Promise<unknown>) => {
  try { await p; } catch (err) { assert.ok(err instanceof QueryFailure); assert.equal(err.kind, 'refused', err.message); return err.message; }
  assert.fail('the statement ran');
};

before(async () => {
  c = await startCatalogApp({ SVC_ENGINES__PROVISIONER: 'none', SVC_POLICY_SERVICE__ENABLED: 'true', SVC_POLICY_SERVICE__AUTH_TOKEN: 'policy-token-abcdefghijklmnop' });
  wsId = await workspace(c.t, 'sales');
  const editor = (await rolePeople(c.t, 'sales')).editor;
  const made = await fetch(new URL('v1/sales/namespaces', c.base), { method: 'POST', headers: { authorization: `Bearer ${editor}`, 'content-type': 'application/json' }, body: JSON.stringify({ namespace: ['lake'] }) });
  assert.equal(made.status, 200);
  const s = c.t.services;
  await importTable(s, await findWarehouse(s, 'sales'), systemCaller(s), ['lake'], 'bunnies', `${FIXTURES}/java/bunnies`);
  const policy = (input: Parameters<typeof createPolicy>[3]) => createPolicy(s.db, CLI_ACTOR, 'sales', input, new Date());
  await policy({ name: 'hide origin', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['bunnies'], column: ['Origin Country'] }, masks: [{ groups: ['analysts'], type: 'MASK_NULL' }] });
  await policy({ name: 'hash breeds', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['bunnies'], column: ['Breed Name'] }, masks: [{ groups: ['analysts'], type: 'MASK_HASH' }] });
  await policy({ name: 'long lives only', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['bunnies'] }, row_filters: [{ users: ['bob@example.com'], filter: '"Lifespan" >= 8' }] });
  await policy({ name: 'no contractors', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['bunnies'] }, deny: [{ groups: ['contractors'], accesses: ['select'] }] });
});
after(async () => { await c.close(); });

describe('policies on catalog tables', () => {
  test('a mask: SELECT * shows the masked value, and the query\'s own predicates compare the masked value', async () => {
    const all = await rows(free, `SELECT "Breed Name", "Origin Country" FROM ${T} ORDER BY 1`);
    assert.ok(all.length > 5 && all.some((r) => r[1] === 'USA'));
    const seen = await rows(analyst, `SELECT * FROM ${T}`);
    const cols = (await analyst(`SELECT * FROM ${T} LIMIT 0`)).columns.map((x) => x.name);
    const origin = cols.indexOf('Origin Country');
    const breed = cols.indexOf('Breed Name');
    assert.equal(seen.length, all.length, 'a mask hides values, not rows');
    assert.ok(seen.every((r) => r[origin] === null), 'MASK_NULL');
    const hex = (s: string) => (async () => { const { createHash } = await import('node:crypto'); return createHash('sha256').update(s, 'utf8').digest('hex').toUpperCase(); })();
    assert.deepEqual(seen.map((r) => r[breed]).sort(), (await Promise.all(all.map((r) => hex(r[0] as string)))).sort(), 'MASK_HASH: upper-case hex SHA-256, as Trino\'s to_hex');
    assert.deepEqual(await rows(analyst, `SELECT count(*) FROM ${T} WHERE "Origin Country" = 'USA'`), [['0']], 'the predicate saw NULL, not USA');
    assert.deepEqual(await rows(analyst, `SELECT count(*) FROM ${T} WHERE "Origin Country" IS NULL`), [[String(all.length)]]);
  });

  test('a row filter holds through SELECT *, COUNT(*), subqueries, CTEs, joins, EXPLAIN ANALYZE and time travel', async () => {
    const want = (await rows(free, `SELECT "Breed Name" FROM ${T} WHERE "Lifespan" >= 8 ORDER BY 1`)).map((r) => r[0]);
    assert.ok(want.length > 0 && want.length < (await rows(free, `SELECT 1 FROM ${T}`)).length);
    const n = String(want.length);
    assert.deepEqual((await rows(filtered, `SELECT "Breed Name" FROM ${T} ORDER BY 1`)).map((r) => r[0]), want);
    assert.deepEqual(await rows(filtered, `SELECT count(*) FROM ${T}`), [[n]]);
    assert.deepEqual(await rows(filtered, `SELECT count(*) FROM (SELECT * FROM ${T}) x`), [[n]]);
    assert.deepEqual(await rows(filtered, `WITH b AS (SELECT * FROM ${T}) SELECT count(*) FROM b`), [[n]]);
    assert.deepEqual(await rows(filtered, `SELECT count(*) FROM ${T} a JOIN ${T} b ON a."Breed Name" = b."Breed Name"`), [[n]]);
    assert.deepEqual(await rows(filtered, `SELECT count(*) FROM ${T} WHERE "Lifespan" < 8`), [['0']], 'its own predicate cannot reach past the filter');
    const explained = JSON.stringify(await rows(filtered, `EXPLAIN ANALYZE SELECT count(*) FROM ${T}`));
    assert.match(explained, new RegExp(`\\b${n}\\b`));
    const snapshots = (await rows(free, `SELECT 1 FROM ${T}`)).length;
    assert.ok(snapshots > 0);
    const meta = await (await import('../src/catalog/tables.js')).getTable(c.t.services.db, await findWarehouse(c.t.services, 'sales'), ['lake'], 'bunnies', 'table');
    const first = /"snapshot-id"\s*:\s*(\d+)/.exec(meta.metadata)![1];
    const old = await rows(filtered, `SELECT count(*) FROM ${T} FOR VERSION AS OF ${first} WHERE "Lifespan" < 8`);
    assert.deepEqual(old, [['0']], 'time travel reads through the same filter');
  });

  test('a deny refuses the table naming the policy, in any form of reference', async () => {
    for (const sql of [`SELECT * FROM ${T}`, `SELECT count(*) FROM ${T}`, `EXPLAIN SELECT * FROM ${T}`, `SELECT 1 WHERE EXISTS (SELECT 1 FROM ${T})`, `WITH x AS (SELECT 1 FROM ${T}) SELECT 2`]) {
      assert.equal(await refusal(outsider(sql)), 'policy "no contractors" denies select on iceberg."lake"."bunnies"', sql);
    }
    // DESCRIBE shows names and types, no data
    assert.ok((await rows(outsider, `DESCRIBE ${T}`)).length > 0);
  });

  test('a person no policy names reads everything', async () => {
    const all = await rows(free, `SELECT count(*) FROM ${T} WHERE "Origin Country" = 'USA'`);
    assert.notDeepEqual(all, [['0']]);
  });
});
