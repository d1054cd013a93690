// `parallel`: its tasks at once, at most `concurrency` running (default: no limit).
import type { TaskDef } from '../../flow.js';
import { concurrently } from '../children.js';
import type { FlowableTask } from './index.js';

export const parallelTask: FlowableTask = (w, task, run, path, iteration) => {
  const tasks = task.tasks as TaskDef[];
  const at = (i: number) => `${path}/${i}`;
  return concurrently(tasks.length, (task.concurrency as number | undefined) ?? Number.MAX_SAFE_INTEGER, w.killing,
    (i) => w.has(at(i)), (i) => w.task(tasks[i], at(i), run.id, iteration), (i) => w.note(at(i), tasks[i]));
};
