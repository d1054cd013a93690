// Leaf task types. Each returns the task run's outputs or throws TaskFailure; flow control
// (sequential, parallel, if, foreach) is the orchestrator's.
import type { Services } from '../services.js';
import type { ContainerRunner, ContainerTaskSpec, RunCallbacks } from '../runners/types.js';
import type { TaskLog, Level } from './logs.js';
import { MAX_DURATION_MS, parseDuration, type ScriptTaskDef } from './flow.js';
import { taskFileUploader } from './files.js';

export class TaskFailure extends Error {}

export interface TaskEnv {
  services: Services;
  /** the task with its templates rendered */
  task: Record<string, unknown> & { id: string; type: string };
  log: TaskLog;
  signal: AbortSignal;
  ids: { workspaceId: string; executionId: string; taskRunId: string; attempt: number };
  workspace: { workflow_containers: boolean; workflow_plugins: boolean };
  runner: ContainerRunner | null;
  timeoutMs?: number;
}

export type TaskHandler = (env: TaskEnv) => Promise<Record<string, unknown>>;

/** Glob patterns (`*` any characters, `?` one) as in plugin_configurations values. */
export function globMatch(patterns: unknown, value: string): boolean {
  if (!Array.isArray(patterns)) return false;
  return patterns.some((p) => typeof p === 'string'
    && new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(value));
}

