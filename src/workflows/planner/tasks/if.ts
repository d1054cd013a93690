// `if`: renders its condition once (kept in outputs.branch and outputs.condition), then runs the
// `then` or `else` list in order; no list for the branch taken: done.
import type { TaskDef } from '../../flow.js';
import { truthy } from '../../template.js';
import type { FlowableTask } from './index.js';

export const ifTask: FlowableTask = async (w, task, run, path, iteration) => {
  let branch = run.outputs.branch as 'then' | 'else' | undefined;
  if (!branch) {
    const value = await w.render(task.condition, run, path, iteration);
    branch = truthy(value) ? 'then' : 'else';
    run.outputs = { branch, condition: truthy(value) };
    w.changed(run);
  }
  const list = (branch === 'then' ? task.then : task.else) as TaskDef[] | undefined;
  if (!list) return 'done';
  return w.sequence(list, `${path}/${branch}`, run.id, iteration);
};
