// Length limits of a flow's names and metadata, checked when a flow is saved or validated
// (flows.ts validateSource), not by parseFlow: stored revisions are parsed again to run them, and
// one saved before these limits must still load. Ids (100) and namespaces (100) are bounded by
// the model's own patterns, the webhook key (256) by its schema. Content (log messages, scripts,
// commands, env values, input file contents, output values, defaults, plugin properties) has no
// limit of its own: the 1 MiB request body bounds it, and templates have TEMPLATE_LIMITS.
import { walkTasks, type FlowDef, type ValidationProblem } from './flow.js';

/** The most characters of each free string of a flow (docs/workflows.md, "Limits of a flow"). */
export const FLOW_STRING_LIMITS = {
  /** the flow's, a task's and an input's description */
  description: 10_000,
  labelKey: 100,
  labelValue: 1_000,
  /** a plugin task's type (`io.example.http.Request`) */
  taskType: 200,
  /** a script task's image reference */
  image: 512,
  /** an `if` task's condition */
  condition: 10_000,
  /** a script task's env variable names */
  envName: 256,
  /** inputFiles names and outputFiles entries: an object key is at most 1,024 bytes */
  fileName: 1_024,
  /** taskRunner.resources values (`500m`, `1Gi`) */
  resource: 64,
  /** a schedule trigger's cron expression */
  cron: 256,
  /** a schedule trigger's time zone; the longest IANA name has 32 characters */
  timezone: 64,
  /** a flow trigger's conditions.namespace and conditions.flowId, as long as a namespace or id */
  conditionName: 100,
} as const;

type Limit = keyof typeof FLOW_STRING_LIMITS;

/** Every string of `def` over its limit, with its path, at most 20 (as parseFlow reports). */
export function lengthProblems(def: FlowDef): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const check = (path: string, value: unknown, limit: Limit) => {
    const max = FLOW_STRING_LIMITS[limit];
    if (typeof value === 'string' && value.length > max) problems.push({ path, message: `must be at most ${max} characters (it has ${value.length})` });
  };
  check('description', def.description, 'description');
  for (const [k, v] of Object.entries(def.labels ?? {})) {
    if (k.length > FLOW_STRING_LIMITS.labelKey) problems.push({ path: 'labels', message: `a label name must be at most ${FLOW_STRING_LIMITS.labelKey} characters (one has ${k.length})` });
    else check(`labels.${k}`, v, 'labelValue');
  }
  def.inputs.forEach((inp, i) => check(`inputs[${i}].description`, inp.description, 'description'));
  for (const { task, path } of walkTasks(def.tasks)) {
    const t = task as Record<string, unknown>;
    check(`${path}.description`, t.description, 'description');
    check(`${path}.type`, t.type, 'taskType');
    if (t.type === 'if') check(`${path}.condition`, t.condition, 'condition');
    if (t.type !== 'script') continue;
    check(`${path}.image`, t.image, 'image');
    for (const k of Object.keys((t.env ?? {}) as object)) if (k.length > FLOW_STRING_LIMITS.envName) problems.push({ path: `${path}.env`, message: `a variable name must be at most ${FLOW_STRING_LIMITS.envName} characters (one has ${k.length})` });
    for (const k of Object.keys((t.inputFiles ?? {}) as object)) if (k.length > FLOW_STRING_LIMITS.fileName) problems.push({ path: `${path}.inputFiles`, message: `a file name must be at most ${FLOW_STRING_LIMITS.fileName} characters (one has ${k.length})` });
    ((t.outputFiles ?? []) as string[]).forEach((f, i) => check(`${path}.outputFiles[${i}]`, f, 'fileName'));
    const res = (t.taskRunner as { resources?: Record<string, Record<string, string> | undefined> } | undefined)?.resources ?? {};
    for (const [side, values] of Object.entries(res)) for (const [k, v] of Object.entries(values ?? {})) check(`${path}.taskRunner.resources.${side}.${k}`, v, 'resource');
  }
  def.triggers.forEach((t, i) => {
    const at = `triggers[${i}]`;
    if (t.type === 'schedule') { check(`${at}.cron`, t.cron, 'cron'); check(`${at}.timezone`, t.timezone, 'timezone'); }
    if (t.type === 'flow') { check(`${at}.conditions.namespace`, t.conditions.namespace, 'conditionName'); check(`${at}.conditions.flowId`, t.conditions.flowId, 'conditionName'); }
  });
  return problems.slice(0, 20);
}