/** `values` of the plugin_configurations entry of that type (`script` or `plugins`). */
export function pluginValues(services: Services, type: string): Record<string, unknown> {
  const entry = services.config.workflow.plugin_configurations.find((e) => e.type === type);
  return (entry?.values ?? {}) as Record<string, unknown>;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

const log: TaskHandler = async ({ task, log: out }) => {
  const level = (task.level as Level | undefined) ?? 'INFO';
  const msgs = Array.isArray(task.message) ? task.message : [task.message];
  for (const m of msgs) out.write(level, typeof m === 'string' ? m : JSON.stringify(m));
  return {};
};

const output: TaskHandler = async ({ task }) => (task.values as Record<string, unknown>) ?? {};

const sleepTask: TaskHandler = async ({ task, signal }) => {
  const ms = parseDuration(task.duration as string | number) ?? 0;
  // Refused at save; a flow saved before the limit must not fire at once (setTimeout overflow).
  if (ms > MAX_DURATION_MS) throw new TaskFailure('duration must be at most 24 days (P24D)');
  await sleep(ms, signal);
  return {};
};

const fail: TaskHandler = async ({ task }) => {
  throw new TaskFailure(typeof task.message === 'string' && task.message ? task.message : 'the fail task failed the run');
};

async function runContainer(env: TaskEnv, spec: ContainerTaskSpec, onOutputFile?: RunCallbacks['onOutputFile']): Promise<{ exitCode: number | null; files: Record<string, Uint8Array> }> {
  if (!env.runner) throw new TaskFailure('no container runner: workflow.container_runner is none');
  const res = await env.runner.run(spec, {
    signal: env.signal,
    onLog: (line, stream) => env.log.write(stream === 'stderr' ? 'WARN' : 'INFO', line),
    onOutputFile,
  });
  if (res.outcome === 'timeout') throw new TaskFailure(`timed out after ${Math.round((spec.timeoutMs ?? 0) / 1000)} s`);
  if (res.outcome === 'killed') throw env.signal.reason ?? new TaskFailure('killed');
  return { exitCode: res.exitCode, files: res.outputFiles };
}

/** The runner stops collecting output files at these caps instead of buffering past them. */
function outputLimits(services: Services) {
  const { max_file_bytes: maxFileBytes, max_task_bytes: maxTaskBytes } = services.config.workflow.storage;
  return { maxFileBytes, maxTaskBytes };
}

function labels(env: TaskEnv): Record<string, string> {
  return { 'svc.workspace': env.ids.workspaceId, 'svc.execution': env.ids.executionId, 'svc.task-run': env.ids.taskRunId, 'svc.attempt': String(env.ids.attempt) };
}

const script: TaskHandler = async (env) => {
  const t = env.task as unknown as ScriptTaskDef;
  if (!env.workspace.workflow_containers) throw new TaskFailure('script tasks are off in this workspace: turn on the workflow_containers switch');
  if (!env.runner) throw new TaskFailure('script tasks need a container runner: workflow.container_runner is none');
  if (!globMatch(pluginValues(env.services, 'script')['allowed-images'], t.image)) {
    throw new TaskFailure(`image ${t.image} is not allowed: add a matching pattern to allowed-images of the "script" entry of workflow.plugin_configurations`);
  }
  const body = t.script ?? (t.commands ?? []).join('\n');
  const inputFiles: Record<string, Uint8Array> = {};
  for (const [name, content] of Object.entries(t.inputFiles ?? {})) inputFiles[name] = Buffer.from(String(content));
  // output files go to the object store while the runner reads them, never held whole
  const upload = taskFileUploader(env.services, env.ids);
  const res = await runContainer(env, {
    name: `svc-${env.ids.taskRunId.slice(0, 8)}-${env.ids.attempt}`,
    image: t.image, command: ['/bin/sh', '-c', `set -e\n${body}`], env: t.env ?? {}, inputFiles,
    outputFiles: t.outputFiles ?? [], workingDir: '/work', timeoutMs: env.timeoutMs, delete: t.taskRunner?.delete ?? true,
    resources: t.taskRunner?.resources, labels: labels(env), outputLimits: outputLimits(env.services),
  }, upload.sink).catch(async (e: Error) => {
    await upload.discard(env.services.log);
    throw e;
  });
  if (res.exitCode !== 0) throw new TaskFailure(`the script exited with code ${res.exitCode}`);
  return { exitCode: res.exitCode, outputFiles: upload.stored };
};

/** Plugin tasks run in workflow.plugin_host.image: task.json in, outputs.json out; killed after kill_grace_s. */
const plugin: TaskHandler = async (env) => {
  const { services, task } = env;
  if (!env.workspace.workflow_plugins) throw new TaskFailure('plugin tasks are off in this workspace: turn on the workflow_plugins switch');
  if (!globMatch(pluginValues(services, 'plugins')['allowed-types'], task.type)) {
    throw new TaskFailure(`task type ${task.type} is not allowed: add a matching pattern to allowed-types of the "plugins" entry of workflow.plugin_configurations`);
  }
  const host = services.config.workflow.plugin_host;
  if (!host.image) throw new TaskFailure('workflow.plugin_host.image is not set');
  const res = await runContainer(env, {
    name: `svc-${env.ids.taskRunId.slice(0, 8)}-${env.ids.attempt}`,
    image: host.image, command: ['svc-plugin-host', 'run', task.type],
    env: { JAVA_TOOL_OPTIONS: `-Xmx${host.jvm_max_heap}`, SVC_TASK_TYPE: task.type },
    inputFiles: { 'task.json': Buffer.from(JSON.stringify(task)) }, outputFiles: ['outputs.json'],
    workingDir: '/work', timeoutMs: env.timeoutMs, delete: true, labels: labels(env), killGraceSecs: host.kill_grace_s, outputLimits: outputLimits(services),
  });
  if (res.exitCode !== 0) throw new TaskFailure(`the plugin host exited with code ${res.exitCode}`);
  const raw = res.files['outputs.json'];
  if (!raw) return {};
  try { return JSON.parse(Buffer.from(raw).toString('utf8')) as Record<string, unknown>; } catch { throw new TaskFailure('the plugin host wrote an outputs.json that is not JSON'); }
};

export function handlerFor(type: string): TaskHandler {
  switch (type) {
    case 'log': return log;
    case 'output': return output;
    case 'sleep': return sleepTask;
    case 'fail': return fail;
    case 'script': return script;
    default: return plugin;
  }
}

/** Script and plugin tasks default to container_default_timeout_s; other types are unbounded. */
export function timeoutFor(services: Services, task: { type: string; timeout?: string | number }): number | undefined {
  if (task.timeout !== undefined) { const ms = parseDuration(task.timeout); return ms === null ? undefined : Math.min(ms, MAX_DURATION_MS); }
  if (task.type === 'script' || task.type.includes('.')) return services.config.workflow.container_default_timeout_s * 1000;
  return undefined;
}
