// The Iceberg REST catalog specification this catalog implements (iceberg-rest-catalog-open-api.yaml
// beside this file: apache/iceberg open-api/, Apache-2.0, commit 7f879b11366e17a676a03f15247a821751415529).
// `svc openapi` describes the catalog's request and answer bodies with the specification's own
// schemas (written in OpenAPI 3.0, converted to 3.1 on the way: `nullable`), so a client generated
// from our document speaks the specification's types. The route schemas themselves stay loose: catalog bodies are parsed with exact 64-bit integers (json.ts)
// and checked by the catalog, whose errors are the specification's, not a schema validator's.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// yaml (about 70 modules) is loaded when the document is built, not by every `svc serve` start.
const require = createRequire(import.meta.url);

type Obj = Record<string, any>;
let cached: Obj | undefined;

/** The specification, parsed once (read only when a document is built, or by tests). */
export function icebergSpec(): Obj {
  cached ??= (require('yaml') as typeof import('yaml')).parse(readFileSync(new URL('./iceberg-rest-catalog-open-api.yaml', import.meta.url), 'utf8')) as Obj;
  return cached;
}

/** Our component name of the specification's schema `name` (kept apart from the service's own). */
export const icebergSchemaName = (name: string) => `iceberg.${name}`;
const SCHEMAS = '#/components/schemas/';

/**
 * An OpenAPI 3.0 schema object's `nullable` in 3.1's words (JSON Schema): `type: [t, "null"]`
 * (and null among an `enum`'s values), or, without a type, `anyOf` with `{type: "null"}`. The
 * specification is written in 3.0; our document is 3.1, where `nullable` is no keyword.
 * A boolean `nullable` is the keyword; a property of that name is a schema (an object).
 */
function withoutNullable(o: Obj): Obj {
  if (typeof o.nullable !== 'boolean') return o;
  const { nullable, ...rest } = o;
  if (!nullable) return rest;
  if (typeof rest.type === 'string' || Array.isArray(rest.type)) {
    const types = [rest.type].flat();
    if (!types.includes('null')) rest.type = [...types, 'null'];
    if (Array.isArray(rest.enum) && !rest.enum.includes(null)) rest.enum = [...rest.enum, null];
    return rest;
  }
  const { description, ...schema } = rest;
  return { ...(description === undefined ? {} : { description }), anyOf: [schema, { type: 'null' }] };
}

/** A copy of `v` in OpenAPI 3.1 terms, with every reference to a schema of the specification renamed to ours. */
function renamed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(renamed);
  if (v && typeof v === 'object') return withoutNullable(Object.fromEntries(Object.entries(v).map(([k, x]) => [k, renamed(x)])));
  // $ref values and discriminator mappings.
  if (typeof v === 'string' && v.startsWith(SCHEMAS)) return SCHEMAS + icebergSchemaName(v.slice(SCHEMAS.length));
  return v;
}

/** The JSON body schema of a request body or response of the specification (following its components). */
function bodySchema(spec: Obj, r: Obj | undefined): unknown {
  let o = r;
  if (typeof o?.$ref === 'string') {
    const [, , kind, name] = (o.$ref as string).split('/');
    o = spec.components?.[kind]?.[name];
  }
  return o?.content?.['application/json']?.schema;
}

/**
 * Puts the specification's schemas into `doc` (components `iceberg.<Name>`) and, on every catalog
 * operation, its request body and success answers; error answers are `IcebergErrorResponse`, the
 * wrapped shape every client reads (the specification names the bare ErrorModel in a few places).
 */
export function withIcebergSchemas(doc: { paths?: Record<string, Record<string, Obj>>; components?: Obj }): void {
  const spec = icebergSpec();
  const catalogPaths = Object.keys(doc.paths ?? {}).filter((p) => p.startsWith('/catalog/v1/'));
  if (catalogPaths.length === 0) return;
  const error = { $ref: `${SCHEMAS}IcebergErrorResponse` };
  for (const path of catalogPaths) {
    const theirs = spec.paths[path.slice('/catalog'.length)] as Record<string, Obj> | undefined;
    if (!theirs) continue;
    for (const [method, op] of Object.entries(doc.paths![path])) {
      const their = theirs[method];
      if (!their) continue;
      const request = bodySchema(spec, their.requestBody);
      const reqJson = op.requestBody?.content?.['application/json'];
      if (request && reqJson) reqJson.schema = renamed(request);
      for (const [status, res] of Object.entries((op.responses ?? {}) as Record<string, Obj>)) {
        const json = res.content?.['application/json'];
        if (!json) continue;
        const schema = status.startsWith('2') ? bodySchema(spec, their.responses?.[status]) : error;
        if (schema) json.schema = renamed(schema);
      }
    }
  }
  const schemas = Object.fromEntries(Object.entries(spec.components.schemas as Obj).map(([name, s]) => [icebergSchemaName(name), renamed(s)]));
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, ...schemas } };
}
