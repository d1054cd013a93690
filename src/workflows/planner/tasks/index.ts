// One module per flowable task type. Each decides its task's status from its children (through
// the rules of ../children.ts) and records in the run's outputs what it decided once (the if
// branch, the foreach values), so later steps repeat no render.
import type { TaskDef } from '../../flow.js';
import type { Iteration, PlanLimits, Render, Run, Status } from '../types.js';
import { sequentialTask } from './sequential.js';
import { parallelTask } from './parallel.js';
import { ifTask } from './if.js';
import { foreachTask } from './foreach.js';

/** What a flowable task type sees of the walk over the task tree. */
export interface Walker {
  /** the execution is being killed: nothing new starts */
  readonly killing: boolean;
  /** caps on foreach items and concurrency */
  readonly limits: PlanLimits;
  /** whether a task run exists at `path` */
  has(path: string): boolean;
  /** a list of tasks run in order under `base` */
  sequence(tasks: TaskDef[], base: string, parentId: string | null, iteration: Iteration | undefined): Promise<Status>;
  /** one task at `path` (created, settled or walked into) */
  task(task: TaskDef, path: string, parentId: string | null, iteration: Iteration | undefined): Promise<Status>;
  /** notes the task at a path not visited in this step */
  note(path: string, task: TaskDef): void;
  /** marks a finished iteration (`path[k]`) of a foreach settled: its runs leave the next read */
  settled(iteration: string): void;
  /** the indexes, ascending, of the iterations of the foreach at `path` with runs in the snapshot */
  iterations(path: string): number[];
  /** renders a template value for the run of a flowable task */
  render: (value: unknown, run: Run, path: string, iteration: Iteration | undefined) => ReturnType<Render>;
  /** marks a run changed in this step */
  changed(run: Run): void;
}

export type FlowableTask = (w: Walker, task: TaskDef & Record<string, unknown>, run: Run, path: string, iteration: Iteration | undefined) => Promise<Status>;

export const FLOWABLE_TASKS: Record<string, FlowableTask> = {
  sequential: sequentialTask,
  parallel: parallelTask,
  if: ifTask,
  foreach: foreachTask,
};
