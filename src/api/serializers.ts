// fastify's compiled JSON serializer (fast-json-stringify) for routes whose answer is hot: the
// zod serializer of fastify-type-provider-zod re-validates the whole value with zod and then runs
// JSON.stringify, which was the largest cost of GET /api/me. The compiled one writes only the
// declared properties (unknown fields never leave), in a function generated once per schema. It
// does not validate the value: the handler's types are the check (TypeScript, from the same zod
// schema).
import { z } from 'zod';
import fastJson from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';

// Generated on the route's first answer, not while `svc serve` starts (issue 27 point 8): the
// JSON Schema conversion and code generation of every such route were paid before it listened.
export const compiledSerializer: FastifySerializerCompiler<unknown> = ({ schema }) => {
  let compiled: ((data: unknown) => string) | undefined;
  return (data) => (compiled ??= fastJson(z.toJSONSchema(schema as z.ZodType, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Parameters<typeof fastJson>[0]) as (data: unknown) => string)(data);
};
