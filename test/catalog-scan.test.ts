// Server-side scan planning of the embedded catalog (issue 25 point 5), on a listening server
// against s3rver, every answer checked against the Iceberg REST specification's schemas
// (startCatalogApp): planTableScan, fetchPlanningResult, cancelPlanning and fetchScanTasks, with
// - a table created through the REST API and given 50 files in 50 commits through the catalog's
//   commit path (partitioned by region and day): pruning by partition summaries,
//   partition values and column bounds, residual filters, time travel, incremental scans, plan
//   tasks (catalog.plan_task_files = 20 here), async plans and cancelling;
// - the Iceberg Java API's fixture (position and equality deletes) imported into the warehouse:
//   the planned files and the deletes that apply are those derived independently from the
//   specification's scope rules (test/helpers/iceberg-expect.ts);
// - bad requests (400 naming the problem), other workspaces (403, 404) and forged plan tasks (404).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startCatalogApp, workspace, rolePeople, clientToken, person, personToken, CATALOG_TOKEN, type CatalogApp } from './helpers/catalog.js';
import { call, eventsTable, fileNames, REGIONS, DAYS, type Events } from './helpers/catalog-scan.js';
import { expectedScan } from './helpers/iceberg-expect.js';
import { FIXTURES } from './helpers/iceberg-memory.js';
import { importTable } from '../src/catalog/import.js';
import { systemCaller } from '../src/catalog/access.js';
import { findWarehouse } from '../src/catalog/warehouse.js';
import { getTable, getTableRef } from '../src/catalog/tables.js';
import { parseJson } from '../src/catalog/json.js';
import { runQuery } from '../src/queries/run.js';
import { QueryFailure } from '../src/queries/types.js';
import { createServices } from '../src/services.js';
import { fetchScanTasks, fetchPlanningResult, plansOf, PLAN_TTL_MS, MAX_RUNNING_PER_WORKSPACE } from '../src/catalog/scan-plans.js';

let c: CatalogApp;
let viewer: string;
let events: Events;
const T = 'v1/sales/namespaces/lake/tables';
const plan = (body: unknown, table = 'events', token = viewer) => call(c, 'POST', `${T}/${table}/plan`, token, body);
const tasks = (token: string, table = 'events', who = viewer) => call(c, 'POST', `${T}/${table}/tasks`, who, { 'plan-task': token });
const all = (n: number) => Array.from({ length: n }, (_, i) => i);
const eq = (term: string, value: unknown) => ({ type: 'eq', term, value });

before(async () => {
  c = await startCatalogApp({ SVC_CATALOG__PLAN_TASK_FILES: '20', SVC_ENGINES__PROVISIONER: 'none' });
  await workspace(c.t, 'sales');
  await workspace(c.t, 'other');
  const people = await rolePeople(c.t, 'sales');
  viewer = people.viewer;
  for (const ws of ['sales', 'other']) assert.equal((await call(c, 'POST', `v1/${ws}/namespaces`, CATALOG_TOKEN, { namespace: ['lake'] })).status, 200);
  events = await eventsTable(c, people.editor, 'sales', 'lake', 'events');
  const s = c.t.services;
  await importTable(s, await findWarehouse(s, 'sales'), systemCaller(s), ['lake'], 'bunnies', `${FIXTURES}/java/bunnies`);
});
after(async () => { await c.close(); });

/** Every file scan task of a completed answer, fetching its plan tasks. */
async function everyTask(answer: any): Promise<any[]> {
  const out = [...(answer['file-scan-tasks'] ?? [])];
  for (const t of answer['plan-tasks'] ?? []) {
    const r = await tasks(t);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body['plan-tasks'], undefined);
    out.push(...r.body['file-scan-tasks']);
  }
  return out;
}

test('GET /v1/config advertises the four planning endpoints', async () => {
  const r = await call(c, 'GET', 'v1/config?warehouse=sales', viewer);
  for (const e of ['POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan', 'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}',
    'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}', 'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks']) {
    assert.ok(r.body.endpoints.includes(e), e);
  }
});

