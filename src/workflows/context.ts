// The template context of a task run and the functions templates may call.
import type { Services } from '../services.js';
import type { FlowDef } from './flow.js';
import type { TemplateFunctions } from './template.js';
import { readWorkflowSecret } from './secrets.js';
import { readNamespaceFile } from './files.js';
import { TemplateError } from './template.js';

export interface RunView { id: string; task_id: string; path: string; state: string; outputs: Record<string, unknown>; iteration: unknown }
export interface ExecutionView { id: string; workspace_id: string; namespace: string; flow_id: string; flow_revision: number; inputs: Record<string, unknown>; created_at: Date }

/** `outputs.<taskId>` of finished task runs; inside a foreach iteration its own siblings win. */
export function outputsFor(runs: RunView[], iterationPrefix?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const ordered = [...runs].sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  for (const r of ordered) if (r.state === 'SUCCESS' && !r.path.includes('[')) out[r.task_id] = r.outputs;
  if (iterationPrefix) for (const r of ordered) if (r.state === 'SUCCESS' && r.path.startsWith(iterationPrefix)) out[r.task_id] = r.outputs;
  return out;
}

/** The path of the innermost foreach iteration holding a run (`2[3]/0` -> `2[3]`), if any. */
export function iterationPrefix(path: string): string | undefined {
  return path.includes('[') ? path.slice(0, path.lastIndexOf(']') + 1) : undefined;
}

/**
 * The iteration whose settled runs a template at `path` may see but a snapshot of `runs` lacks:
 * a template sees its innermost iteration's runs, and a foreach inside that iteration that
 * settled some of its own (planner/tasks/foreach.ts) left them out of the snapshot. Undefined
 * when the snapshot holds all it may see (runs outside iterations are never settled).
 */
export function settledUnder(path: string, runs: Iterable<{ path: string; settled_iterations?: number }>): string | undefined {
  const prefix = iterationPrefix(path);
  if (prefix === undefined) return undefined;
  for (const r of runs) if ((r.settled_iterations ?? 0) > 0 && r.path.startsWith(`${prefix}/`)) return prefix;
  return undefined;
}

export function templateContext(exec: ExecutionView, def: FlowDef, runs: RunView[], run?: { id: string; path: string; iteration: unknown; attempt?: number }): Record<string, unknown> {
  const it = run?.iteration as { value?: unknown; index?: number } | null | undefined;
  const prefix = run ? iterationPrefix(run.path) : undefined;
  return {
    inputs: exec.inputs,
    outputs: outputsFor(runs, prefix),
    execution: { id: exec.id, startDate: exec.created_at.toISOString() },
    flow: { id: def.id, namespace: def.namespace, revision: exec.flow_revision },
    taskrun: run ? { id: run.id, value: it?.value, index: it?.index, attempt: run.attempt ?? 0 } : {},
    labels: def.labels ?? {},
  };
}

/** `revealed` collects the secret values a render used, so task logs can mask them. */
export function templateFunctions(services: Services, exec: ExecutionView, revealed?: Set<string>): TemplateFunctions {
  return {
    secret: async (name) => {
      const v = await readWorkflowSecret(services, exec.workspace_id, name);
      if (v === null) throw new TemplateError(`secret('${name}') is not defined in this workspace`);
      if (v.length >= 4) revealed?.add(v);
      return v;
    },
    read: (path) => readNamespaceFile(services, exec.workspace_id, exec.namespace, path, services.config.workflow.storage.max_read_bytes),
  };
}
