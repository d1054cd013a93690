// `foreach`: renders its values once (kept in outputs.values; a string is parsed as JSON), then
// runs its tasks in order once per value under `path[k]`, at most `concurrency` iterations at a
// time (default 1, at most workflow.foreach_max_concurrency); at most foreach_max_items values.
//
// Iterations start in index order. Each one that finishes is settled at once, whatever the
// foreach's depth and whatever the order iterations finish in: its runs leave the step's read
// (execution-store.ts). The run's `settled_iterations` is a bound: every iteration below it has
// started, so one below it with no run in the snapshot is settled (done); from it on, an iteration
// without runs has not started. A step therefore visits only the iterations still in the snapshot
// and the next ones to start, never the finished ones.
import type { TaskDef } from '../../flow.js';
import { concurrently } from '../children.js';
import type { FlowableTask } from './index.js';
import { storable } from '../../storable.js';

export const foreachTask: FlowableTask = async (w, task, run, path, iteration) => {
  let values = run.outputs.values as unknown[] | undefined;
  if (!values) {
    let v = await w.render(task.values, run, path, iteration);
    if (typeof v === 'string') { try { v = JSON.parse(v); } catch { /* not JSON: refused just below as not a list */ } }
    if (!Array.isArray(v)) throw new Error(`foreach values must be a list, got ${JSON.stringify(v)?.slice(0, 100)}`);
    const max = w.limits.foreachMaxItems;
    if (v.length > max) throw new Error(`foreach values has ${v.length} items, over workflow.foreach_max_items (${max})`);
    values = storable(v, 'foreach values') as unknown[];
    run.outputs = { values };
    w.changed(run);
  }
  const list = values;
  const base = (k: number) => `${path}[${k}]`;
  const concurrency = Math.min((task.concurrency as number | undefined) ?? 1, w.limits.foreachMaxConcurrency);
  // Visited in index order: the started iterations still in the snapshot, then those from
  // `started` on (the first of them not started yet once the slots are full ends the visit).
  const present = w.iterations(path);
  const started = Math.max(run.settled_iterations ?? 0, present.length > 0 ? present[present.length - 1] + 1 : 0);
  const at = (i: number) => (i < present.length ? present[i] : started + i - present.length);
  let next = started;
  let settled = false;
  const status = await concurrently(present.length + Math.max(0, list.length - started), concurrency, w.killing,
    (i) => i < present.length,
    async (i) => {
      const k = at(i);
      next = Math.max(next, k + 1);
      const s = await w.sequence(task.tasks as TaskDef[], base(k), run.id, { value: list[k], index: k });
      // Nothing runs in a finished iteration again and templates see its runs only from inside
      // it (context.ts outputsFor) or from the iteration around this foreach, whose renders
      // read settled runs back (Walker.render): it leaves the read.
      if (s === 'done') { w.settled(base(k)); settled = true; }
      return s;
    });
  // Settled iterations leave the snapshot, so the bound must cover every started one.
  if (settled && next > (run.settled_iterations ?? 0)) { run.settled_iterations = next; w.changed(run); }
  return status;
};