describe('filters pushed into planning', () => {
  test('no filter: 50 files in plan tasks of about 20 entries, each file once, residual true', async () => {
    const r = await plan({});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'completed');
    assert.match(r.body['plan-id'], /^[0-9a-f-]{36}$/);
    assert.equal(r.body['file-scan-tasks'], undefined, 'a large plan reads no manifest itself');
    assert.equal(r.body['plan-tasks'].length, 3);
    const got = await everyTask(r.body);
    assert.deepEqual(fileNames(got), [...events.files.keys()].sort());
    for (const t of got) assert.equal(t['residual-filter'], true);
  });

  test('region = eu: only eu\'s 10 files, answered inline; the partition decides, so nothing is left to check', async () => {
    const r = await plan({ filter: eq('region', 'eu') });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body['plan-tasks'], undefined);
    assert.deepEqual(fileNames(r.body['file-scan-tasks']), all(DAYS).map((d) => `eu-${d}.parquet`).sort());
    for (const t of r.body['file-scan-tasks']) {
      assert.deepEqual(t['data-file'].partition, ['eu', `2024-01-${String(1 + Number(t['data-file']['file-path'].match(/-(\d+)\.parquet$/)[1])).padStart(2, '0')}`]);
      assert.equal(t['residual-filter'], true);
      assert.equal(t['data-file'].content, 'data');
      assert.equal(t['data-file']['file-format'], 'parquet');
      assert.equal(t['data-file']['record-count'], 100);
      assert.equal(t['data-file']['lower-bounds'], undefined, 'no statistics unless stats-fields asks');
    }
  });

  test('column bounds prune, and the predicate the partition does not decide is each file\'s residual', async () => {
    // ids 1000-1099 are the file of commit 10 (eu, day 2); 1050 lies in no other file's bounds
    const r = await plan({ filter: { type: 'and', left: eq('region', 'eu'), right: { type: 'gt-eq', term: 'id', value: 1050 } } });
    const names = fileNames(r.body['file-scan-tasks']);
    const want = [...events.files].filter(([, f]) => f.region === 'eu' && f.id + 99 >= 1050).map(([n]) => n).sort();
    assert.deepEqual(names, want);
    assert.ok(names.length < DAYS, 'files whose upper bound on id is below 1050 are pruned');
    for (const t of r.body['file-scan-tasks']) assert.deepEqual(t['residual-filter'], { type: 'gt-eq', term: 'id', value: 1050 });
    // without a partition predicate every manifest may match: plan tasks, whose files the bounds prune
    const one = await plan({ filter: eq('id', 1050) });
    assert.equal(one.body['plan-tasks'].length, 3);
    assert.deepEqual(fileNames(await everyTask(one.body)), ['eu-2.parquet']);
    const none = await plan({ filter: { type: 'lt', term: 'id', value: 0 } });
    assert.deepEqual(await everyTask(none.body), []);
  });

  test('the specification\'s preferred forms (left/right, child, references, literal objects) plan as the older ones', async () => {
    const r = await plan({ filter: { type: 'and',
      left: { type: 'in', child: { type: 'reference', name: 'region' }, values: ['eu', { type: 'literal', value: 'us' }] },
      right: { type: 'lt', left: { type: 'reference', name: 'ts' }, right: { type: 'literal', value: '2024-01-02T00:00:00+00:00' } } } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(fileNames(r.body['file-scan-tasks']), ['eu-0.parquet', 'us-0.parquet']);
  });

  test('a day filter on the timestamp prunes by the day transform; names match case-insensitively on request', async () => {
    const r = await plan({ filter: { type: 'gt-eq', term: 'TS', value: '2024-01-10T00:00:00+00:00' }, 'case-sensitive': false });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(fileNames(r.body['file-scan-tasks']), REGIONS.map((x) => `${x}-9.parquet`).sort());
    const strict = await plan({ filter: { type: 'gt-eq', term: 'TS', value: '2024-01-10T00:00:00+00:00' } });
    assert.equal(strict.status, 400);
    assert.match(strict.body.error.message, /no field named "TS"/);
  });

  test('stats-fields: statistics of the named columns only, bounds as the hex of their binary form', async () => {
    const r = await plan({ filter: eq('id', 1050), 'stats-fields': ['id'] });
    const f = (await everyTask(r.body))[0]['data-file'];
    const le = Buffer.alloc(8);
    le.writeBigInt64LE(1000n);
    assert.deepEqual(f['lower-bounds'], { keys: [1], values: [le.toString('hex').toUpperCase()] });
    assert.deepEqual(f['upper-bounds'].keys, [1]);
    assert.deepEqual(f['value-counts'], { keys: [1], values: [100] });
  });

  test('select names columns of the schema; an unknown one is a 400', async () => {
    assert.equal((await plan({ select: ['id', 'region'], filter: eq('region', 'us') })).status, 200);
    const bad = await plan({ select: ['id', 'nope'] });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /no column named "nope"/);
  });
});

