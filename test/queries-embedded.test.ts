// The embedded engine on real DuckDB through runQuery: rows and parameters, truncation at
// max_rows, the timeout cancelling on the engine, cancellation, what each role may run, the
// sandbox, one database per workspace (bounded), and when the engine is offered at all.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { loadConfig, type Config } from '../src/config/index.js';
import { QueryEngines, runQuery, type RunQueryInput } from '../src/queries/run.js';
import { QueryFailure } from '../src/queries/types.js';

const dirs: string[] = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });
const log = pino({ level: 'silent' });

function config(env: Record<string, string> = {}): Config {
  const cwd = mkdtempSync(join(tmpdir(), 'svc-q-'));
  dirs.push(cwd);
  return loadConfig({ cwd, env: { SVC_ENGINES__PROVISIONER: 'none', ...env } });
}

function engines(env: Record<string, string> = {}, processEnv: Record<string, string> = {}) {
  const cfg = config(env);
  const e = new QueryEngines(cfg, log, processEnv);
  after(() => e.close());
  const run = (workspace: string, sql: string, more: Partial<RunQueryInput> = {}) =>
    runQuery(e, cfg, { workspace, engine: 'embedded', sql, principal: { name: 'ada@example.com', role: 'ws_editor' }, ...more });
  return { cfg, e, run };
}

async function failure(p: Promise<unknown>): Promise<QueryFailure> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof QueryFailure, `expected a QueryFailure, got ${String(err)}`);
    return err;
  }
  assert.fail('the query succeeded');
}

