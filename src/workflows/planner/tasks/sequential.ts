// `sequential`: its tasks one after the other.
import type { TaskDef } from '../../flow.js';
import type { FlowableTask } from './index.js';

export const sequentialTask: FlowableTask = (w, task, run, path, iteration) => w.sequence(task.tasks as TaskDef[], path, run.id, iteration);
