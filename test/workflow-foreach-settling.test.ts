// Settled foreach iterations (issue 10 point 5): a step reads the runs still running and new, not
// the finished iterations, for a foreach at any depth and for iterations finishing out of order.
// No worker runs here: the test plays the worker, running queued task runs one at a time in the
// order it picks, on real PostgreSQL and Redis, and counts the rows the next step reads.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { saveFlow, run } from './helpers/workflows.js';
import { advance, readSnapshot, stepContext } from '../src/workflows/orchestrator.js';
import { runTaskRunJob } from '../src/workflows/task-run.js';

let t: TestApp; let b: Browser;
before(async () => {
  t = await startTestApp();
  await initAdministrator(t.services.db, { email: 'admin@example.test', password: 'admin-password-1', force: false });
  b = new Browser(t, '198.51.100.94');
  assert.equal((await b.login('admin@example.test', 'admin-password-1')).statusCode, 200);
});
after(async () => { await t.close(); });

type Row = { id: string; execution_id: string; attempt: number; task_id: string; path: string; state: string; outputs: unknown; settled: boolean };
const exec = (id: string) => t.services.db.selectFrom('executions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const runs = (id: string) => t.services.db.selectFrom('task_runs').selectAll().where('execution_id', '=', id).orderBy('path').execute() as Promise<Row[]>;
const job = (r: Row) => ({ taskRunId: r.id, executionId: r.execution_id, attempt: r.attempt + 1, instant: true });
const rowsRead = async (id: string) => (await readSnapshot(t.services.db, id))!.runs.length;
/** the index of the innermost iteration holding a path (`0[1]/0[7]/1` -> 7) */
const innermost = (path: string) => Number(path.slice(path.lastIndexOf('[') + 1, path.lastIndexOf(']')));

/**
 * Runs an execution to its end, one queued run at a time, the one `pick` chooses; after each run
 * of task `last` (the end of an iteration), `seen` gets the rows the next step reads.
 */
async function drive(id: string, pick: (queued: Row[]) => Row, last: string, seen: (read: number, ran: Row) => void): Promise<void> {
  await advance(t.services, stepContext(t.services.db), id);
  for (let i = 0; i < 1000; i++) {
    const queued = (await runs(id)).filter((r) => r.state === 'QUEUED');
    if (queued.length === 0) return;
    const r = pick(queued);
    assert.equal(await runTaskRunJob(t.services, stepContext(t.services.db), null, 'w', job(r)), 'SUCCESS');
    if (r.task_id === last) seen(await rowsRead(id), r);
  }
  assert.fail('the execution did not end in 1000 runs');
}

test('a foreach inside a foreach iteration: the rows a step reads stay the same as inner iterations finish, and the iteration around it still sees their outputs', async () => {
  const m = 8;
  const inner = Array.from({ length: m }, (_, i) => i).join(', ');
  await saveFlow(b, 'default', `id: nested\nnamespace: settle\ntasks:
  - id: outer
    type: foreach
    values: ['a', 'b']
    tasks:
      - id: inner
        type: foreach
        values: [${inner}]
        tasks:
          - id: first
            type: if
            condition: "{{ taskrun.index == 0 }}"
            then:
              - id: z
                type: output
                values: { zero: true }
          - id: x
            type: output
            values: { v: '{{ taskrun.value }}' }
          - id: y
            type: output
            values: { w: '{{ outputs.x.v }}' }
      - id: check
        type: if
        condition: "{{ outputs.z.zero }}"
        then:
          - id: seen
            type: output
            values: { last: '{{ outputs.y.w }}', zero: '{{ outputs.z.zero }}' }
  - id: end
    type: output
    values: { n: 1 }
`);
  const id = await run(b, 'default', 'settle', 'nested');
  const reads: number[] = [];
  await drive(id, (q) => q[0], 'y', (read, ran) => { if (innermost(ran.path) < m - 1) reads.push(read); });
  assert.equal(reads.length, 2 * (m - 1));
  // after 1, 2, ... 7 finished inner iterations (in each outer iteration), the same read
  assert.deepEqual(reads, reads.map(() => reads[0]), `rows read as inner iterations finished: ${reads}`);
  const all = await runs(id);
  assert.equal(all.filter((r) => r.task_id === 'y').length, 2 * m);
  assert.ok(all.filter((r) => r.path.includes('[')).every((r) => r.settled), 'every iteration ended settled');
  // the `if` after the inner foreach and the task in its branch see the outputs of settled inner
  // iterations (read back): z ran only in the first one, y's last value in the last one
  assert.deepEqual(all.filter((r) => r.task_id === 'seen').map((r) => r.outputs), [{ last: m - 1, zero: true }, { last: m - 1, zero: true }]);
  const e = await exec(id);
  assert.equal(e.state, 'SUCCESS');
  assert.deepEqual(e.outputs, { end: { n: 1 } });
});

test('iterations finishing out of order are settled at once: the rows a step reads stay the same while the first iteration still runs', async () => {
  const n = 12;
  const values = Array.from({ length: n }, (_, i) => i).join(', ');
  await saveFlow(b, 'default', `id: unordered\nnamespace: settle\ntasks:
  - id: wrap
    type: parallel
    tasks:
      - id: each
        type: foreach
        concurrency: 3
        values: [${values}]
        tasks:
          - id: x
            type: output
            values: { v: '{{ taskrun.value }}' }
  - id: end
    type: output
    values: { n: 1 }
`);
  const id = await run(b, 'default', 'settle', 'unordered');
  const reads: number[] = [];
  // the latest started iteration runs first, so the first ones finish last
  const pick = (q: Row[]) => [...q].sort((p, r) => (r.task_id === 'x' ? innermost(r.path) : -1) - (p.task_id === 'x' ? innermost(p.path) : -1))[0];
  // iterations 0 and 1 run until the end; each of 2 .. n-2 finishing starts the next
  await drive(id, pick, 'x', (read, ran) => { if (innermost(ran.path) >= 2 && innermost(ran.path) < n - 1) reads.push(read); });
  assert.equal(reads.length, n - 3);
  assert.deepEqual(reads, reads.map(() => reads[0]), `rows read as iterations finished behind the first: ${reads}`);
  const xs = (await runs(id)).filter((r) => r.task_id === 'x');
  assert.deepEqual(xs.map((r) => (r.outputs as { v: number }).v).sort((p, q) => p - q), Array.from({ length: n }, (_, i) => i), 'every iteration ran once');
  const e = await exec(id);
  assert.equal(e.state, 'SUCCESS');
  assert.deepEqual(e.outputs, { end: { n: 1 } });
});
