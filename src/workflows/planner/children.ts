// How a flowable task's status follows from its children's, written once:
//   inOrder      sequential lists (a sequential task, an if branch, a foreach iteration, the
//                flow itself): the first child not done decides, later ones wait
//   concurrently parallel and foreach: at most `concurrency` children run; none starts after one
//                failed or was killed, or while the execution is being killed
import type { Status } from './types.js';

/** Visits children in order until one is not done; its status is the list's. */
export async function inOrder(count: number, visit: (i: number) => Promise<Status>): Promise<Status> {
  for (let i = 0; i < count; i++) {
    const s = await visit(i);
    if (s !== 'done') return s;
  }
  return 'done';
}

/**
 * Visits every started child and starts more while fewer than `concurrency` run; a child not
 * started that may not start yet is pending (`pend` is told). Running children keep the task
 * running; then a killed child, or a kill with children pending, makes it killed; then a failed
 * child, failed; children still pending keep it running.
 */
export async function concurrently(
  count: number, concurrency: number, killing: boolean,
  started: (i: number) => boolean, visit: (i: number) => Promise<Status>, pend?: (i: number) => void,
): Promise<Status> {
  let running = 0; let failed = false; let killed = false; let pending = 0;
  for (let i = 0; i < count; i++) {
    if (!started(i) && (running >= concurrency || failed || killed || killing)) {
      // Without `pend`, children start in order (foreach): once the slots are full none after
      // this one has started, so the visit stops here and a step's cost does not grow with them.
      if (!pend && running >= concurrency) { pending += count - i; break; }
      pending++; pend?.(i); continue;
    }
    const s = await visit(i);
    if (s === 'running') running++;
    else if (s === 'failed') failed = true;
    else if (s === 'killed') killed = true;
  }
  if (running > 0) return 'running';
  if (killed || (killing && pending > 0)) return 'killed';
  if (failed) return 'failed';
  return pending > 0 ? 'running' : 'done';
}
