// Starting an execution reads the flow's current revision from a cache (src/workflows/current-flows.ts).
// A change made on one replica reaches the cache of another over Redis, on real PostgreSQL and
// Redis: an update starts the new revision there, a delete makes a start there a 404.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, saveYaml, replica, waitFor, ADMIN, type Admin } from './helpers/workflow.js';
import { createExecution } from '../src/workflows/executions.js';
import { deleteFlow, flowCacheKey, FlowDefinitions } from '../src/workflows/flows.js';
import { CurrentFlows } from '../src/workflows/current-flows.js';
import type { Services } from '../src/services.js';

const FLOW = (input: string) => `id: cached\nnamespace: cache\ninputs:\n  - id: ${input}\n    type: STRING\n    defaults: x\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\n`;

let t: TestApp; let admin: Admin; let other: Services;
const stops: Array<() => Promise<void>> = [];
before(async () => {
  t = await startTestApp();
  admin = await signInAdmin(t);
  // saved before the replicas listen: no invalidation is in flight when the other replica first
  // reads the flow, so that read stays in its cache (a read overtaken by an invalidation is not kept)
  await saveYaml(t, admin, FLOW('a'));
  other = replica(t);
  stops.push(await t.services.invalidator.listen(), await other.invalidator.listen());
});
after(async () => {
  for (const s of stops) await s();
  await other.close();
  await t.close();
});

const start = (s: Services, inputs: Record<string, unknown> = {}) =>
  createExecution(s, { workspaceId: admin.workspaceId, namespace: 'cache', flowId: 'cached', inputs, trigger: { type: 'api' } });

test('an update on one replica starts the new revision on another', async () => {
  const first = await start(other, { a: 'one' });
  assert.equal(first.flow_revision, 1);
  await saveYaml(t, admin, FLOW('b'));
  // the other replica learns of it over Redis pub/sub: its next start uses revision 2 and its inputs
  const second = await waitFor(async () => {
    const e = await start(other, {}).catch(() => null);
    return e && e.flow_revision === 2 ? e : null;
  }, 'the other replica to start revision 2', 10_000);
  assert.deepEqual(second.inputs, { b: 'x' });
  await assert.rejects(start(other, { a: 'one' }), /invalid inputs/, 'the old input is unknown to the new revision');
});

test('a delete on one replica makes a start on another a 404', async () => {
  await start(other);
  await deleteFlow(t.services, { id: admin.userId, email: ADMIN.email }, { workspaceId: admin.workspaceId, namespace: 'cache', flowId: 'cached' }, 'default');
  await waitFor(async () => {
    const err = await start(other).then(() => null, (e: Error & { statusCode?: number }) => e);
    return err && /flow does not exist/.test(err.message);
  }, 'the other replica to forget the deleted flow', 10_000);
  await assert.rejects(start(t.services), /flow does not exist/, 'this replica forgot it at once');
});

test('a burst of starts on a cold cache reads the flow once; a start after an invalidation reads again', async () => {
  let reads = 0;
  // the service's database, counting the statements these caches send
  const db = t.services.db.withPlugin({ transformQuery: (a) => { reads++; return a.node; }, transformResult: async (a) => a.result });
  const key = { workspaceId: admin.workspaceId, namespace: 'cache', flowId: 'burst' };
  await saveYaml(t, admin, FLOW('a').replace('id: cached', 'id: burst'));
  const once = await new CurrentFlows(db, t.services.clock).get(key);
  const perRead = reads;
  assert.ok(perRead > 0);

  reads = 0;
  const flows = new CurrentFlows(db, t.services.clock);
  const got = await Promise.all(Array.from({ length: 50 }, () => flows.get(key)));
  assert.equal(reads, perRead, '50 concurrent misses, one read');
  assert.ok(got.every((f) => f.revision === once.revision));

  // an invalidation while a read is in flight: the start after it does not join that read
  reads = 0;
  const cold = new CurrentFlows(db, t.services.clock);
  const before = cold.get(key);
  cold.forget([flowCacheKey(key)]);
  await Promise.all([before, cold.get(key)]);
  assert.equal(reads, 2 * perRead);

  reads = 0;
  const defs = new FlowDefinitions(db);
  const parsed = await Promise.all(Array.from({ length: 50 }, () => defs.get(key, once.revision)));
  assert.equal(reads, 1, 'one read of the revision for 50 concurrent misses');
  assert.ok(parsed.every((d) => d === parsed[0] && d.tasks[0].id === 'o'));
  await assert.rejects(Promise.all([defs.get(key, 99), defs.get(key, 99)]), /flow revision does not exist/);
});
