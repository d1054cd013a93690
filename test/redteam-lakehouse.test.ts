// An attacker's review of the embedded engine's newest paths (catalog writes from SQL, catalog
// views, the statement rules around them): each test is a way in that worked, now closed.
// - DuckDB's own views (`pg_settings`, `duckdb_databases`, ...) read the functions the rules refuse;
// - a CREATE TABLE column list or an ALTER runs as written: its DEFAULT, generated column or USING
//   called the refused functions (the private folder's path, settings);
// - text the lexer read differently from DuckDB (a comment ended by \r, a dollar tag with a
//   non-ASCII letter or of any length, U+2028 inside a name) hid what DuckDB then ran;
// - a catalog view naming one of its CTEs outside that CTE's scope read the reader's own database,
//   and views naming views several times each expanded exponentially, past any timeout;
// - a policy naming the catalog by the warehouse (the workspace slug), which the REST catalog
//   applies, was ignored by the embedded engine;
// - an error of a rewritten statement, and EXPLAIN ANALYZE of one, quoted svc's SQL (cache paths);
// - a CREATE TABLE ... AS by an editor that failed left its table (the undo needed ws_admin);
// - identity partition values of any size were read into the process and inlined into SQL.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startCatalogApp, workspace, rolePeople, catalogRequest, type CatalogApp } from './helpers/catalog.js';
import { createPolicy } from '../src/policy/policies.js';
import { CLI_ACTOR } from '../src/access/actor.js';
import { runQuery } from '../src/queries/run.js';
import { QueryFailure, type QueryRole } from '../src/queries/types.js';
import { tokenize, LexError } from '../src/queries/sql/lexer.js';

let c: CatalogApp;
let wsId: string;
let token: string;
const as = (name: string, role: QueryRole) => (sql: string) => runQuery(c.t.services.queryEngines, c.t.services.config, {
  workspace: wsId, engine: 'embedded', sql, principal: { name, role, groups: [] },
});
const editor = as('ed@example.test', 'ws_editor');
const viewer = as('vera@example.test', 'ws_viewer');
const failure = async (p: Promise<unknown>, kind: 'refused' | 'failed') => {
  try { await p; } catch (err) { assert.ok(err instanceof QueryFailure, String(err)); assert.equal(err.kind, kind, err.message); return err.message; }
  assert.fail('the statement ran');
};

async function view(name: string, sql: string, fields: Array<[string, string]>) {
  const res = await catalogRequest(c, 'POST', 'v1/sales/namespaces/lake/views', token, {
    name, schema: { type: 'struct', 'schema-id': 0, fields: fields.map(([n, t], i) => ({ id: i + 1, name: n, type: t, required: false })) },
    'view-version': { 'version-id': 1, 'timestamp-ms': 1780000000000, 'schema-id': 0, summary: { 'engine-name': 'trino' }, representations: [{ type: 'sql', sql, dialect: 'trino' }], 'default-namespace': ['lake'] },
    properties: {},
  });
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  c = await startCatalogApp({ SVC_ENGINES__PROVISIONER: 'none', SVC_POLICY_SERVICE__ENABLED: 'true', SVC_POLICY_SERVICE__AUTH_TOKEN: 'policy-token-abcdefghijklmnop' });
  wsId = await workspace(c.t, 'sales');
  const people = await rolePeople(c.t, 'sales');
  token = people.editor;
  assert.equal((await catalogRequest(c, 'POST', 'v1/sales/namespaces', token, { namespace: ['lake'] })).status, 200);
  await editor("CREATE TABLE iceberg.lake.t AS SELECT range AS k, 'v' || range AS v FROM range(5)");
});
after(async () => { await c.close(); });

