// Flow definitions: YAML with id, namespace, inputs, tasks and triggers (Kestra's shape). Parsing
// and validation name the path and the problem (`tasks[1].tasks[0].message: required`).
import { createRequire } from 'node:module';
import { z } from 'zod';
import { checkTemplates, usesSecrets } from './template.js';
import { MAX_VALUE_DEPTH, valueProblem } from '../util/well-formed.js';

// yaml is loaded on first parse, so building the route tree stays light.
const require = createRequire(import.meta.url);
const parseDocument: typeof import('yaml').parseDocument = (...args) => (require('yaml') as typeof import('yaml')).parseDocument(...args);

export const ID_RE = /^[A-Za-z][A-Za-z0-9_-]{0,99}$/;
// 100 characters: the router takes path parameters up to 100 (maxParamLength), and a namespace
// longer than that could be saved but never addressed.
export const NAMESPACE_RE = /^[a-z0-9][a-z0-9_.-]{0,99}$/;

/** ISO 8601 duration (PT30S, PT1M30S, P1D) or a number of seconds; returns milliseconds. */
export function parseDuration(v: string | number): number | null {
  if (typeof v === 'number') return v >= 0 ? Math.round(v * 1000) : null;
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(v);
  if (!m || v === 'P' || v.endsWith('T')) return null;
  return ((Number(m[1] ?? 0) * 24 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 60_000 + Math.round(Number(m[4] ?? 0) * 1000);
}

/** The longest duration a task may declare: timers past 2^31-1 ms (24.8 days) fire at once. */
export const MAX_DURATION_MS = 24 * 24 * 3600 * 1000;
const idString = z.string().regex(ID_RE, { message: 'must start with a letter and use letters, digits, _ and -, at most 100 characters' });

const duration = z.union([z.string(), z.number()])
  .refine((v) => parseDuration(v) !== null, { message: 'must be an ISO 8601 duration such as PT30S, or seconds' })
  .refine((v) => (parseDuration(v) ?? 0) <= MAX_DURATION_MS, { message: 'must be at most 24 days (P24D)' });

const common = {
  id: idString,
  description: z.string().optional(),
  disabled: z.boolean().optional(),
  timeout: duration.optional(),
  retry: z.object({ maxAttempts: z.number().int().min(1).max(100), interval: duration.optional() }).strict().optional(),
};

export type TaskDef =
  | { id: string; type: 'log'; message: string | string[]; level?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' } & Common
  | { id: string; type: 'output'; values: Record<string, unknown> } & Common
  | { id: string; type: 'sleep'; duration: string | number } & Common
  | { id: string; type: 'fail'; message?: string } & Common
  | { id: string; type: 'sequential'; tasks: TaskDef[] } & Common
  | { id: string; type: 'parallel'; tasks: TaskDef[]; concurrency?: number } & Common
  | { id: string; type: 'if'; condition: string | boolean; then: TaskDef[]; else?: TaskDef[] } & Common
  | { id: string; type: 'foreach'; values: unknown; tasks: TaskDef[]; concurrency?: number } & Common
  | ScriptTaskDef
  | PluginTaskDef;

interface Common { description?: string; disabled?: boolean; timeout?: string | number; retry?: { maxAttempts: number; interval?: string | number } }

export type ScriptTaskDef = {
  id: string; type: 'script'; image: string; commands?: string[]; script?: string;
  env?: Record<string, string>; inputFiles?: Record<string, string>; outputFiles?: string[];
  taskRunner?: { delete?: boolean; resources?: { request?: Record<string, string>; limit?: Record<string, string> } };
} & Common;

/** A plugin task: any type with a dot (`io.example.http.Request`), run in `plugin_host.image`. */
export type PluginTaskDef = { id: string; type: string; [prop: string]: unknown } & Common;

export const FLOWABLE = new Set(['sequential', 'parallel', 'if', 'foreach']);
/** Leaf types that finish at once in the worker's process: claimed and recorded in one step, with no lease. */
export const INSTANT = new Set(['log', 'output', 'fail']);
export const CORE_TYPES = new Set(['log', 'output', 'sleep', 'fail', 'script', ...FLOWABLE]);

const taskList: z.ZodType<TaskDef[]> = z.lazy(() => z.array(task).min(1, { message: 'must list at least one task' }));
const resources = z.object({ cpu: z.string().optional(), memory: z.string().optional(), ephemeral_storage: z.string().optional() }).strict();

export const coreTask = z.lazy(() => z.discriminatedUnion('type', [
  z.object({ ...common, type: z.literal('log'), message: z.union([z.string(), z.array(z.string())]), level: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR']).optional() }).strict(),
  z.object({ ...common, type: z.literal('output'), values: z.record(z.string(), z.unknown()) }).strict(),
  z.object({ ...common, type: z.literal('sleep'), duration }).strict(),
  z.object({ ...common, type: z.literal('fail'), message: z.string().optional() }).strict(),
  z.object({ ...common, type: z.literal('sequential'), tasks: taskList }).strict(),
  z.object({ ...common, type: z.literal('parallel'), tasks: taskList, concurrency: z.number().int().min(1).optional() }).strict(),
  z.object({ ...common, type: z.literal('if'), condition: z.union([z.string(), z.boolean()]), then: taskList, else: taskList.optional() }).strict(),
  z.object({ ...common, type: z.literal('foreach'), values: z.union([z.string(), z.array(z.unknown())]), tasks: taskList, concurrency: z.number().int().min(1).optional() }).strict(),
  z.object({
    ...common, type: z.literal('script'), image: z.string().min(1),
    commands: z.array(z.string()).min(1).optional(), script: z.string().min(1).optional(),
    env: z.record(z.string(), z.string()).optional(), inputFiles: z.record(z.string(), z.string()).optional(),
    outputFiles: z.array(z.string()).optional(),
    taskRunner: z.object({ delete: z.boolean().optional(), resources: z.object({ request: resources.optional(), limit: resources.optional() }).strict().optional() }).strict().optional(),
  }).strict().refine((t) => Boolean(t.commands) !== Boolean(t.script), { message: 'a script task has either commands or script', path: ['commands'] }),
]));

export const pluginTask = z.object({ ...common, type: z.string().regex(/^[a-z][\w-]*(\.[\w-]+)+$/i, { message: 'unknown task type (core types: log, output, sleep, fail, sequential, parallel, if, foreach, script; plugin types contain a dot)' }) }).passthrough();

// Dispatch on `type` so a core task's problems are reported against its own schema. (A transform
// has no JSON Schema: flow-schema.ts describes a task as coreTask or pluginTask instead.)
export const task: z.ZodType<TaskDef> = z.lazy(() => z.unknown().transform((v, ctx) => {
  const type = (v as { type?: unknown } | null)?.type;
  const schema = typeof type === 'string' && CORE_TYPES.has(type) ? coreTask : pluginTask;
  const r = (schema as z.ZodType).safeParse(v);
  if (r.success) return r.data as TaskDef;
  for (const issue of r.error.issues) ctx.addIssue({ ...(issue as object), path: issue.path } as never);
  return z.NEVER;
})) as never;

const input = z.object({
  id: idString,
  type: z.enum(['STRING', 'INT', 'FLOAT', 'BOOLEAN', 'JSON']).default('STRING'),
  required: z.boolean().default(false),
  defaults: z.unknown().optional(),
  description: z.string().optional(),
}).strict();

const trigger = z.discriminatedUnion('type', [
  z.object({ id: idString, type: z.literal('schedule'), cron: z.string().min(1), timezone: z.string().default('UTC'), inputs: z.record(z.string(), z.unknown()).optional(), disabled: z.boolean().optional() }).strict(),
  z.object({
    id: idString, type: z.literal('flow'), disabled: z.boolean().optional(), inputs: z.record(z.string(), z.unknown()).optional(),
    conditions: z.object({ namespace: z.string().optional(), flowId: z.string().optional(), states: z.array(z.enum(['SUCCESS', 'FAILED', 'KILLED'])).min(1).default(['SUCCESS']) }).strict(),
  }).strict(),
  z.object({ id: idString, type: z.literal('webhook'), key: z.string().min(16, { message: 'must be at least 16 characters (it is the only credential of the webhook)' }).max(256, { message: 'must be at most 256 characters' }), disabled: z.boolean().optional() }).strict(),
]);

export const flowSchema = z.object({
  id: idString,
  namespace: z.string().regex(NAMESPACE_RE, { message: 'must be lower-case letters, digits, ".", "_" and "-", at most 100 characters' }),
  description: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  inputs: z.array(input).default([]),
  tasks: taskList,
  triggers: z.array(trigger).default([]),
}).strict();

export type FlowDef = z.output<typeof flowSchema>;
export type TriggerDef = FlowDef['triggers'][number];
export type InputDef = FlowDef['inputs'][number];

export interface ValidationProblem { path: string; message: string }

export class FlowValidationError extends Error {
  constructor(readonly problems: ValidationProblem[]) {
    super(problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; '));
  }
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let cur = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[p];
  }
  return cur;
}

function issuePath(path: PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

/** Walks every task (depth first) with its path in the YAML. */
export function* walkTasks(tasks: TaskDef[], path = 'tasks'): Generator<{ task: TaskDef; path: string }> {
  for (let i = 0; i < tasks.length; i++) {
    const t = tasks[i];
    const p = `${path}[${i}]`;
    yield { task: t, path: p };
    const anyT = t as Record<string, unknown>;
    for (const key of ['tasks', 'then', 'else']) {
      if (Array.isArray(anyT[key])) yield* walkTasks(anyT[key] as TaskDef[], `${p}.${key}`);
    }
  }
}

/** Alias references a flow may make (yaml's own default, 100, counts differently and throws). */
export const MAX_YAML_ALIASES = 100;

/**
 * The YAML document as plain data, or a FlowValidationError: syntax errors, more than
 * MAX_YAML_ALIASES alias references (a "billion laughs" document), nesting deeper than
 * MAX_VALUE_DEPTH, text PostgreSQL cannot store, and a stack overflow of the parser itself.
 */
function loadYaml(source: string): unknown {
  const invalid = (message: string) => new FlowValidationError([{ path: '', message: `invalid YAML: ${message}` }]);
  let raw: unknown;
  try {
    const doc = parseDocument(source, { prettyErrors: false, uniqueKeys: true });
    if (doc.errors.length) {
      const e = doc.errors[0];
      // yaml reports its own stack overflow as a document error
      if (/call stack/i.test(e.message)) throw new RangeError(e.message);
      const line = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : '';
      throw invalid(`${e.message.split('\n')[0]}${line}`);
    }
    raw = doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (e) {
    if (e instanceof FlowValidationError) throw e;
    if (e instanceof RangeError) throw invalid(`the document nests too deeply (at most ${MAX_VALUE_DEPTH} levels)`);
    if (e instanceof ReferenceError && /alias/i.test(e.message)) throw invalid(`too many alias references (at most ${MAX_YAML_ALIASES})`);
    throw invalid('the document cannot be read');
  }
  const bad = valueProblem(raw);
  if (bad) throw new FlowValidationError([{ path: bad.where, message: bad.problem }]);
  return raw;
}

export interface ParsedFlow { def: FlowDef; usesSecrets: boolean }

/** Parses and validates a flow's YAML source. Throws FlowValidationError with every problem found. */
export function parseFlow(source: string): ParsedFlow {
  const raw = loadYaml(source);
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new FlowValidationError([{ path: '', message: 'a flow is a YAML mapping with id, namespace and tasks' }]);
  const parsed = flowSchema.safeParse(raw);
  if (!parsed.success) {
    throw new FlowValidationError(parsed.error.issues.slice(0, 20).map((i) => ({
      path: issuePath(i.path), message: i.code !== 'unrecognized_keys' && valueAt(raw, i.path) === undefined ? 'required' : i.message,
    })));
  }
  const def = parsed.data;
  const problems: ValidationProblem[] = [];
  const seen = new Map<string, string>();
  for (const { task, path } of walkTasks(def.tasks)) {
    const prev = seen.get(task.id);
    if (prev) problems.push({ path: `${path}.id`, message: `duplicate task id "${task.id}" (also at ${prev})` });
    seen.set(task.id, path);
  }
  const triggerIds = new Set<string>();
  def.triggers.forEach((t, i) => {
    if (triggerIds.has(t.id)) problems.push({ path: `triggers[${i}].id`, message: `duplicate trigger id "${t.id}"` });
    triggerIds.add(t.id);
  });
  const inputIds = new Set<string>();
  def.inputs.forEach((inp, i) => {
    if (inputIds.has(inp.id)) problems.push({ path: `inputs[${i}].id`, message: `duplicate input id "${inp.id}"` });
    inputIds.add(inp.id);
  });
  const tpl = checkTemplates(def.tasks, 'tasks');
  if (tpl) problems.push(tpl);
  if (problems.length) throw new FlowValidationError(problems);
  return { def, usesSecrets: usesSecrets(def.tasks) || usesSecrets(def.triggers) };
}

/** Coerces execution inputs to the declared types, applying defaults; throws on a bad or missing input. */
export function resolveInputs(defs: InputDef[], given: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const problems: ValidationProblem[] = [];
  for (const d of defs) {
    let v = given[d.id];
    if (v === undefined || v === null || v === '') v = d.defaults;
    if (v === undefined) {
      if (d.required) problems.push({ path: `inputs.${d.id}`, message: 'required' });
      continue;
    }
    const coerced = coerce(d.type, v);
    if (coerced === INVALID) problems.push({ path: `inputs.${d.id}`, message: `expected ${d.type}` });
    else out[d.id] = coerced;
  }
  for (const k of Object.keys(given)) if (!defs.some((d) => d.id === k)) problems.push({ path: `inputs.${k}`, message: 'is not an input of this flow' });
  if (problems.length) throw new FlowValidationError(problems);
  return out;
}

const INVALID = Symbol('invalid');
function coerce(type: InputDef['type'], v: unknown): unknown {
  switch (type) {
    case 'STRING': return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : INVALID;
    case 'INT': { const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v; return Number.isInteger(n) ? n : INVALID; }
    case 'FLOAT': { const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v; return typeof n === 'number' && Number.isFinite(n) ? n : INVALID; }
    case 'BOOLEAN': return typeof v === 'boolean' ? v : v === 'true' ? true : v === 'false' ? false : INVALID;
    case 'JSON': if (typeof v === 'string') { try { return JSON.parse(v); } catch { return INVALID; } } return v;
  }
}
