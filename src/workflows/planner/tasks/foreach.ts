// `foreach`: renders its values once (kept in outputs.values; a string is parsed as JSON), then
// runs its tasks in order once per value under `path[k]`, at most `concurrency` iterations at a
// time (default 1, at most workflow.foreach_max_concurrency); at most foreach_max_items values.
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
  // The first `from` iterations finished in earlier steps: their runs are not in the snapshot.
  const from = run.settled_iterations ?? 0;
  const done = new Set<number>();
  const status = await concurrently(list.length, concurrency, w.killing,
    (k) => k < from || w.has(`${base(k)}/0`),
    async (k) => {
      const s = await w.sequence(task.tasks as TaskDef[], base(k), run.id, { value: list[k], index: k });
      if (s === 'done') done.add(k);
      return s;
    }, undefined, from);
  // An outermost foreach settles its finished iterations in order: templates see the runs of an
  // iteration only from inside it (context.ts outputsFor), and nothing runs there again. A nested
  // foreach settles none (its enclosing iteration may still read its runs).
  if (!path.includes('[')) {
    let next = from;
    while (done.has(next)) w.settled(base(next++));
    if (next > from) { run.settled_iterations = next; w.changed(run); }
  }
  return status;
};