describe('embedded engine', () => {
  const { run } = engines({ SVC_ENGINE__MAX_ROWS: '50' });
  const ws = randomUUID();

  test('answers rows with column names and types, with positional and named parameters', async () => {
    const r = await run(ws, "SELECT 1 AS a, 'x' AS b, 9007199254740993::BIGINT AS big, 1.5::DECIMAL(4,2) AS d, DATE '2026-01-02' AS day");
    assert.deepEqual(r.columns, [
      { name: 'a', type: 'INTEGER' }, { name: 'b', type: 'VARCHAR' }, { name: 'big', type: 'BIGINT' },
      { name: 'd', type: 'DECIMAL(4,2)' }, { name: 'day', type: 'DATE' },
    ]);
    assert.deepEqual(r.rows, [[1, 'x', '9007199254740993', '1.50', '2026-01-02']]);
    assert.equal(r.truncated, false);
    const p = await run(ws, 'SELECT $1::INTEGER + 1 AS n, $2 AS s', { params: [41, 'hi'] });
    assert.deepEqual(p.rows, [[42, 'hi']]);
    const named = await run(ws, 'SELECT $who AS who', { params: { who: 'grace' } });
    assert.deepEqual(named.rows, [['grace']]);
  });

  test('truncates at max_rows and says so; the caller may ask for fewer, never more', async () => {
    const all = await run(ws, 'SELECT * FROM range(50)');
    assert.equal(all.rows.length, 50);
    assert.equal(all.truncated, false);
    const over = await run(ws, 'SELECT * FROM range(5000)');
    assert.equal(over.rows.length, 50, 'engine.max_rows is the ceiling');
    assert.equal(over.truncated, true);
    assert.deepEqual(over.rows.at(-1), ['49']);
    const few = await run(ws, 'SELECT * FROM range(10)', { maxRows: 3 });
    assert.deepEqual(few.rows, [['0'], ['1'], ['2']]);
    assert.equal(few.truncated, true);
    const more = await run(ws, 'SELECT * FROM range(100)', { maxRows: 1000 });
    assert.equal(more.rows.length, 50);
  });

  test('a query over its timeout is interrupted on the engine, and the database keeps answering', async () => {
    const f = await failure(run(ws, 'SELECT count(*) FROM range(100000000000) a', { timeoutMs: 300 }));
    assert.equal(f.kind, 'timeout');
    assert.match(f.message, /exceeded its timeout of 1 s \(engine.query_timeout_secs\) and was cancelled/);
    assert.deepEqual((await run(ws, 'SELECT 2 AS two')).rows, [[2]]);
  });

  test('aborting the signal cancels the running query', async () => {
    const ac = new AbortController();
    const p = run(ws, 'SELECT count(*) FROM range(100000000000) a', { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    const f = await failure(p);
    assert.equal(f.kind, 'cancelled');
    assert.equal(f.message, 'query was cancelled');
  });

  test('editors change their workspace database; viewers only read it; other workspaces do not see it', async () => {
    await run(ws, 'CREATE TABLE sales (region VARCHAR, amount INTEGER)');
    await run(ws, "INSERT INTO sales VALUES ('north', 10), ('south', 32)");
    const viewer = { name: 'bob@example.com', role: 'ws_viewer' as const };
    const total = await run(ws, 'SELECT sum(amount) AS total FROM sales', { principal: viewer });
    assert.deepEqual(total.rows, [['42']]);
    for (const sql of ["INSERT INTO sales VALUES ('east', 1)", 'DROP TABLE sales', 'CREATE TABLE t (a INT)', 'DELETE FROM sales']) {
      const f = await failure(run(ws, sql, { principal: viewer }));
      assert.equal(f.kind, 'refused', sql);
      assert.equal(f.message, 'ws_viewer may only run SELECT and EXPLAIN on the embedded engine');
    }
    const other = await failure(run(randomUUID(), 'SELECT * FROM sales'));
    assert.equal(other.kind, 'failed');
    assert.match(other.message, /Table with name sales does not exist/);
  });

  test('the sandbox: no files, no network, no extensions, no settings, one statement', async () => {
    const cases: Array<[string, 'failed' | 'refused', RegExp]> = [
      ["SELECT * FROM read_csv('/etc/passwd')", 'refused', /^table function read_csv is not allowed on the embedded engine$/],
      ["SELECT * FROM read_parquet('https://example.com/x.parquet')", 'refused', /not allowed/i],
      ["ATTACH '/tmp/other.duckdb' AS other", 'refused', /not allowed on the embedded engine/],
      ["COPY (SELECT 1) TO '/tmp/out.csv'", 'refused', /^COPY is not allowed on the embedded engine/],
      ['INSTALL httpfs', 'refused', /not allowed/],
      ["SET memory_limit = '100GB'", 'refused', /not allowed/],
      ["SELECT current_setting('memory_limit'); SELECT 1", 'refused', /^send one statement per query$/],
      ['   ', 'refused', /^sql must not be empty$/],
      // the settings (and the server's paths in them) are not shown, through a function or a table
      ["SELECT current_setting('enable_external_access') AS ext", 'refused', /^function current_setting is not allowed on the embedded engine: it shows the server's settings$/],
      ['SELECT * FROM duckdb_settings()', 'refused', /^table function duckdb_settings is not allowed/],
    ];
    for (const [sql, kind, message] of cases) {
      const f = await failure(run(ws, sql));
      assert.equal(f.kind, kind, sql);
      assert.match(f.message, message, sql);
    }
  });

  test('a bad statement fails with the engine message on one line', async () => {
    const f = await failure(run(ws, 'SELEC 1'));
    assert.equal(f.kind, 'failed');
    assert.match(f.message, /syntax error/);
    assert.ok(!f.message.includes('\n'));
  });
});

describe('embedded databases', () => {
  test('at most engines.embedded_max_databases stay open: the least recently used idle one is closed', async () => {
    const { e, run } = engines({ SVC_ENGINES__EMBEDDED_MAX_DATABASES: '2' });
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await run(a, 'SELECT 1');
    await run(b, 'SELECT 1');
    await run(a, 'SELECT 1');
    await run(c, 'SELECT 1');
    assert.deepEqual(e.embedded().openDatabases().sort(), [a, c].sort());
  });

  test('with engines.embedded_data_dir each workspace has its own file that outlives the process state', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-duck-'));
    dirs.push(dir);
    const ws = randomUUID();
    const first = engines({ SVC_ENGINES__EMBEDDED_DATA_DIR: dir });
    await first.run(ws, 'CREATE TABLE kept AS SELECT 7 AS seven');
    await first.e.close();
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.duckdb')), [`${ws}.duckdb`]);
    const second = engines({ SVC_ENGINES__EMBEDDED_DATA_DIR: dir });
    assert.deepEqual((await second.run(ws, 'SELECT seven FROM kept')).rows, [[7]]);
  });

  test('engine.concurrency bounds queries at once; a waiting query still keeps its timeout', async () => {
    const { run } = engines({ SVC_ENGINE__CONCURRENCY: '1' });
    const ws = randomUUID();
    const ac = new AbortController();
    const long = run(ws, 'SELECT count(*) FROM range(100000000000) a', { signal: ac.signal });
    const waiting = await failure(run(ws, 'SELECT 1', { timeoutMs: 200 }));
    assert.equal(waiting.kind, 'timeout');
    ac.abort();
    assert.equal((await failure(long)).kind, 'cancelled');
    assert.deepEqual((await run(ws, 'SELECT 1 AS one')).rows, [[1]]);
  });
});

describe('cancelling at any moment', () => {
  test('a cancel landing while the database opens or the statement is prepared still stops the query', async () => {
    const { run } = engines({});
    const moments: Array<() => Promise<void>> = [
      async () => {},
      () => new Promise((r) => setImmediate(r)),
      () => new Promise((r) => setTimeout(r, 1)),
      () => new Promise((r) => setTimeout(r, 5)),
      () => new Promise((r) => setTimeout(r, 20)),
    ];
    for (const [i, moment] of moments.entries()) {
      const ac = new AbortController();
      // a fresh workspace each time, so the cancel may land while its database is being opened
      const long = run(randomUUID(), 'SELECT count(*) FROM range(100000000000) a', { signal: ac.signal, timeoutMs: 30_000 });
      await moment();
      ac.abort();
      assert.equal((await failure(long)).kind, 'cancelled', `cancel at moment ${i}`);
    }
  });

  test('a cancel or a timeout landing while the statement is parsed (on the parser database) stops the query, and the next one parses', async () => {
    const { run } = engines({});
    const ws = randomUUID();
    // 120 KB of select list: its parse takes DuckDB hundreds of milliseconds
    const wide = `SELECT ${Array.from({ length: 60_000 }, (_, i) => String(i % 10)).join(', ')}`;
    const ac = new AbortController();
    const cancelled = run(ws, wide, { signal: ac.signal, timeoutMs: 30_000 });
    setTimeout(() => ac.abort(), 20);
    assert.equal((await failure(cancelled)).kind, 'cancelled');
    assert.equal((await failure(run(ws, wide, { timeoutMs: 1 }))).kind, 'timeout');
    // the interrupted parser connections are not reused with a stale interrupt
    for (let i = 0; i < 3; i++) assert.deepEqual((await run(ws, `SELECT ${i} AS n`)).rows, [[i]]);
  });
});

describe('when the embedded engine is offered', () => {
  test('auto offers it when the provisioner resolves to none, and refuses it with the reason otherwise', async () => {
    const ws = randomUUID();
    assert.deepEqual((await engines({ SVC_ENGINES__PROVISIONER: 'auto' }, {}).run(ws, 'SELECT 1 AS one')).rows, [[1]]);
    const inCluster = engines({ SVC_ENGINES__PROVISIONER: 'auto' }, { KUBERNETES_SERVICE_HOST: '10.0.0.1' });
    const f = await failure(inCluster.run(ws, 'SELECT 1'));
    assert.equal(f.kind, 'disabled');
    assert.equal(f.message, 'the embedded engine is disabled: engines.embedded is auto and engines.provisioner is auto and a cluster configuration was found (KUBERNETES_SERVICE_HOST); set engines.embedded = on to offer it anyway');
    const forced = engines({ SVC_ENGINES__PROVISIONER: 'cluster', SVC_ENGINES__EMBEDDED: 'on' }, {});
    assert.deepEqual((await forced.run(ws, 'SELECT 1 AS one')).rows, [[1]]);
    const off = await failure(engines({ SVC_ENGINES__EMBEDDED: 'off' }).run(ws, 'SELECT 1'));
    assert.equal(off.kind, 'disabled');
    assert.equal(off.message, 'the embedded engine is disabled (engines.embedded = off)');
  });

  test('an engine name the workspace does not have is not found', async () => {
    const f = await failure(engines().run(randomUUID(), 'SELECT 1', { engine: 'trino-prod' }));
    assert.equal(f.kind, 'not_found');
    assert.equal(f.message, 'engine does not exist: trino-prod');
  });
});
