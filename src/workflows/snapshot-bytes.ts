// What the step loop's caches hold in memory, estimated cheaply enough for a step: a worker keeps
// the snapshot of each of its steps (orchestrator.ts stepContext), and a snapshot's runs carry
// their outputs, which a task makes as large as it likes. A JSON value is measured once per object
// (its JSON length, at three bytes a character for the object graph around it): runs keep their
// outputs object from step to step, so a step measures only the outputs that are new.
import type { Snapshot } from './planner/types.js';

const measured = new WeakMap<object, number>();

/** Estimated bytes of a JSON value (a value that cannot be measured counts as too large to keep). */
export function valueBytes(v: unknown): number {
  if (typeof v === 'string') return 16 + 2 * v.length;
  if (v === null || typeof v !== 'object') return 16;
  let n = measured.get(v);
  if (n === undefined) {
    try { n = 64 + 3 * (JSON.stringify(v)?.length ?? 0); } catch { n = Number.MAX_SAFE_INTEGER; }
    measured.set(v, n);
  }
  return n;
}

/** A run's fixed part: its object, ids, state, dates and numbers. */
const RUN_BYTES = 480;
/** An execution's fixed part, the cache's entry and the snapshot object. */
const SNAPSHOT_BYTES = 1_024;

export function snapshotBytes(key: string, s: Snapshot): number {
  let n = SNAPSHOT_BYTES + 2 * key.length + valueBytes(s.exec.inputs) + 2 * (s.exec.namespace.length + s.exec.flow_id.length);
  for (const r of s.runs) {
    n += RUN_BYTES + 2 * (r.path.length + r.task_id.length + (r.error?.length ?? 0)) + valueBytes(r.outputs) + valueBytes(r.iteration);
  }
  return n;
}
