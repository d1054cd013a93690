// The flow model as a JSON Schema (draft 2020-12), for editors' completion of keys and task
// types (any editor that reads JSON Schema for YAML; docs/workflows.md). Derived from the
// zod model in flow.ts, so it changes with it. A task is validated by a transform that dispatches
// on `type` (so problems name the task's own schema), and a transform has no JSON Schema: each
// use of it becomes a reference to `$defs.task`, a core task type or a plugin task.
import { z } from 'zod';
import { coreTask, flowSchema, pluginTask, task } from './flow.js';

type JsonSchema = Record<string, unknown>;

const TASK_REF = '#/$defs/task';

function toJson(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, {
    io: 'input', // what a person writes: fields with defaults are optional
    unrepresentable: 'any',
    override(ctx) {
      if ((ctx.zodSchema as unknown) !== task) return;
      for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[k];
      (ctx.jsonSchema as JsonSchema).$ref = TASK_REF;
    },
  }) as JsonSchema;
}

let cached: JsonSchema | undefined;

/** The JSON Schema of a flow's YAML; a task is one of `$defs.task.anyOf` (core types, then plugins). */
export function flowJsonSchema(): JsonSchema {
  if (cached) return cached;
  const strip = ({ $schema: _s, ...rest }: JsonSchema) => rest;
  const core = strip(toJson(coreTask as z.ZodType));
  const variants = (core.oneOf ?? core.anyOf) as JsonSchema[];
  const plugin = strip(toJson(pluginTask));
  plugin.description = 'A plugin task: a type with a dot (io.example.http.Request), run in plugin_host.image';
  cached = {
    ...toJson(flowSchema),
    $id: 'svc:flow',
    title: 'svc flow',
    $defs: { task: { anyOf: [...variants, plugin] } },
  };
  return cached;
}

/** The core task types, in the model's order. */
export function taskTypes(): string[] {
  const defs = flowJsonSchema().$defs as { task: { anyOf: Array<{ properties: { type: { const?: string } } }> } };
  return defs.task.anyOf.map((v) => v.properties.type.const).filter((t): t is string => typeof t === 'string');
}
