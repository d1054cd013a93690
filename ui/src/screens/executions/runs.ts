// Task runs of an execution as the execution page shows them: in tree order (each parent then its
// children, by start), with their depth, and named by task id and, for a foreach iteration, its
// value (`crunch · eu`, not `crunch ["eu"]`).
import type { Body } from '../../api/types';

export type Execution = Body<'/workflows/v1/{ws}/executions/{id}', 'get'>;
export type TaskRun = Execution['task_runs'][number];

/** A foreach value in words: strings as they are, numbers and booleans as written, lists and objects by their values. */
export function iterationText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map(iterationText).join(', ');
  if (typeof v === 'object') return Object.values(v as Record<string, unknown>).map(iterationText).join(', ');
  return String(v);
}

/** A run's name: its task id, and for a foreach iteration (`{ value, index }`) the value. */
export function runName(r: TaskRun): string {
  const it = r.iteration as { value?: unknown } | null | undefined;
  if (it === null || it === undefined) return r.task_id;
  return `${r.task_id} · ${iterationText(typeof it === 'object' && 'value' in it ? it.value : it)}`;
}

export function depthOf(run: TaskRun, byId: Map<string, TaskRun>): number {
  let d = 0;
  for (let p = run.parent_id; p && d < 50; p = byId.get(p)?.parent_id ?? null) d++;
  return d;
}

/** Task runs in tree order: each parent followed by its children (by start time). */
export function treeOrder(runs: TaskRun[]): TaskRun[] {
  const kids = new Map<string | null, TaskRun[]>();
  for (const r of runs) kids.set(r.parent_id, [...(kids.get(r.parent_id) ?? []), r]);
  const out: TaskRun[] = [];
  const visit = (parent: string | null, depth: number) => {
    if (depth > 50) return;
    for (const r of kids.get(parent) ?? []) { out.push(r); visit(r.id, depth + 1); }
  };
  visit(null, 0);
  return out.length === runs.length ? out : runs;
}

/** The state shown on a task of the topology: its run's, or for several runs (foreach iterations) the worst. */
const RANK = ['FAILED', 'KILLED', 'KILLING', 'RUNNING', 'RETRYING', 'QUEUED', 'CREATED', 'SUCCESS'];
export function taskStates(runs: TaskRun[]): Map<string, { state: string; runs: number }> {
  const out = new Map<string, { state: string; runs: number }>();
  for (const r of runs) {
    const had = out.get(r.task_id);
    const state = !had ? r.state : RANK.indexOf(r.state) >= 0 && (RANK.indexOf(r.state) < RANK.indexOf(had.state) || RANK.indexOf(had.state) < 0) ? r.state : had.state;
    out.set(r.task_id, { state, runs: (had?.runs ?? 0) + 1 });
  }
  return out;
}
