// The flow model's JSON Schema (src/workflows/flow-schema.ts, served at GET .../flows/schema for
// editors' completion) against the zod model it is derived from: the same task types and
// keys, and the same verdict on sample flows (checked with Ajv, fastify's own JSON Schema
// validator), so a change of the model that the schema does not follow fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { z } from 'zod';
import { CORE_TYPES, coreTask, flowSchema, parseFlow } from '../src/workflows/flow.js';
import { flowJsonSchema, taskTypes } from '../src/workflows/flow-schema.js';

type Props = { properties: Record<string, unknown>; required?: string[] };
const schema = flowJsonSchema() as { properties: Record<string, unknown>; $defs: { task: { anyOf: Props[] } } };

test('every core task type is in the schema with the keys of its zod object, then the plugin task', () => {
  assert.deepEqual(new Set(taskTypes()), CORE_TYPES);
  const variants = ((coreTask as unknown as z.ZodLazy<z.ZodDiscriminatedUnion<z.ZodObject[]>>).unwrap()).options;
  const byType = new Map(schema.$defs.task.anyOf.map((v) => [(v.properties.type as { const?: string }).const, v]));
  for (const v of variants) {
    const type = (v.shape.type as z.ZodLiteral<string>).value;
    assert.deepEqual(Object.keys(byType.get(type)!.properties).sort(), Object.keys(v.shape).sort(), `keys of ${type}`);
  }
  const plugin = schema.$defs.task.anyOf.at(-1)!;
  assert.equal((plugin.properties.type as { pattern?: string }).pattern !== undefined, true, 'the last alternative is the plugin task, by pattern');
  assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(flowSchema.shape).sort());
});

const VALID = [
  'id: a\nnamespace: n\ntasks:\n  - id: t\n    type: log\n    message: hi\n    level: WARN\n',
  'id: a\nnamespace: n\ntasks:\n  - id: p\n    type: parallel\n    concurrency: 2\n    tasks:\n      - id: s\n        type: sleep\n        duration: PT1S\n      - id: c\n        type: if\n        condition: true\n        then:\n          - id: f\n            type: fail\n',
  'id: a\nnamespace: n\ninputs:\n  - id: x\n    type: INT\ntasks:\n  - id: h\n    type: io.example.http.Request\n    uri: https://example.test\ntriggers:\n  - id: c\n    type: schedule\n    cron: "0 * * * *"\n',
];
const INVALID = [
  'id: a\nnamespace: n\ntasks:\n  - id: t\n    type: log\n    message: hi\n    colour: red\n', // a key a log task does not take
  'id: a\nnamespace: n\ntasks:\n  - id: t\n    type: sleep\n', // sleep without duration
  'id: a\nnamespace: n\ntasks:\n  - id: t\n    type: nope\n', // neither a core type nor a plugin type
  'id: a\nnamespace: n\ntasks:\n  - id: p\n    type: sequential\n    tasks:\n      - id: t\n        type: log\n        level: LOUD\n        message: x\n', // nested, bad enum
  'id: a\nnamespace: n\ntasks: []\n', // no task
  'id: a\nnamespace: n\ntasks:\n  - id: t\n    type: log\n    message: hi\ntriggers:\n  - id: c\n    type: schedule\n', // schedule without cron
];

test('the schema and the model agree on sample flows', () => {
  const check = new Ajv2020({ strict: false, allErrors: true }).compile(schema);
  const accepted = (source: string) => { try { parseFlow(source); return true; } catch { return false; } };
  for (const source of VALID) {
    assert.equal(accepted(source), true, `the model accepts:\n${source}`);
    assert.equal(check(parse(source)), true, `the schema accepts:\n${source}\n${JSON.stringify(check.errors)}`);
  }
  for (const source of INVALID) {
    assert.equal(accepted(source), false, `the model refuses:\n${source}`);
    assert.equal(check(parse(source)), false, `the schema refuses:\n${source}`);
  }
});