describe('snapshots', () => {
  test('snapshot-id plans the table as it was (time travel)', async () => {
    const r = await plan({ 'snapshot-id': events.snapshots[4], 'use-snapshot-schema': true });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(fileNames(r.body['file-scan-tasks']), REGIONS.map((x) => `${x}-0.parquet`).sort());
  });

  test('start-snapshot-id and end-snapshot-id plan the files appended in between (incremental)', async () => {
    const r = await plan({ 'start-snapshot-id': events.snapshots[4], 'end-snapshot-id': events.snapshots[9] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(fileNames(r.body['file-scan-tasks']), REGIONS.map((x) => `${x}-1.parquet`).sort());
  });

  test('tables other engines wrote: the files and the deletes that apply, as the scope rules give them', async () => {
    const s = c.t.services;
    const row = await getTable(s.db, await findWarehouse(s, 'sales'), ['lake'], 'bunnies', 'table');
    const meta = parseJson(row.metadata) as Record<string, any>;
    const read = async (loc: string) => (await s.s3.get(loc.replace(/^s3:\/\/warehouse\//, '')))!;
    for (const snap of meta.snapshots) {
      const r = await plan({ 'snapshot-id': snap['snapshot-id'] }, 'bunnies');
      assert.equal(r.status, 200, r.text);
      const got = r.body['file-scan-tasks'].map((t: any) => ({
        path: t['data-file']['file-path'],
        deletes: (t['delete-file-references'] ?? []).map((i: number) => r.body['delete-files'][i]['file-path']).sort(),
      })).sort((a: any, b: any) => a.path.localeCompare(b.path));
      const want = (await expectedScan(meta, String(snap['snapshot-id']), read)).map((f) => ({ path: f.path, deletes: f.deletes }));
      assert.deepEqual(got, want, `snapshot ${snap['snapshot-id']}`);
    }
    const now = await plan({}, 'bunnies');
    const kinds = now.body['delete-files'].map((d: any) => d.content).sort();
    assert.deepEqual(kinds, ['equality-deletes', 'position-deletes']);
    assert.deepEqual(now.body['delete-files'].find((d: any) => d.content === 'equality-deletes')['equality-ids'], [1]);
  });
});

describe('bad requests are 400 with the reason', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['an unknown column', { filter: eq('nope', 1) }, /no field named "nope"/],
    ['a value of the wrong type', { filter: eq('id', 'abc') }, /"abc" is not a value of type long/],
    ['an unknown expression', { filter: { type: 'almost', term: 'id', value: 1 } }, /unknown expression type "almost"/],
    ['start without end', { 'start-snapshot-id': 1 }, /end-snapshot-id is required/],
    ['end without start', { 'end-snapshot-id': 1 }, /start-snapshot-id is required/],
    ['a point in time and a range', { 'snapshot-id': 1, 'start-snapshot-id': 1, 'end-snapshot-id': 2 }, /not both/],
    ['a snapshot the table does not have', { 'snapshot-id': 12345 }, /Cannot find snapshot with ID 12345/],
    ['a snapshot id that is no integer', { 'start-snapshot-id': 12345, 'end-snapshot-id': 'x' }, /end-snapshot-id must be a 64-bit integer/],
    ['a start that is no ancestor of the end', { 'start-snapshot-id': 12345, 'end-snapshot-id': 'END' }, /is not an ancestor of snapshot/],
    ['stats of an unknown column', { 'stats-fields': ['nope'] }, /stats-fields: no field named "nope"/],
    ['case-sensitive not a boolean', { 'case-sensitive': 'yes' }, /case-sensitive must be true or false/],
    ['a body that is no object', [1, 2], /invalid body|PlanTableScanRequest/],
  ];
  for (const [what, body, re] of cases) {
    test(what, async () => {
      const r = await plan(parseJson(JSON.stringify(body).replace('"END"', String(events.snapshots[3]))));
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.type, 'BadRequestException');
      assert.match(r.body.error.message, re);
    });
  }
});

describe('plans in memory, plan tasks as tokens', () => {
  test('catalog.plan_wait_ms = 0: submitted, then completed on fetch; cancelling answers cancelled and refuses its plan tasks', async () => {
    const cfg = c.t.services.config.catalog;
    cfg.plan_wait_ms = 0;
    try {
      const r = await plan({});
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(Object.keys(r.body).sort(), ['plan-id', 'status']);
      assert.equal(r.body.status, 'submitted');
      const id = r.body['plan-id'];
      let got: any;
      for (let i = 0; i < 200; i++) {
        got = await call(c, 'GET', `${T}/events/plan/${id}`, viewer);
        assert.equal(got.status, 200, got.text);
        if (got.body.status !== 'submitted') break;
        await new Promise((res) => setTimeout(res, 20));
      }
      assert.equal(got.body.status, 'completed');
      assert.deepEqual(fileNames(await everyTask(got.body)), [...events.files.keys()].sort());
      assert.equal((await call(c, 'DELETE', `${T}/events/plan/${id}`, viewer)).status, 204);
      assert.deepEqual((await call(c, 'GET', `${T}/events/plan/${id}`, viewer)).body, { status: 'cancelled' });
      const refused = await tasks(got.body['plan-tasks'][0]);
      assert.equal(refused.status, 404);
      assert.equal(refused.body.error.type, 'NoSuchPlanTaskException');
      assert.match(refused.body.error.message, /cancelled/);
    } finally {
      cfg.plan_wait_ms = 2000;
    }
  });

  test('a failed async plan answers its error on fetch', async () => {
    const cfg = c.t.services.config.catalog;
    cfg.plan_wait_ms = 0;
    try {
      const r = await plan({ 'snapshot-id': 424242 });
      assert.equal(r.body.status, 'submitted');
      let got: any;
      for (let i = 0; i < 200; i++) {
        got = await call(c, 'GET', `${T}/events/plan/${r.body['plan-id']}`, viewer);
        if (got.status !== 200 || got.body.status !== 'submitted') break;
        await new Promise((res) => setTimeout(res, 20));
      }
      assert.equal(got.status, 400);
      assert.match(got.body.error.message, /Cannot find snapshot with ID 424242/);
    } finally {
      cfg.plan_wait_ms = 2000;
    }
  });

  test('unknown plan ids are 404 NoSuchPlanIdException; finished plans go after their time', async () => {
    for (const m of ['GET', 'DELETE']) {
      const r = await call(c, m, `${T}/events/plan/00000000-0000-4000-8000-000000000000`, viewer);
      assert.equal(r.status, 404);
      assert.equal(r.body.error.type, 'NoSuchPlanIdException');
    }
    const r = await plan({ filter: eq('region', 'eu') });
    const id = r.body['plan-id'];
    assert.equal((await call(c, 'GET', `${T}/events/plan/${id}`, viewer)).body.status, 'completed');
    const before = plansOf(c.t.services).size;
    c.t.clock.advance(PLAN_TTL_MS + 1);
    assert.equal((await call(c, 'GET', `${T}/events/plan/${id}`, viewer)).status, 404);
    assert.ok(plansOf(c.t.services).size < before);
  });

  test('one workspace plans at most its share at once: then 503 with Retry-After, other workspaces unaffected', async () => {
    const plans = plansOf(c.t.services);
    const held = all(MAX_RUNNING_PER_WORKSPACE).map(() => plans.add('ws-busy', 'table-1'));
    assert.throws(() => plans.add('ws-busy', 'table-1'), /scans of this workspace are being planned/);
    plans.cancel(plans.add('ws-calm', 'table-2'));
    const s = c.t.services;
    const sales = (await findWarehouse(s, 'sales')).id;
    const busy = all(MAX_RUNNING_PER_WORKSPACE).map(() => plans.add(sales, 'x'));
    const r = await plan({});
    assert.equal(r.status, 503);
    assert.equal(r.body.error.type, 'ServiceUnavailableException');
    assert.equal(r.headers.get('retry-after'), '1');
    for (const p of [...held, ...busy]) plans.cancel(p);
    assert.equal((await plan({})).status, 200);
  });

  test('another replica (its own memory, the same configuration) serves a plan task, not the plan id', async () => {
    const other = createServices(c.t.config, { clock: c.t.clock });
    try {
      const r = await plan({});
      const s = c.t.services;
      const wh = await findWarehouse(s, 'sales');
      const ref = await getTableRef(s.db, wh, ['lake'], 'events');
      const text = await fetchScanTasks(other, await findWarehouse(other, 'sales'), ref, r.body['plan-tasks'][1]);
      assert.equal(JSON.parse(text)['file-scan-tasks'].length, 20);
      assert.throws(() => fetchPlanningResult(other, wh, ref, r.body['plan-id']), /The plan id does not exist/);
    } finally {
      await other.close();
    }
  });

  test('a plan task is bound to its table and signed: tampered, moved or expired ones are 404', async () => {
    const r = await plan({});
    const token: string = r.body['plan-tasks'][0];
    assert.equal((await tasks(token)).status, 200);
    // the plan is forgotten after its time, its tasks are not: a token is all a replica needs
    c.t.clock.advance(PLAN_TTL_MS + 1);
    assert.equal((await call(c, 'GET', `${T}/events/plan/${r.body['plan-id']}`, viewer)).status, 404);
    assert.equal((await tasks(token)).status, 200);
    const [body, sig] = token.split('.');
    const flipped = `${body.slice(0, -2)}${body.at(-2) === 'A' ? 'B' : 'A'}${body.at(-1)}.${sig}`;
    for (const forged of [flipped, `${body}.${'A'.repeat(sig.length)}`, 'not-a-token', `${body}`]) {
      const bad = await tasks(forged);
      assert.equal(bad.status, 404, forged.slice(0, 40));
      assert.equal(bad.body.error.type, 'NoSuchPlanTaskException');
    }
    const moved = await tasks(token, 'bunnies');
    assert.equal(moved.status, 404);
    assert.match(moved.body.error.message, /another table/);
    assert.equal((await call(c, 'POST', `${T}/events/tasks`, viewer, {})).status, 400);
    c.t.clock.advance(2 * 60 * 60_000);
    // (the viewer's JWT has expired too: the administration token does not)
    const late = await tasks(token, 'events', CATALOG_TOKEN);
    assert.equal(late.status, 404);
    assert.match(late.body.error.message, /expired/);
  });
});

describe('access as for loading the table', () => {
  test('another workspace never sees a plan: 403 without a role, 404 for its own table of the same name', async () => {
    const outsider = await clientToken(c.t, 'other');
    assert.equal((await plan({}, 'events', outsider)).status, 403);
    const made = await call(c, 'POST', 'v1/other/namespaces/lake/tables', outsider, { name: 'events', schema: { type: 'struct', fields: [{ id: 1, name: 'id', type: 'long', required: true }] } });
    assert.equal(made.status, 200, made.text);
    const mine = await plan({}, 'events', CATALOG_TOKEN);
    const O = 'v1/other/namespaces/lake/tables/events';
    const fetched = await call(c, 'GET', `${O}/plan/${mine.body['plan-id']}`, outsider);
    assert.equal(fetched.status, 404);
    assert.equal(fetched.body.error.type, 'NoSuchPlanIdException');
    assert.equal((await call(c, 'DELETE', `${O}/plan/${mine.body['plan-id']}`, outsider)).status, 404);
    const stolen = await call(c, 'POST', `${O}/tasks`, outsider, { 'plan-task': mine.body['plan-tasks'][0] });
    assert.equal(stolen.status, 404);
    assert.equal(stolen.body.error.type, 'NoSuchPlanTaskException');
    const empty = await call(c, 'POST', `${O}/plan`, outsider, {});
    assert.deepEqual([empty.body.status, empty.body['file-scan-tasks']], ['completed', []], 'a table without snapshots plans nothing');
    assert.equal((await call(c, 'POST', `${O.replace('events', 'nope')}/plan`, outsider, {})).status, 404);
    assert.equal((await plan({}, 'nope', CATALOG_TOKEN)).body.error.type, 'NoSuchTableException');
  });

  test('a table naming another workspace\'s manifest list reads nothing of it, cached or not', async () => {
    const s = c.t.services;
    const sales = parseJson((await getTable(s.db, await findWarehouse(s, 'sales'), ['lake'], 'events', 'table')).metadata) as Record<string, any>;
    const snap = sales.snapshots.at(-1);
    const warm = await plan({}, 'events', CATALOG_TOKEN);
    for (const t of warm.body['plan-tasks']) assert.equal((await tasks(t, 'events', CATALOG_TOKEN)).status, 200, 'sales\' manifests are in the replica\'s cache');
    const O = 'v1/other/namespaces/lake/tables/events';
    const id = 7_000_000_000_000_000_001n;
    const commit = await call(c, 'POST', O, CATALOG_TOKEN, { requirements: [], updates: [
      { action: 'add-snapshot', snapshot: { 'snapshot-id': id, 'sequence-number': 1, 'timestamp-ms': 1_700_000_000_000, 'manifest-list': snap['manifest-list'], summary: { operation: 'append' }, 'schema-id': 0 } },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ] });
    assert.equal(commit.status, 200, commit.text);
    const r = await call(c, 'POST', `${O}/plan`, CATALOG_TOKEN, {});
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /outside the warehouse s3:\/\/warehouse\/lake\/other\//);
    assert.doesNotMatch(r.text, /\/data\//, 'no file of the other workspace is named');
    // the embedded engine plans through the same cache, and decides each location first too
    const otherId = (await findWarehouse(s, 'other')).id;
    await assert.rejects(runQuery(s.queryEngines, s.config, { workspace: otherId, engine: 'embedded', sql: 'SELECT count(*) FROM iceberg.lake.events', principal: { name: 'x@example.test', role: 'ws_viewer' } }),
      (err: Error) => { assert.ok(err instanceof QueryFailure, String(err)); assert.match(err.message, /Forbidden/); assert.doesNotMatch(err.message, /\/data\//); return true; });
  });

  test('a person without a role in the workspace gets 403 naming the rule', async () => {
    const p = await person(c.t, 'nobody@example.test', {});
    const r = await plan({}, 'events', await personToken(c.t, p, 'nobody@example.test'));
    assert.equal(r.status, 403);
    assert.match(r.body.error.message, /no role in workspace sales/);
  });
});
