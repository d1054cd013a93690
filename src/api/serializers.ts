// fastify's compiled JSON serializer (fast-json-stringify) for routes whose answer is hot: the
// zod serializer of fastify-type-provider-zod re-validates the whole value with zod and then runs
// JSON.stringify, which was the largest cost of GET /api/me. The compiled one writes only the
// declared properties (unknown fields never leave), in a function generated once per schema. It
// does not validate the value: the handler's types are the check (TypeScript, from the same zod
// schema).
import { createRequire } from 'node:module';
import { z } from 'zod';
import type FastJson from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';

const require = createRequire(import.meta.url);

// Generated on the route's first answer, not while `svc serve` starts (issue 27 point 8): the
// JSON Schema conversion and code generation of every such route were paid before it listened,
// and fast-json-stringify (with ajv under it) is loaded then too.
export const compiledSerializer: FastifySerializerCompiler<unknown> = ({ schema }) => {
  let compiled: ((data: unknown) => string) | undefined;
  const fastJson = () => require('fast-json-stringify') as typeof FastJson;
  return (data) => (compiled ??= fastJson()(z.toJSONSchema(schema as z.ZodType, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Parameters<typeof FastJson>[0]) as (data: unknown) => string)(data);
};
