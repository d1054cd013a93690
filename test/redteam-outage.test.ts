// The embedded engine while the object store does not answer (red team review): a statement on
// catalog tables is answered `busy` (503 through the Data API and the apps gateway, as every
// unreachable dependency is) with a message that names no address; it was a `failed` query (a 400
// or 502) quoting `connect ECONNREFUSED <host>:<port>` of the store. A REST scan plan that runs on
// in the background is answered the same 503 with Retry-After when the store fails it (it was kept
// as a 500 internal error).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCatalogApp, workspace, rolePeople, catalogRequest, type CatalogApp } from './helpers/catalog.js';
import { runQuery } from '../src/queries/run.js';
import { QueryFailure, type QueryRole } from '../src/queries/types.js';

let c: CatalogApp;
let wsId: string;
let token: string;
let stopped = false;
const stopStore = async () => { if (!stopped) { stopped = true; await c.s3.stop(); } };
const as = (name: string, role: QueryRole) => (sql: string) => runQuery(c.t.services.queryEngines, c.t.services.config, {
  workspace: wsId, engine: 'embedded', sql, principal: { name, role, groups: [] },
});
const editor = as('ed@example.test', 'ws_editor');
const viewer = as('vera@example.test', 'ws_viewer');

before(async () => {
  // every REST plan is answered `submitted` and runs on in the background
  c = await startCatalogApp({ SVC_ENGINES__PROVISIONER: 'none', SVC_CATALOG__PLAN_WAIT_MS: '0' });
  wsId = await workspace(c.t, 'sales');
  token = (await rolePeople(c.t, 'sales')).editor;
  assert.equal((await catalogRequest(c, 'POST', 'v1/sales/namespaces', token, { namespace: ['lake'] })).status, 200);
  await editor("CREATE TABLE iceberg.lake.t AS SELECT range AS k, 'v' || range AS v FROM range(5)");
});
// the store is stopped by the test: only the app is left to close
after(async () => { await c.t.close(); });

test('reads and writes of catalog tables while the object store is down are busy, naming no address', async () => {
  await stopStore();
  for (const [run, sql] of [[viewer, 'SELECT * FROM iceberg.lake.t'], [editor, "INSERT INTO iceberg.lake.t VALUES (7, 'x')"], [editor, 'CREATE TABLE iceberg.lake.t2 (a INTEGER)'], [editor, 'DELETE FROM iceberg.lake.t WHERE k = 1']] as const) {
    try {
      await run(sql);
      assert.fail(`${sql} ran`);
    } catch (err) {
      assert.ok(err instanceof QueryFailure, String(err));
      assert.equal(err.kind, 'busy', `${sql}: ${err.message}`);
      assert.match(err.message, /cannot be reached; retry shortly/);
      assert.doesNotMatch(err.message, /127\.0\.0\.1|ECONNREFUSED/);
    }
  }
  // the workspace's own tables do not need the store
  assert.deepEqual((await viewer('SELECT 1')).rows, [[1]]);
});

test('a REST scan plan the store fails in the background answers 503 with Retry-After, not 500', async () => {
  await stopStore();
  const planned = await catalogRequest(c, 'POST', 'v1/sales/namespaces/lake/tables/t/plan', token, {});
  assert.equal(planned.status, 200, planned.text);
  assert.equal(planned.body.status, 'submitted');
  let res: Response;
  for (;;) {
    res = await fetch(new URL(`v1/sales/namespaces/lake/tables/t/plan/${planned.body['plan-id']}`, c.base), { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) break;
    assert.equal((await res.json()).status, 'submitted');
    await new Promise((r) => setTimeout(r, 20));
  }
  const body = await res.json();
  assert.equal(res.status, 503, JSON.stringify(body));
  assert.equal(body.error.type, 'ServiceUnavailableException');
  assert.ok(Number(res.headers.get('retry-after')) > 0);
  assert.doesNotMatch(JSON.stringify(body), /127\.0\.0\.1|ECONNREFUSED/);
});
