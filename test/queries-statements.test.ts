// What runs on the embedded engine is decided from DuckDB's parse trees (docs/engines.md
// "Statements"): a matrix of DuckDB's statement types, each alone and under EXPLAIN, EXPLAIN
// ANALYZE and nested EXPLAINs, for a viewer and an editor; table functions and file paths hidden
// inside queries, expressions and comments; and what must not happen after a refusal (nothing
// written, no transaction left on a pooled connection).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../src/config/index.js';
import { QueryEngines, runQuery, type RunQueryInput } from '../src/queries/run.js';
import { QueryFailure, type QueryRole } from '../src/queries/types.js';
import { Databases, scalarOn } from '../src/queries/embedded-db.js';
import { ParserDb } from '../src/queries/embedded-parser.js';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-stmt-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));
const cfg = loadConfig({ cwd: dataDir, env: { SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINES__EMBEDDED_DATA_DIR: dataDir } });
const engines = new QueryEngines(cfg, pino({ level: 'silent' }), {});
after(() => engines.close());
const ws = randomUUID();
const as = (role: QueryRole) => (sql: string, more: Partial<RunQueryInput> = {}) =>
  runQuery(engines, cfg, { workspace: ws, engine: 'embedded', sql, principal: { name: `${role}@example.com`, role }, ...more });
const viewer = as('ws_viewer');
const editor = as('ws_editor');

async function refusal(p: Promise<unknown>, sql: string): Promise<string> {
  try { await p; } catch (err) {
    assert.ok(err instanceof QueryFailure, `${sql}: expected a QueryFailure, got ${String(err)}`);
    assert.equal(err.kind, 'refused', `${sql}: ${err.message}`);
    return err.message;
  }
  assert.fail(`ran, should have been refused: ${sql}`);
}
const count = async () => Number((await editor('SELECT count(*) FROM t')).rows[0]![0]);

