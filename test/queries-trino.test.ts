// The trino driver (trino-client) against the in-test Trino protocol server: nextUri paging,
// X-Trino-User on every request, truncation, cancel and timeout by DELETE on nextUri, errors,
// positional and named parameters as EXECUTE ... USING, and a named engine reached through runQuery.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { TrinoDriver } from '../src/queries/trino.js';
import { QueryFailure, type EngineRun } from '../src/queries/types.js';
import { QueryEngines, runQuery } from '../src/queries/run.js';
import { loadConfig } from '../src/config/index.js';
import { startTrinoProtocolServer, type TrinoProtocolServer } from './helpers/trino-protocol-server.js';
import { selfSignedCert } from './helpers/tls.js';

const log = pino({ level: 'silent' });
const run = (over: Partial<EngineRun>): EngineRun => ({
  workspaceId: randomUUID(), sql: 'SELECT n FROM rows(1)', params: [], role: 'ws_viewer', user: 'ada@example.com', maxRows: 100, timeoutMs: 60_000, ...over,
});

async function failure(p: Promise<unknown>): Promise<QueryFailure> {
  try { await p; } catch (err) { assert.ok(err instanceof QueryFailure, String(err)); return err; }
  assert.fail('the query succeeded');
}

describe('trino driver against the in-test Trino protocol server', () => {
  let trino: TrinoProtocolServer;
  let driver: TrinoDriver;
  before(async () => {
    trino = await startTrinoProtocolServer({ pageSize: 10 });
    driver = new TrinoDriver({ server: trino.url, catalog: 'iceberg', schema: 'sales', log });
  });
  after(() => trino.stop());

  test('follows nextUri page by page; every request names the person in X-Trino-User', async () => {
    trino.requests.length = 0;
    const r = await driver.run(run({ sql: 'SELECT n FROM rows(25)' }));
    assert.deepEqual(r.columns, [{ name: 'n', type: 'bigint' }]);
    assert.equal(r.rows.length, 25);
    assert.deepEqual(r.rows.at(-1), [24]);
    assert.equal(r.truncated, false);
    assert.deepEqual(trino.requests.map((q) => q.method), ['POST', 'GET', 'GET', 'GET']);
    assert.equal(trino.requests[0]!.path, '/v1/statement');
    assert.equal(trino.requests[0]!.body, 'SELECT n FROM rows(25)');
    for (const q of trino.requests) {
      assert.equal(q.headers['x-trino-user'], 'ada@example.com');
      assert.equal(q.headers['x-trino-source'], 'svc');
      assert.equal(q.headers['x-trino-catalog'], 'iceberg');
      assert.equal(q.headers['x-trino-schema'], 'sales');
    }
    assert.equal(trino.requests[0]!.headers['x-trino-session'], 'query_max_run_time=60s', 'the coordinator enforces the timeout too');
  });

  test('stops at max_rows, says it truncated, and cancels the rest with DELETE', async () => {
    const r = await driver.run(run({ sql: 'SELECT n FROM rows(25)', maxRows: 12 }));
    assert.equal(r.rows.length, 12);
    assert.equal(r.truncated, true);
    const del = trino.requests.filter((q) => q.method === 'DELETE');
    assert.equal(del.length, 1);
    assert.match(del[0]!.path, /^\/v1\/statement\/executing\//);
    assert.equal(trino.cancelled().length, 1);
  });

  test('an aborted signal cancels on the coordinator', async () => {
    const ac = new AbortController();
    const p = driver.run(run({ sql: 'SLOW', signal: ac.signal }));
    setTimeout(() => ac.abort(), 100);
    const f = await failure(p);
    assert.equal(f.kind, 'cancelled');
    assert.equal(trino.cancelled().length, 2);
  });

  test('past the timeout the query is cancelled by DELETE and fails as timed out', async () => {
    const f = await failure(driver.run(run({ sql: 'SLOW', timeoutMs: 200 })));
    assert.equal(f.kind, 'timeout');
    assert.equal(f.message, 'query exceeded its timeout of 1 s (engine.query_timeout_secs) and was cancelled');
    assert.equal(trino.cancelled().length, 3);
  });

  test('an engine error is the query error, without the engine stack', async () => {
    const f = await failure(driver.run(run({ sql: 'FAIL' })));
    assert.equal(f.kind, 'failed');
    assert.equal(f.message, "SYNTAX_ERROR: line 1:1: mismatched input 'FAIL'");
  });

  test('positional parameters run as EXECUTE of a prepared statement', async () => {
    const r = await driver.run(run({ sql: 'SELECT ?, ?, ?, ?', params: [7, "it's", true, null] }));
    assert.deepEqual(r.rows, [['svc_statement=SELECT%20%3F%2C%20%3F%2C%20%3F%2C%20%3F', "EXECUTE svc_statement USING 7, 'it''s', TRUE, NULL"]]);
  });

  test('named parameters ($name) run as ? in the order they appear, outside literals, quoted names and comments', async () => {
    const sql = `SELECT "$path", '$who''s $who', $who, $n -- $n\n/* $who */ WHERE x = $n`;
    const r = await driver.run(run({ sql, params: { who: "o'neil", n: 2.5 } }));
    const prepared = decodeURIComponent((r.rows[0]![0] as string).replace(/^svc_statement=/, ''));
    assert.equal(prepared, `SELECT "$path", '$who''s $who', ?, ? -- $n\n/* $who */ WHERE x = ?`);
    assert.equal(r.rows[0]![1], "EXECUTE svc_statement USING 'o''neil', DOUBLE '2.5', DOUBLE '2.5'");
    const refused: Array<[string, Record<string, string>, string]> = [
      ['SELECT $a', {}, 'parameter $a has no value'],
      ['SELECT $a', { a: 'x', b: 'y' }, 'parameter $b is not in the statement'],
      ['SELECT $a, ?', { a: 'x' }, 'use either positional (?) or named ($name) parameters, not both'],
    ];
    for (const [q, params, message] of refused) {
      const f = await failure(driver.run(run({ sql: q, params })));
      assert.equal(f.kind, 'refused');
      assert.equal(f.message, message);
    }
    assert.equal(trino.requests.filter((x) => x.body.includes('$a')).length, 0, 'a refused statement is never sent');
  });

  test('runQuery reaches a named engine through the engines lookup', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'svc-trino-'));
    try {
      const config = loadConfig({ cwd, env: { SVC_ENGINES__EMBEDDED: 'off' } });
      const engines = new QueryEngines(config, log, {});
      engines.setLookup(async (_ws, name) => (name === 'trino-prod' ? driver : undefined));
      const r = await runQuery(engines, config, { workspace: randomUUID(), engine: 'trino-prod', sql: 'SELECT n FROM rows(3)', principal: { name: 'grace@example.com', role: 'ws_editor' } });
      assert.deepEqual(r.rows, [[0], [1], [2]]);
      assert.equal(trino.requests.at(-1)!.headers['x-trino-user'], 'grace@example.com');
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  test('an unreachable coordinator fails in one line, naming no URL', async () => {
    const gone = await startTrinoProtocolServer();
    await gone.stop();
    const f = await failure(new TrinoDriver({ server: gone.url, log }).run(run({})));
    assert.equal(f.kind, 'failed');
    assert.equal(f.message, 'the engine is unreachable (ECONNREFUSED)');
  });
});

describe('SVC_ENGINE_TLS_INSECURE against an HTTPS coordinator with a self-signed certificate', () => {
  test('verified by default: the query fails; with tlsInsecure it answers', async () => {
    const trino = await startTrinoProtocolServer({ tls: selfSignedCert() });
    try {
      const verified = await failure(new TrinoDriver({ server: trino.url, log }).run(run({})));
      assert.equal(verified.kind, 'failed');
      assert.equal(verified.message, 'the engine is unreachable (DEPTH_ZERO_SELF_SIGNED_CERT)');
      assert.equal(trino.requests.length, 0, 'nothing was sent over the unverified connection');
      const insecure = await new TrinoDriver({ server: trino.url, tlsInsecure: true, log }).run(run({ sql: 'SELECT n FROM rows(2)' }));
      assert.deepEqual(insecure.rows, [[0], [1]]);
    } finally {
      await trino.stop();
    }
  });
});