describe('the sandbox: settings and paths stay out of reach', () => {
  test('DuckDB\'s views over refused functions are refused by name', async () => {
    for (const sql of ["SELECT setting FROM pg_catalog.pg_settings WHERE name = 'temp_directory'", 'SELECT * FROM pg_settings',
      'SELECT * FROM duckdb_databases', 'SELECT * FROM main.duckdb_databases', 'SELECT * FROM pragma_database_list', 'SELECT * FROM duckdb_logs',
      'SELECT k FROM iceberg.lake.t WHERE v IN (SELECT setting FROM pg_settings)']) {
      assert.match(await failure(viewer(sql), 'refused'), /is not allowed on the embedded engine/, sql);
    }
    assert.ok((await viewer('SELECT count(*) FROM duckdb_tables')).rows.length === 1, 'the catalog views that show no server stay');
  });

  test('a column list\'s DEFAULT, CHECK and generated columns, and ALTER\'s DEFAULT and USING, are held to the function rules', async () => {
    for (const sql of [
      "CREATE TABLE d1 (a INTEGER, b VARCHAR DEFAULT current_setting('temp_directory'))",
      "CREATE TABLE d2 (a INTEGER, b VARCHAR AS (CAST(\"Current_Setting\"('allowed_directories') AS VARCHAR)))",
      'CREATE TABLE d3 (a INTEGER CHECK (sleep_ms(100000) IS NULL))',
      "ALTER TABLE own ALTER COLUMN a SET DATA TYPE VARCHAR USING current_setting('temp_directory')",
      "ALTER TABLE own ALTER COLUMN a SET DEFAULT current_query()",
    ]) {
      if (sql.startsWith('ALTER')) await editor('CREATE TABLE IF NOT EXISTS own (a INTEGER)');
      assert.match(await failure(editor(sql), 'refused'), /function \w+ is not allowed on the embedded engine/, sql);
    }
    // what DEFAULT is for still works
    await editor('CREATE TABLE d4 (a INTEGER, made DATE DEFAULT current_date)');
    await editor('INSERT INTO d4 (a) VALUES (1)');
    assert.deepEqual((await viewer('SELECT a, made IS NOT NULL FROM d4')).rows, [[1, true]]);
  });

  test('text the lexer and DuckDB would read differently is refused, not run as written', async () => {
    // U+2028 is white space to JavaScript, a letter of a name to DuckDB: the dollar quote that
    // followed hid the DEFAULT from the rules
    assert.match(await failure(editor("CREATE TABLE h1 (x\u2028$a$ VARCHAR DEFAULT current_setting('temp_directory'))--$a$)"), 'refused'), /Unicode space/);
    // a comment ends at \r for DuckDB
    assert.match(await failure(editor("CREATE TABLE h2 (a INTEGER -- \r, b VARCHAR DEFAULT current_setting('temp_directory')\n)"), 'refused'), /current_setting/);
    // a dollar tag with a non-ASCII letter is a string for DuckDB
    assert.match(await failure(editor("CREATE TABLE h3 (a VARCHAR DEFAULT $é$ ' $é$ || current_setting('temp_directory') || ' ')"), 'refused'), /current_setting/);
    for (const name of ['h1', 'h2', 'h3']) assert.match(await failure(viewer(`SELECT * FROM ${name}`), 'failed'), /does not exist/);
  });

  test('the lexer reads tags, comments and spaces as DuckDB\'s scanner does', () => {
    const values = (sql: string) => tokenize(sql).map((t) => t.value);
    assert.deepEqual(values("SELECT $é$ ' $é$, 1"), ['select', " ' ", ',', '1']);
    const tag = 'a'.repeat(70);
    assert.deepEqual(values(`SELECT $${tag}$ ; $${tag}$`), ['select', ' ; ']);
    assert.deepEqual(values('SELECT 1 -- c\r, 2'), ['select', '1', ',', '2']);
    for (const sql of ['SELECT 1 AS x\u2028y', 'SELECT\u00a01', 'SELECT 1 AS a\u00a0b', 'SELECT $a\u00a0$x$a\u00a0$']) assert.throws(() => tokenize(sql), LexError, JSON.stringify(sql));
    assert.deepEqual(values("SELECT 'a\u00a0b'"), ['select', 'a\u00a0b'], 'inside quotes, any character');
  });
});

