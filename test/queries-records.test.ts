// Records of answered queries written behind the answer (src/queries/records.ts) on the real
// PostgreSQL: records that arrive while a write is in flight go together in one INSERT, settled()
// waits for every record queued before it, and one record that cannot be written (its workspace
// is gone) is logged and does not take the others with it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { startTestApp, type TestApp } from './helpers/app.js';
import { captureLogging, signInAdmin, type Admin } from './helpers/workflow.js';
import { QueryRecords, type QueryRecord } from '../src/queries/records.js';

/** Counts the INSERTs the records make and the rows of each. */
class InsertCounter implements KyselyPlugin {
  readonly inserts: number[] = [];
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const n = args.node;
    if (n.kind === 'InsertQueryNode' && n.values?.kind === 'ValuesNode') this.inserts.push(n.values.values.length);
    return n;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> { return args.result; }
}

describe('query records written behind the answer', () => {
  let t: TestApp;
  let admin: Admin;
  before(async () => { t = await startTestApp(); admin = await signInAdmin(t); });
  after(() => t.close());

  const record = (over: Partial<QueryRecord> = {}): QueryRecord => ({
    id: randomUUID(), workspace_id: admin.workspaceId, engine: 'embedded', sql: 'SELECT 1', params: '[]', principal: admin.userId,
    principal_role: 'ws_admin', max_rows: 10, timeout_ms: 1000, state: 'SUCCEEDED', created_at: t.clock.now(), started_at: t.clock.now(),
    ended_at: t.clock.now(), rows: 1, truncated: false, columns: '[{"name":"x","type":"INTEGER"}]', preview: '[[1]]', ...over,
  });
  const stored = async (ids: string[]) => (await t.services.db.selectFrom('queries').select('id').where('id', 'in', ids).execute()).map((r) => r.id).sort();

  test('records queued while one is written go together in the next INSERT; settled() waits for all of them', async () => {
    const counter = new InsertCounter();
    const records = new QueryRecords(t.services.db.withPlugin(counter), captureLogging().logging.module('svc::queries'));
    const first = record();
    await records.add(first);
    assert.deepEqual(await stored([first.id]), [first.id]);
    // Queued while the first write is in flight: one INSERT for the rest.
    const rows = Array.from({ length: 6 }, () => record());
    records.add(rows[0]!);
    await new Promise((r) => setImmediate(r)); // the write of rows[0] is under way
    for (const r of rows.slice(1)) records.add(r);
    await records.settled();
    assert.deepEqual(await stored(rows.map((r) => r.id)), rows.map((r) => r.id).sort());
    assert.deepEqual(counter.inserts, [1, 1, 5]);
    assert.equal(records.full(), false);
  });

  test('a record that cannot be written is logged as lost; the others of its INSERT are written', async () => {
    const capture = captureLogging();
    const records = new QueryRecords(t.services.db, capture.logging.module('svc::queries'));
    const good = [record(), record()];
    const orphan = record({ workspace_id: randomUUID() }); // no such workspace: the foreign key refuses it
    records.add(record()); // in flight first, so the three below share one INSERT
    for (const r of [good[0]!, orphan, good[1]!]) records.add(r);
    await records.settled();
    assert.deepEqual(await stored([...good.map((r) => r.id), orphan.id]), good.map((r) => r.id).sort());
    const lost = capture.lines().filter((l) => l.msg === 'the record of an answered query could not be written: it is missing from the history');
    assert.equal(lost.length, 1);
    assert.equal(lost[0]!.query, orphan.id);
    assert.equal(lost[0]!.level, 50);
  });
});
