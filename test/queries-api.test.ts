// The query API on the real embedded engine, PostgreSQL, Redis and an S3 server (s3rver): rows
// inline, truncation at engine.max_rows, the timeout cancelling on the engine, cancel, the full
// result in the object store read back as Parquet (and CSV and JSON downloads), history per
// person, the job path, result retention on a moved clock, the sweep, and refusals.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { ADMIN, signInAdmin, waitFor, type Admin } from './helpers/workflow.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { queryService } from '../src/queries/index.js';
import { startQueryWorker } from '../src/queries/worker.js';
import { startTrinoProtocolServer } from './helpers/trino-protocol-server.js';
import { selfSignedCert } from './helpers/tls.js';
import { engineLookup } from '../src/queries/lookup.js';
import pino from 'pino';

const Q = '/api/workspaces/default/queries';
const LONG = 'SELECT count(*) FROM range(100000000000) a';

async function readParquet(bytes: Uint8Array): Promise<{ columns: string[]; rows: unknown[][] }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-pq-'));
  try {
    const file = join(dir, 'r.parquet');
    await writeFile(file, bytes);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    const r = await c.runAndReadAll(`SELECT * FROM read_parquet('${file}')`);
    const out = { columns: r.columnNames(), rows: r.getRowsJson() as unknown[][] };
    c.closeSync();
    db.closeSync();
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function signIn(t: TestApp, email: string, role: 'ws_viewer' | 'ws_editor'): Promise<Browser> {
  const u = await createLocalUser(t.services.db, { email, password: 'password-of-' + email });
  const ws = await t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
  await grantWorkspaceRoleToUser(t.services.db, ws.id, u.id, role, null, t.clock.now());
  const b = new Browser(t, '198.51.100.' + (email.length % 200));
  const res = await b.login(email, 'password-of-' + email);
  assert.equal(res.statusCode, 200, res.body);
  return b;
}

describe('query API', () => {
  let t: TestApp;
  let admin: Admin;
  before(async () => {
    t = await startTestAppWithS3({
      SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINE__MAX_ROWS: '100', SVC_ENGINE__PREVIEW_ROWS: '5', SVC_ENGINE__QUERY_TIMEOUT_SECS: '1',
    });
    admin = await signInAdmin(t);
  });
  after(async () => { await t.close(); });

  const ended = (id: string, b = admin.browser) => waitFor(async () => {
    const r = (await b.get(`${Q}/${id}`)).json();
    return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(r.state) ? r : null;
  }, `query ${id} to end`);

  test('a small query answers 200 with its rows inline; downloads in every format', async () => {
    const res = await admin.browser.post(Q, { sql: "SELECT 42 AS answer, 'forty-two' AS words" });
    assert.equal(res.statusCode, 200, res.body);
    const q = res.json();
    assert.equal(q.state, 'SUCCEEDED');
    assert.equal(q.engine, 'embedded');
    assert.deepEqual(q.columns, [{ name: 'answer', type: 'INTEGER' }, { name: 'words', type: 'VARCHAR' }]);
    assert.deepEqual(q.preview, [[42, 'forty-two']]);
    assert.equal(q.rows, 1);
    assert.equal(q.truncated, false);
    assert.equal(q.result_available, true);
    const csv = await admin.browser.get(`${Q}/${q.id}/results?format=csv`);
    assert.equal(csv.statusCode, 200);
    assert.match(csv.headers['content-type'] as string, /^text\/csv/);
    assert.equal(csv.body, 'answer,words\n42,forty-two\n');
    const json = await admin.browser.get(`${Q}/${q.id}/results?format=json`);
    assert.deepEqual(JSON.parse(json.body), [{ answer: 42, words: 'forty-two' }]);
    const pq = await admin.browser.get(`${Q}/${q.id}/results`);
    assert.equal(pq.headers['content-disposition'], `attachment; filename="query-${q.id}.parquet"`);
    assert.deepEqual(await readParquet(pq.rawPayload), { columns: ['answer', 'words'], rows: [[42, 'forty-two']] });
  });

  test('a JSON download keeps 64-bit integers and decimals exact, as strings, as the API answers them', async () => {
    const q = (await admin.browser.post(Q, { sql: 'SELECT 9007199254740993::BIGINT AS big, 12345678901234567.89::DECIMAL(19,2) AS dec, [9007199254740993] AS list, 7 AS small' })).json();
    assert.equal(q.state, 'SUCCEEDED', JSON.stringify(q));
    assert.deepEqual(q.preview, [['9007199254740993', '12345678901234567.89', ['9007199254740993'], 7]]);
    const json = await admin.browser.get(`${Q}/${q.id}/results?format=json`);
    assert.equal(json.statusCode, 200);
    assert.deepEqual(JSON.parse(json.body), [{ big: '9007199254740993', dec: '12345678901234567.89', list: ['9007199254740993'], small: 7 }]);
  });

  test('parameters bind positionally and by name', async () => {
    const pos = (await admin.browser.post(Q, { sql: 'SELECT $1::INTEGER * 2 AS doubled', params: [21] })).json();
    assert.deepEqual(pos.preview, [[42]]);
    const named = (await admin.browser.post(Q, { sql: 'SELECT upper($name) AS shout', params: { name: 'ada' } })).json();
    assert.deepEqual(named.preview, [['ADA']]);
  });

  test('a large result is truncated at engine.max_rows, previewed, and stored whole as Parquet in the object store', async () => {
    const q = (await admin.browser.post(Q, { sql: 'SELECT i, i * 2 AS twice FROM range(1000) t(i) ORDER BY i' })).json();
    assert.equal(q.state, 'SUCCEEDED');
    assert.equal(q.rows, 100);
    assert.equal(q.truncated, true);
    assert.deepEqual(q.preview, [['0', '0'], ['1', '2'], ['2', '4'], ['3', '6'], ['4', '8']]);
    const key = `query-results/${admin.workspaceId}/${q.id}.parquet`;
    const stored = await t.services.s3.get(key);
    assert.ok(stored, `the result is in the bucket under ${key}`);
    const back = await readParquet(stored);
    assert.deepEqual(back.columns, ['i', 'twice']);
    assert.equal(back.rows.length, 100);
    assert.deepEqual(back.rows[99], ['99', '198']);
    const csv = await admin.browser.get(`${Q}/${q.id}/results?format=csv`);
    assert.equal(csv.body.split('\n').filter(Boolean).length, 101);
  });

  test('a query over engine.query_timeout_secs answers 202, then ends FAILED, cancelled on the engine', async () => {
    const res = await admin.browser.post(Q, { sql: LONG, wait_ms: 50 });
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().state, 'RUNNING');
    const q = await ended(res.json().id);
    assert.equal(q.state, 'FAILED');
    assert.equal(q.error, 'query exceeded its timeout of 1 s (engine.query_timeout_secs) and was cancelled');
    assert.equal(q.result_available, false);
    const none = await admin.browser.get(`${Q}/${q.id}/results`);
    assert.equal(none.statusCode, 409);
    assert.deepEqual(none.json(), { error: 'conflict', message: 'query has no result: it ended FAILED' });
  });

  test('cancel stops a running query; cancelling an ended query is a conflict', async () => {
    const res = await admin.browser.post(Q, { sql: LONG, wait_ms: 50 });
    assert.equal(res.statusCode, 202);
    const c = await admin.browser.post(`${Q}/${res.json().id}/cancel`);
    assert.equal(c.statusCode, 202, c.body);
    assert.equal(c.json().cancel_requested, true);
    const q = await ended(res.json().id);
    assert.equal(q.state, 'CANCELLED');
    assert.equal(q.error, 'query was cancelled');
    const again = await admin.browser.post(`${Q}/${q.id}/cancel`);
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().message, 'query has already ended: CANCELLED');
  });

  test('wait_ms 0 queues the query as a job: cancelled at once while queued, run by the worker otherwise', async () => {
    const queued = await admin.browser.post(Q, { sql: 'SELECT 1 AS one', wait_ms: 0 });
    assert.equal(queued.statusCode, 202);
    assert.equal(queued.json().state, 'QUEUED');
    const c = await admin.browser.post(`${Q}/${queued.json().id}/cancel`);
    assert.equal(c.json().state, 'CANCELLED');
    const worker = await startQueryWorker(t.services);
    try {
      const res = await admin.browser.post(Q, { sql: 'SELECT 7 AS seven', wait_ms: 0 });
      const q = await ended(res.json().id);
      assert.equal(q.state, 'SUCCEEDED');
      assert.deepEqual(q.preview, [[7]]);
    } finally {
      await worker.close();
    }
  });

  test('a workspace\'s running trino engine answers through the job worker, as the person who asked', async () => {
    const trino = await startTrinoProtocolServer();
    const worker = await startQueryWorker(t.services);
    try {
      const engine = (name: string, state: string, endpoint: string | null) => t.services.db.insertInto('engines').values({
        workspace_id: admin.workspaceId, name, kind: 'trino', image: 'docker.io/trinodb/trino:479', resources: JSON.stringify({ cpu: '2', memory: '4Gi' }),
        provisioner: 'local_container', state, desired: state === 'running' ? 'running' : 'stopped', config_hash: 'h', idp_issuer: 'http://issuer', endpoint_url: endpoint,
      } as never).execute();
      await engine('trino-prod', 'running', trino.url);
      await engine('trino-off', 'stopped', null);
      const res = await admin.browser.post(Q, { engine: 'trino-prod', sql: 'SELECT n FROM rows(3)', wait_ms: 10_000 });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().state, 'SUCCEEDED');
      assert.deepEqual(res.json().preview, [[0], [1], [2]]);
      assert.deepEqual(res.json().columns, [{ name: 'n', type: 'bigint' }]);
      assert.equal(trino.requests[0]!.headers['x-trino-user'], ADMIN.email);
      const off = await admin.browser.post(Q, { engine: 'trino-off', sql: 'SELECT 1', wait_ms: 10_000 });
      assert.equal(off.json().state, 'FAILED');
      assert.equal(off.json().error, 'engine trino-off is stopped, not running');
      // No driver answers an olap engine here (docs/engines.md "What runs SQL on an olap engine").
      await t.services.db.insertInto('engines').values({
        workspace_id: admin.workspaceId, name: 'olap-prod', kind: 'olap', image: 'docker.io/starrocks/allin1-ubuntu:3.4.5', resources: JSON.stringify({ cpu: '2', memory: '4Gi' }),
        provisioner: 'local_container', state: 'running', desired: 'running', config_hash: 'h', idp_issuer: 'http://issuer', endpoint_url: trino.url,
      } as never).execute();
      const olap = await admin.browser.post(Q, { engine: 'olap-prod', sql: 'SELECT 1', wait_ms: 10_000 });
      assert.equal(olap.json().state, 'FAILED');
      assert.equal(olap.json().error, 'engine olap-prod is of kind olap: queries run on trino engines and the embedded one');
      assert.equal(trino.requests.filter((r) => r.body === 'SELECT 1').length, 0, 'nothing reached the engine');

      // An engine on HTTPS with a self-signed certificate: verified unless SVC_ENGINE_TLS_INSECURE.
      const tls = await startTrinoProtocolServer({ tls: selfSignedCert() });
      try {
        await engine('trino-tls', 'running', tls.url);
        const verified = await admin.browser.post(Q, { engine: 'trino-tls', sql: 'SELECT n FROM rows(1)', wait_ms: 10_000 });
        assert.equal(verified.json().state, 'FAILED');
        assert.equal(verified.json().error, 'the engine is unreachable (DEPTH_ZERO_SELF_SIGNED_CERT)');
        for (const [value, answers] of [['yes', true], ['1', true], ['true', true], ['no', false]] as const) {
          const driver = await engineLookup(t.services.db, pino({ level: 'silent' }), { SVC_ENGINE_TLS_INSECURE: value })(admin.workspaceId, 'trino-tls');
          const run = driver!.run({ workspaceId: admin.workspaceId, sql: 'SELECT n FROM rows(2)', params: [], role: 'ws_admin', user: ADMIN.email, maxRows: 10, timeoutMs: 10_000 });
          if (answers) assert.deepEqual((await run).rows, [[0], [1]], value);
          else await assert.rejects(run, { message: 'the engine is unreachable (DEPTH_ZERO_SELF_SIGNED_CERT)' });
        }
      } finally {
        await tls.stop();
      }
    } finally {
      await worker.close();
      await trino.stop();
    }
  });

  test('history: people see their own queries, ws_admin sees everyone\'s; viewers only read', async () => {
    const vera = await signIn(t, 'vera@example.test', 'ws_viewer');
    const mine = (await vera.post(Q, { sql: 'SELECT 1 AS v' })).json();
    t.clock.advance(1000); // history is newest first
    const write = await vera.post(Q, { sql: 'CREATE TABLE notes (t VARCHAR)' });
    assert.equal(write.statusCode, 200);
    assert.equal(write.json().state, 'FAILED');
    assert.equal(write.json().error, 'ws_viewer may only run SELECT and EXPLAIN on the embedded engine');
    const list = (await vera.get(Q)).json().queries as Array<{ id: string; sql: string }>;
    assert.deepEqual(list.map((q) => q.sql), ['CREATE TABLE notes (t VARCHAR)', 'SELECT 1 AS v']);
    const all = (await admin.browser.get(`${Q}?limit=200`)).json().queries as Array<{ id: string }>;
    assert.ok(all.some((q) => q.id === mine.id), 'ws_admin sees the viewer\'s query');
    assert.ok(all.length > list.length);
    const adminQuery = all.find((q) => q.id !== mine.id && q.id !== write.json().id)!;
    const hidden = await vera.get(`${Q}/${adminQuery.id}`);
    assert.equal(hidden.statusCode, 404);
    assert.equal((await vera.get(`${Q}/${adminQuery.id}/results`)).statusCode, 404);
    assert.equal((await vera.post(`${Q}/${adminQuery.id}/cancel`)).statusCode, 404);
    const ed = await signIn(t, 'eddie@example.test', 'ws_editor');
    assert.equal((await ed.post(Q, { sql: 'CREATE TABLE notes (t VARCHAR)' })).json().state, 'SUCCEEDED');
    assert.equal((await ed.post(Q, { sql: "INSERT INTO notes VALUES ('hi')" })).json().state, 'SUCCEEDED');
    assert.deepEqual((await vera.post(Q, { sql: 'SELECT t FROM notes' })).json().preview, [['hi']]);
  });

  test('bad input is a 400 naming the field; an unknown engine is 404; nothing is recorded', async () => {
    const before = (await admin.browser.get(`${Q}?limit=200`)).json().queries.length;
    const cases: Array<[unknown, number, RegExp]> = [
      [{ sql: '' }, 400, /sql/],
      [{ sql: 'SELECT 1', params: Array.from({ length: 101 }, () => 1) }, 400, /params/],
      [{ sql: 'SELECT 1', params: { 'bad name': 1 } }, 400, /params/],
      [{ sql: 'SELECT 1', wait_ms: 600_000 }, 400, /wait_ms/],
      [{ sql: 'SELECT 1', surprise: true }, 400, /surprise|Unrecognized/],
      [{ sql: 'SELECT 1', engine: 'no-such-engine' }, 404, /^engine does not exist: no-such-engine$/],
    ];
    for (const [body, status, message] of cases) {
      const r = await admin.browser.post(Q, body);
      assert.equal(r.statusCode, status, JSON.stringify(body));
      assert.match(r.json().message, message, JSON.stringify(body));
    }
    assert.equal((await admin.browser.get(`${Q}?limit=200`)).json().queries.length, before);
    assert.equal((await admin.browser.get(`${Q}/00000000-0000-4000-8000-000000000000`)).statusCode, 404);
  });

  test('the sweep fails a query whose replica stopped', async () => {
    const id = '00000000-0000-4000-8000-0000000000aa';
    const old = new Date(t.clock.now().getTime() - 10 * 60_000);
    await t.services.db.insertInto('queries').values({
      id, workspace_id: admin.workspaceId, engine: 'embedded', sql: 'SELECT 1', params: '[]', principal: admin.userId, principal_role: 'ws_admin',
      state: 'RUNNING', max_rows: 100, timeout_ms: 1000, created_at: old, started_at: old,
    }).execute();
    assert.equal(await queryService(t.services).sweep(), 1);
    const q = (await admin.browser.get(`${Q}/${id}`)).json();
    assert.equal(q.state, 'FAILED');
    assert.equal(q.error, 'the replica running this query stopped before it ended');
  });

  test('results expire after engine.results_retention_days: the object is deleted and the download is gone', async () => {
    const big = (await admin.browser.post(Q, { sql: 'SELECT * FROM range(50)' })).json();
    const small = (await admin.browser.post(Q, { sql: 'SELECT 1 AS one' })).json();
    const key = `query-results/${admin.workspaceId}/${big.id}.parquet`;
    assert.ok(await t.services.s3.head(key));
    t.clock.advance(6 * 86_400_000);
    await queryService(t.services).pruneResults();
    assert.ok(await t.services.s3.head(key), 'kept within 7 days');
    t.clock.advance(2 * 86_400_000);
    const { expired } = await queryService(t.services).pruneResults();
    assert.ok(expired >= 2);
    assert.equal(await t.services.s3.head(key), null);
    // eight days on, the session has expired too: sign in again
    const b = new Browser(t, '198.51.100.201');
    assert.equal((await b.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    for (const id of [big.id, small.id]) {
      const r = await b.get(`${Q}/${id}/results`);
      assert.equal(r.statusCode, 410);
      assert.deepEqual(r.json(), { error: 'gone', message: 'the result has expired (engine.results_retention_days = 7)' });
      const q = (await b.get(`${Q}/${id}`)).json();
      assert.equal(q.result_available, false);
      assert.equal(q.preview, null);
      assert.equal(q.state, 'SUCCEEDED', 'the history keeps the query');
    }
  });
});

describe('query API with the embedded engine off', () => {
  test('a query for it is refused as disabled (409) with the reason; nothing is recorded', async () => {
    const t = await startTestAppWithS3({ SVC_ENGINES__EMBEDDED: 'off' });
    try {
      const admin = await signInAdmin(t);
      const r = await admin.browser.post(Q, { sql: 'SELECT 1' });
      assert.equal(r.statusCode, 409);
      assert.deepEqual(r.json(), { error: 'disabled', message: 'the embedded engine is disabled (engines.embedded = off)' });
      assert.deepEqual((await admin.browser.get(Q)).json(), { queries: [] });
    } finally {
      await t.close();
    }
  });
});