describe('catalog views resolve every name in the catalog', () => {
  test('a CTE\'s name outside its scope is a catalog name, not a table of the reader\'s own database', async () => {
    await editor("CREATE TABLE own_secret AS SELECT 'own-db-secret' AS s");
    await view('cte_escape', 'SELECT * FROM (WITH own_secret AS (SELECT 1 AS x) SELECT x FROM own_secret) AS q, own_secret', [['x', 'int'], ['s', 'string']]);
    assert.match(await failure(viewer('SELECT * FROM iceberg.lake.cte_escape'), 'failed'), /iceberg\."lake"\."own_secret" does not exist/);
    await view('cte_internal', 'SELECT * FROM (WITH duckdb_databases AS (SELECT 1 AS x) SELECT x FROM duckdb_databases) AS q, duckdb_databases', [['x', 'int']]);
    await failure(viewer('SELECT * FROM iceberg.lake.cte_internal'), 'refused');
    // CTEs in scope still read as CTEs: in the query, in a later CTE, in a recursive one
    await view('ctes', 'WITH RECURSIVE a AS (SELECT k FROM t), b AS (SELECT k FROM a WHERE k < 3), r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n < 2) SELECT (SELECT count(*) FROM b) AS nb, (SELECT max(n) FROM r) AS mr', [['nb', 'long'], ['mr', 'int']]);
    assert.deepEqual((await viewer('SELECT * FROM iceberg.lake.ctes')).rows, [['3', 2]]);
  });

  test('views reading views several times each are bounded in the references they expand to', async () => {
    // each level names the next four times: 4^5 reads of the last one, refused once past 1,000
    await view('fan6', 'SELECT 1 AS x', [['x', 'int']]);
    for (let i = 5; i >= 1; i--) await view(`fan${i}`, Array(4).fill(`SELECT x FROM fan${i + 1}`).join(' UNION ALL '), [['x', 'int']]);
    assert.deepEqual((await viewer('SELECT count(*) FROM iceberg.lake.fan3')).rows, [['64']], 'a few levels still read');
    assert.match(await failure(viewer('SELECT count(*) FROM iceberg.lake.fan1'), 'refused'), /more than 1000 times, counting what its views read/);
  });
});

describe('policies naming the catalog by its warehouse apply on the embedded engine', () => {
  test('a deny and a mask on catalog "sales" (the slug, as the REST catalog matches it) hold for SQL too', async () => {
    const policy = (input: Parameters<typeof createPolicy>[3]) => createPolicy(c.t.services.db, CLI_ACTOR, 'sales', input, new Date());
    await editor("CREATE TABLE iceberg.lake.p AS SELECT range AS k, 'secret' || range AS v FROM range(3)");
    await policy({ name: 'slug deny', resources: { catalog: ['sales'], schema: ['lake'], table: ['p'] }, deny: [{ users: ['vera@example.test'], accesses: ['select'] }] });
    await policy({ name: 'slug mask', resources: { catalog: ['sales'], schema: ['lake'], table: ['p'], column: ['v'] }, masks: [{ users: ['ed@example.test'], type: 'MASK_NULL' }] });
    assert.match(await failure(viewer('SELECT * FROM iceberg.lake.p'), 'refused'), /policy "slug deny" denies select/);
    assert.deepEqual((await editor('SELECT DISTINCT v FROM iceberg.lake.p')).rows, [[null]]);
    assert.match(await failure(editor('DELETE FROM iceberg.lake.p WHERE v = \'secret1\''), 'refused'), /policy "slug mask"/);
  });
});