describe('statements by role, read from the parse tree', () => {
  test('setup', async () => {
    await editor('CREATE TABLE t (a INTEGER, b VARCHAR)');
    await editor("INSERT INTO t VALUES (1, 'x'), (2, 'y')");
    await editor('CREATE SEQUENCE s');
  });

  const reads = [
    'SELECT * FROM t', 'VALUES (1), (2)', 'FROM t', 'TABLE t', 'DESCRIBE t', 'SHOW TABLES', 'SUMMARIZE t',
    'WITH x AS (SELECT a FROM t) SELECT * FROM x', 'SELECT * FROM t UNION ALL SELECT * FROM t',
    'SELECT table_name FROM information_schema.tables', 'SELECT * FROM range(3)', 'SELECT table_name FROM duckdb_tables()',
    'EXPLAIN SELECT * FROM t', 'EXPLAIN ANALYZE SELECT * FROM t', '/* c */ explain -- c\n analyze select 1',
    'SELECT (SELECT max(a) FROM t) AS m', 'select 1;',
  ];
  test('a viewer reads: SELECT in every form DuckDB parses as one, and EXPLAIN [ANALYZE] of it', async () => {
    for (const sql of reads) await viewer(sql).catch((err: Error) => assert.fail(`${sql}: ${err.message}`));
  });

  const writes = [
    "INSERT INTO t VALUES (9, 'z')", 'INSERT INTO t SELECT a + 10, b FROM t', "UPDATE t SET b = 'w' WHERE a = 9", 'DELETE FROM t WHERE a > 8',
    'CREATE TABLE u (a INT)', 'CREATE TABLE u2 AS SELECT * FROM t', 'CREATE VIEW v AS SELECT a FROM t', 'DROP TABLE t', 'ALTER TABLE t ADD COLUMN c INT',
    'TRUNCATE t', 'CREATE SCHEMA sch', 'ANALYZE t', "SELECT nextval('s')",
  ];
  test('a viewer changes nothing, alone or under EXPLAIN ANALYZE, EXPLAIN or nested EXPLAINs', async () => {
    const before = await count();
    for (const w of writes) {
      // (`EXPLAIN ANALYZE t` would be EXPLAIN ANALYZE of `t`: ANALYZE is explained only after ANALYZE)
      const forms = [w, `EXPLAIN ANALYZE ${w}`, `EXPLAIN ANALYZE EXPLAIN ANALYZE ${w}`, `explain/**/analyze\n${w.toLowerCase()}`];
      if (!w.startsWith('ANALYZE')) forms.push(`EXPLAIN ${w}`);
      for (const sql of forms) {
        const m = await refusal(viewer(sql), sql);
        assert.match(m, /^ws_viewer may only run SELECT and EXPLAIN on the embedded engine$|changes the database: ws_viewer may not call it/, sql);
      }
    }
    assert.equal(await count(), before, 'nothing was written');
    assert.deepEqual((await viewer("SELECT table_name FROM information_schema.tables WHERE table_name IN ('u', 'u2', 'v') ")).rows, []);
  });

  const never = [
    'BEGIN TRANSACTION', 'COMMIT', 'ROLLBACK', 'ABORT', 'PREPARE p AS SELECT 1', 'EXECUTE p', 'DEALLOCATE p', 'VACUUM', 'CHECKPOINT',
    'CALL duckdb_settings()', "COPY t TO 'x.csv'", "COPY t FROM 'x.csv'", "EXPORT DATABASE 'd'", "IMPORT DATABASE 'd'", 'PRAGMA version',
    "SET threads = 1", 'RESET threads', 'SET VARIABLE x = 1', 'LOAD httpfs', 'INSTALL httpfs', "ATTACH ':memory:' AS m", 'DETACH m', 'USE memory',
    'CREATE TEMP TABLE tt (a INT)', 'CREATE TABLE temp.tt (a INT)', 'CREATE MACRO m(x) AS x + 1', "CREATE SECRET (TYPE s3)", 'CREATE INDEX i ON t (a)',
    'WITH x AS (SELECT 1) INSERT INTO t SELECT 1, \'a\'', "INSERT INTO t VALUES (1, 'a') RETURNING *", 'DELETE FROM t RETURNING *',
    "INSERT INTO t VALUES (1, 'a') ON CONFLICT DO NOTHING", 'INSERT INTO t DEFAULT VALUES',
    'UPDATE t SET (a, b) = (1, \'q\')', 'EXPLAIN (FORMAT json) SELECT 1', 'PIVOT t ON b USING sum(a)',
  ];
  test('nobody runs what would leave state on a connection or reach past the database, alone or under EXPLAIN ANALYZE', async () => {
    for (const s of never) {
      for (const sql of [s, `EXPLAIN ANALYZE ${s}`]) {
        for (const run of [viewer, editor]) {
          const m = await refusal(run(sql), sql);
          assert.ok(!/Error:|Binder|Parser/.test(m), `${sql}: the refusal is the engine's own sentence, not DuckDB's: ${m}`);
        }
      }
    }
  });

  const hidden: Array<[string, RegExp]> = [
    ["SELECT * FROM read_parquet('/x.parquet')", /^table function read_parquet is not allowed/],
    ["SELECT * FROM glob('*')", /^table function glob is not allowed/],
    ["SELECT * FROM query('SELECT 1')", /^table function query is not allowed/],
    ["SELECT * FROM query_table('t')", /^table function query_table is not allowed/],
    ["SELECT * FROM json_execute_serialized_sql('{}')", /^table function json_execute_serialized_sql is not allowed/],
    ['SELECT * FROM duckdb_databases()', /^table function duckdb_databases is not allowed/],
    ['SELECT * FROM duckdb_temporary_files()', /^table function duckdb_temporary_files is not allowed/],
    ["SELECT * FROM '/etc/x.parquet'", /^a table name cannot be a file path or URL/],
    ["SELECT * FROM \"s3://bucket/x.parquet\"", /^a table name cannot be a file path or URL/],
    ["SELECT * FROM t WHERE a IN (SELECT 1 FROM read_text('/etc/passwd'))", /^table function read_text is not allowed/],
    ["INSERT INTO t SELECT 1, content FROM read_text('/etc/passwd')", /^table function read_text is not allowed/],
    ["CREATE TABLE c AS SELECT * FROM read_csv('/etc/passwd')", /^table function read_csv is not allowed/],
    ["CREATE VIEW cv AS SELECT * FROM glob('/*')", /^table function glob is not allowed/],
    ["UPDATE t SET b = (SELECT content FROM read_text('/etc/passwd'))", /^table function read_text is not allowed/],
    ["UPDATE t SET b = 'q' FROM read_csv('/etc/passwd') AS f", /^table function read_csv is not allowed/],
    ["UPDATE t SET b = 'q' -- a comment\n FROM glob('/*') AS f", /^table function glob is not allowed/],
    ["DELETE FROM t USING glob('/*') AS g WHERE true", /^table function glob is not allowed/],
    ["DELETE FROM t WHERE b IN (SELECT file FROM glob('/*'))", /^table function glob is not allowed/],
    ["SELECT setseed(0.5)", /^function setseed is not allowed on the embedded engine: it changes the connection's state$/],
    ["SELECT currval('s')", /^function currval is not allowed on the embedded engine: it reads the connection's state$/],
    ["EXPLAIN ANALYZE SELECT * FROM glob('/*')", /^table function glob is not allowed/],
    ['SELECT current_query()', /^function current_query is not allowed on the embedded engine: it shows the statement as the server runs it$/],
    // as deep as DuckDB's parser goes: the rules look at the bottom too, or refuse
    [`SELECT ${'abs('.repeat(498)}length(current_setting('temp_directory'))${')'.repeat(498)}`, /^function current_setting is not allowed|nested more than/],
    [`SELECT * FROM (${'SELECT * FROM ('.repeat(200)}SELECT * FROM duckdb_settings()${') AS x'.repeat(200)}) AS y`, /^table function duckdb_settings is not allowed|nested more than/],
  ];
  test('a table function, a file path or a function that is not allowed is refused wherever it hides', async () => {
    for (const [sql, m] of hidden) assert.match(await refusal(editor(sql), sql), m, sql);
  });

  // The tree is read into JavaScript on the event loop (lossless-json): 240 KB of `1,` is a tree of
  // about 19 MB, whose parse and print held every request of every workspace for over a second.
  test('a statement whose parse tree is larger than the bound is refused before the tree is read', async () => {
    const sql = `SELECT ${'1,'.repeat(120_000)}1`;
    assert.match(await refusal(viewer(sql), 'SELECT 1,1,...'), /^the statement's parse tree is \d+ characters, over the \d+ the embedded engine reads/);
  });

  test('an editor changes the workspace database with the statements of the allow-list, under EXPLAIN ANALYZE too', async () => {
    await editor('CREATE TABLE e (a INT, b VARCHAR DEFAULT \'d\')');
    await editor("INSERT INTO e VALUES (1, 'x')");
    await editor('INSERT INTO e (a) SELECT a + 1 FROM e');
    await editor('INSERT INTO e BY NAME SELECT 7 AS a');
    await editor("UPDATE e SET b = upper(b) || '!' WHERE a = 1");
    await editor("UPDATE e AS x SET b = 'from' FROM t WHERE x.a = t.a AND t.b IS NOT DISTINCT FROM 'x'");
    await editor('DELETE FROM e USING t WHERE e.a = t.a + 100');
    await editor('EXPLAIN ANALYZE INSERT INTO e VALUES (3, \'explained\')');
    await editor('CREATE VIEW ev AS SELECT a FROM e');
    await editor('ALTER TABLE e ADD COLUMN c INT');
    await editor('ANALYZE e');
    await editor("SELECT nextval('s')");
    assert.deepEqual((await viewer('SELECT a, b FROM e ORDER BY a')).rows, [[1, 'from'], [2, 'd'], [3, 'explained'], [7, 'd']]);
    await editor('DROP VIEW ev');
    await editor('TRUNCATE e');
    await editor('DROP TABLE e');
  });

  test('a transaction cannot outlive its query: BEGIN under EXPLAIN ANALYZE is refused, and a write stays written', async () => {
    const before = await count();
    await refusal(viewer('EXPLAIN ANALYZE BEGIN TRANSACTION'), 'EXPLAIN ANALYZE BEGIN TRANSACTION');
    // every pooled connection is used in turn by the editor's writes
    for (let i = 0; i < 6; i++) await editor(`INSERT INTO t VALUES (${100 + i}, 'kept')`);
    await refusal(viewer('EXPLAIN ANALYZE ROLLBACK'), 'EXPLAIN ANALYZE ROLLBACK');
    await refusal(editor('ROLLBACK'), 'ROLLBACK');
    assert.equal(await count(), before + 6);
  });

  test('each workspace database spills to a folder of its own, private to this process', async () => {
    const dir = join(dataDir, 'private', ws, 'spill');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
  });

  test('a result is bounded in bytes as well as rows: a wide result is cut and marked, and the engine answers on', async () => {
    const r = await viewer("SELECT repeat('x', 60000) AS wide FROM range(2000)");
    assert.equal(r.truncated, true);
    assert.equal(r.truncatedBy, 'bytes');
    const bytes = r.rows.reduce((n, row) => n + (row[0] as string).length, 0);
    assert.ok(bytes <= cfg.engine.max_result_bytes && r.rows.length > 0 && r.rows.length < 2000, `${r.rows.length} rows, ${bytes} bytes`);
    const small = await viewer("SELECT repeat('x', 1000) FROM range(10)", { maxBytes: 4000 });
    assert.equal(small.rows.length, 3);
    assert.equal(small.truncatedBy, 'bytes');
    assert.deepEqual((await viewer('SELECT 42')).rows, [[42]]);
  });
});

test('the parser\'s own statements are prepared once per connection, answer calls that overlap, and go with the connection', async () => {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  const parse = 'SELECT json_serialize_sql($1::VARCHAR)';
  const trees = await Promise.all(['SELECT 1', 'SELECT 2', 'SELECT 3'].map((s) => scalarOn(conn, parse, s)));
  assert.deepEqual(trees.map((t) => (JSON.parse(t) as { statements: unknown[] }).statements.length), [1, 1, 1], 'each call answered its own text');
  assert.notEqual(trees[0], trees[1]);
  assert.equal(await scalarOn(conn, parse, 'SELECT 2'), trees[1], 'the kept statement answers again');
  assert.equal(await scalarOn(conn, 'SELECT upper($1::VARCHAR)', 'x'), 'X');
  new Databases({ dataDir: '', memoryLimit: '64MB', threads: 1, maxDatabases: 1, idleConnections: 1 }, pino({ level: 'silent' })).discard(conn);
  inst.closeSync();
  // a database's idle connection reused after a refusal still parses
  await refusal(viewer('DROP TABLE t'), 'DROP TABLE t');
  assert.equal((await viewer('SELECT 41 + 1')).rows[0]![0], 42);
});

test('the parser database: sandboxed and locked, one thread, connections kept up to its bound, a failed call\'s connection dropped', async () => {
  const parsers = new ParserDb('64MB', 2, pino({ level: 'silent' }));
  after(() => parsers.close());
  const setting = (name: string) => parsers.scalar(`SELECT current_setting('${name}')::VARCHAR || $1::VARCHAR`, '');
  assert.equal(await setting('enable_external_access'), 'false');
  assert.equal(await setting('lock_configuration'), 'true');
  assert.equal(await setting('threads'), '1');
  assert.equal(await setting('temp_directory'), '', 'it spills nowhere');
  await assert.rejects(parsers.scalar("SELECT $1::VARCHAR FROM read_csv('/etc/passwd')", 'x'), /disabled|Permission|external/i);
  // three calls at once: three connections, two kept; each call answers its own text
  const seen = new Set<unknown>();
  const trees = await Promise.all(['SELECT 1', 'SELECT 2', 'SELECT 3'].map((s) => parsers.scalar('SELECT json_serialize_sql($1::VARCHAR)', s, (c) => { if (c) seen.add(c); })));
  assert.equal(seen.size, 3);
  assert.deepEqual(trees.map((t) => (JSON.parse(t) as { statements: unknown[] }).statements.length), [1, 1, 1]);
  assert.equal(new Set(trees).size, 3, 'each call answered its own text');
  const again = new Set<unknown>();
  for (let i = 0; i < 4; i++) await parsers.scalar('SELECT upper($1::VARCHAR)', 'x', (c) => { if (c) again.add(c); });
  assert.equal(again.size, 1, 'one call at a time reuses one kept connection');
  const [kept] = again;
  await assert.rejects(parsers.scalar('SELECT error($1::VARCHAR)', 'boom'), /boom/);
  const after1 = new Set<unknown>();
  await parsers.scalar('SELECT upper($1::VARCHAR)', 'x', (c) => { if (c) after1.add(c); });
  await parsers.scalar('SELECT upper($1::VARCHAR)', 'x', (c) => { if (c) after1.add(c); });
  assert.equal(after1.size, 1);
  assert.ok(!after1.has(kept), 'the failed call\'s connection is not handed out again');
});
