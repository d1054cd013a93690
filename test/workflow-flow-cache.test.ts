// Starting an execution reads the flow's current revision from a cache (src/workflows/current-flows.ts).
// A change made on one replica reaches the cache of another over Redis, on real PostgreSQL and
// Redis: an update starts the new revision there, a delete makes a start there a 404.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from './helpers/app.js';
import { signInAdmin, saveYaml, replica, waitFor, ADMIN, type Admin } from './helpers/workflow.js';
import { createExecution } from '../src/workflows/executions.js';
import { deleteFlow } from '../src/workflows/flows.js';
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