describe('errors name the person\'s mistake, not svc\'s SQL', () => {
  test('a rewritten read and a catalog write fail without quoting the SQL that ran', async () => {
    for (const [sql, want] of [
      ['SELECT nope FROM iceberg.lake.t', /Referenced column "nope" not found/],
      ["SELECT k FROM iceberg.lake.t WHERE v = 1 + 'x'", /Could not choose a best candidate function/],
      ['DELETE FROM iceberg.lake.t WHERE nope = 1', /Referenced column "nope" not found/],
      ["INSERT INTO iceberg.lake.t (k) SELECT 'notanumber'", /Could not convert string 'notanumber'/],
    ] as const) {
      const message = await failure(editor(sql), 'failed');
      assert.match(message, want, sql);
      assert.doesNotMatch(message, /LINE \d|read_parquet|__svc_|svc-cache|\/tmp\//, sql);
    }
    // the person's own SQL is still quoted where it is theirs
    assert.match(await failure(editor('SELECT nope FROM range(1)'), 'failed'), /LINE 1: SELECT nope/);
  });
});

describe('EXPLAIN ANALYZE of a catalog read', () => {
  test('shows the person\'s statement, not svc\'s with the cache folder\'s files (as current_query would)', async () => {
    const sql = 'EXPLAIN ANALYZE SELECT * FROM iceberg.lake.t WHERE k > 1';
    const text = JSON.stringify((await viewer(sql)).rows);
    assert.match(text, /SELECT \* FROM iceberg\.lake\.t WHERE k > 1/);
    assert.doesNotMatch(text, /svc-cache|\/tmp\/|\.parquet/);
    // two scans side by side in the plan's boxes
    await editor("INSERT INTO iceberg.lake.t VALUES (9, 'v9')");
    const join = JSON.stringify((await viewer('EXPLAIN ANALYZE SELECT * FROM iceberg.lake.t AS a JOIN iceberg.lake.t AS b ON a.k = b.k')).rows);
    assert.match(join, /Total Files Read: 2/);
    assert.doesNotMatch(join, /svc-cache|\/tmp\/|parquet\b|[0-9a-f]{12}/);
  });
});

describe('catalog writes stay within their statement', () => {
  test('a CREATE TABLE ... AS by an editor whose rows cannot be written leaves no table behind', async () => {
    assert.match(await failure(editor('CREATE TABLE iceberg.lake.bk PARTITIONED BY (bucket(4, x)) AS SELECT 1 AS x'), 'refused'), /bucket partitions are not written/);
    assert.match(await failure(viewer('SELECT count(*) FROM iceberg.lake.bk'), 'failed'), /does not exist/);
    assert.equal((await catalogRequest(c, 'GET', 'v1/sales/namespaces/lake/tables/bk', token)).status, 404);
  });

  test('partition values are bounded in bytes: long identity partitions are refused before they are read', async () => {
    await editor('CREATE TABLE iceberg.lake.wide (s VARCHAR) PARTITIONED BY (s)');
    assert.match(await failure(editor("INSERT INTO iceberg.lake.wide SELECT repeat('x', 200000) || range FROM range(10)"), 'refused'), /partition values take \d+ bytes, more than 1048576/);
    assert.deepEqual((await viewer('SELECT count(*) FROM iceberg.lake.wide')).rows, [['0']]);
    // values of any length are written when the table is not partitioned by them (no bound is kept for them)
    await editor('CREATE TABLE iceberg.lake.long (s VARCHAR)');
    assert.deepEqual((await editor("INSERT INTO iceberg.lake.long SELECT repeat('y', 300000) UNION ALL SELECT 'short'")).rows, [['2']]);
    assert.deepEqual((await viewer("SELECT count(*) FROM iceberg.lake.long WHERE s = 'short'")).rows, [['1']]);
  });
});

describe('columns named like svc\'s own', () => {
  test('a table with columns named as the writer\'s partition columns is written and read back', async () => {
    const r = await editor('CREATE TABLE iceberg.lake.named PARTITIONED BY ("__svc_pk", "__svc_p0") AS SELECT range % 2 AS "__svc_pk", range AS "__svc_p0" FROM range(4)');
    assert.deepEqual(r.rows, [['4']]);
    assert.deepEqual((await viewer('SELECT "__svc_pk", count(*) FROM iceberg.lake.named GROUP BY 1 ORDER BY 1')).rows, [['0', '2'], ['1', '2']]);
  });
});

describe('a write the catalog would refuse puts no file', () => {
  test('an INSERT refused at its commit (a deny of alter, which the catalog\'s commit checks) is refused before any file is uploaded', async () => {
    await editor('CREATE TABLE iceberg.lake.guarded (k INTEGER)');
    const files = async () => (await c.t.services.storage.of({ tenant: { id: wsId, slug: 'sales' } }).list('lake/sales/')).filter((o) => o.key.includes('/data/')).length;
    const before = await files();
    await createPolicy(c.t.services.db, CLI_ACTOR, 'sales', { name: 'frozen', resources: { catalog: ['iceberg'], schema: ['lake'], table: ['guarded'] }, deny: [{ users: ['ed@example.test'], accesses: ['alter'] }] }, new Date());
    c.t.clock.advance(10_000); // the catalog's deny rules are read again after 5 s
    assert.match(await failure(editor('INSERT INTO iceberg.lake.guarded SELECT range FROM range(10)'), 'refused'), /policy "frozen" denies alter/);
    assert.equal(await files(), before, 'no data file was put under the warehouse');
  });
});
