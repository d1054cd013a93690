// The byte bounds of a worker's step caches (src/workflows/orchestrator.ts stepContext): the
// snapshots it keeps between steps, whose runs carry their outputs, and the parsed flow
// definitions. Filled past small budgets on real PostgreSQL and Redis, each stays within its
// budget while executions still run to the right result (what is not kept is read again).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { saveFlow, run } from './helpers/workflows.js';
import { signInAdmin } from './helpers/workflow.js';
import { advance, stepContext } from '../src/workflows/orchestrator.js';
import { runTaskRunJob } from '../src/workflows/task-run.js';
import { FlowDefinitions } from '../src/workflows/flows.js';

let t: TestApp; let b: Browser; let wsId: string;
before(async () => {
  t = await startTestApp();
  ({ browser: b, workspaceId: wsId } = await signInAdmin(t, '198.51.100.95'));
  await saveFlow(b, 'default', 'id: big\nnamespace: bytes\ninputs:\n  - id: s\n    type: STRING\ntasks:\n  - id: a\n    type: output\n    values: { v: "{{ inputs.s }}" }\n  - id: b\n    type: output\n    values: { done: true }\n');
});
after(async () => { await t.close(); });

const exec = (id: string) => t.services.db.selectFrom('executions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const queued = async (id: string) => t.services.db.selectFrom('task_runs').select(['id', 'execution_id', 'attempt']).where('execution_id', '=', id).where('state', '=', 'QUEUED').execute();

test('kept snapshots stay within their byte budget, and executions whose snapshots went still end right', async () => {
  const budget = 1024 * 1024;
  const ctx = stepContext(t.services.db, { snapshots: budget });
  // eight executions of ~300 KB snapshots each (inputs and outputs), and one larger than the budget
  const values = [...Array.from({ length: 8 }, (_, i) => `${i}`.padEnd(50_000, 'x')), 'huge'.padEnd(400_000, 'y')];
  const ids: string[] = [];
  for (const s of values) ids.push(await run(b, 'default', 'bytes', 'big', { s }));
  const within = () => assert.ok(ctx.snapshots.byteSize <= budget, `${ctx.snapshots.byteSize} bytes kept`);
  for (const id of ids) { await advance(t.services, ctx, id); within(); }
  for (let round = 0; round < 2; round++) {
    for (const id of ids) {
      const [r] = await queued(id);
      assert.equal(await runTaskRunJob(t.services, ctx, null, 'w', { taskRunId: r.id, executionId: id, attempt: r.attempt + 1, instant: true }), 'SUCCESS');
      within();
    }
    if (round === 0) {
      assert.ok(ctx.snapshots.size > 0 && ctx.snapshots.size < ids.length, `${ctx.snapshots.size} snapshots kept: some, not all`);
      assert.equal(ctx.snapshots.get(ids[8]), undefined, 'the snapshot larger than the budget is not kept');
    }
  }
  for (const [i, id] of ids.entries()) {
    const e = await exec(id);
    assert.equal(e.state, 'SUCCESS');
    assert.deepEqual(e.outputs, { a: { v: values[i] }, b: { done: true } });
  }
});

test('parsed flow definitions stay within their byte budget and every revision still reads right', async () => {
  const budget = 64 * 1024;
  const defs = new FlowDefinitions(t.services.db, budget);
  const pad = (i: number) => `${i}`.padEnd(8_000, 'p');
  for (let i = 1; i <= 12; i++) await saveFlow(b, 'default', `id: wide\nnamespace: bytes\ntasks:\n  - id: o\n    type: output\n    values: { pad: "${pad(i)}" }\n`);
  const key = { workspaceId: wsId, namespace: 'bytes', flowId: 'wide' };
  for (let pass = 0; pass < 2; pass++) {
    for (let i = 1; i <= 12; i++) {
      const def = await defs.get(key, i);
      assert.deepEqual((def.tasks[0] as { values: unknown }).values, { pad: pad(i) });
      assert.ok(defs.bytes > 0 && defs.bytes <= budget, `${defs.bytes} bytes kept`);
    }
  }
  const tiny = new FlowDefinitions(t.services.db, 1_000);
  assert.equal((await tiny.get(key, 3)).id, 'wide', 'a definition larger than the whole budget is read, not kept');
  assert.equal(tiny.bytes, 0);
});
