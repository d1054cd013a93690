// Schema introspection: walks the zod schema for the environment mapping (env.ts) and the
// generated reference (docs.ts).
import { z } from 'zod';
import { configSchema } from './schema.js';
import type { KeyMeta } from './builders.js';

export type BaseKind =
  | 'object'
  | 'record'
  | 'array'
  | 'string'
  | 'number'
  | 'boolean'
  | 'enum'
  | 'unknown'
  | 'other';

export interface Unwrapped {
  /** The schema under default/prefault/optional wrappers. */
  base: z.ZodType;
  kind: BaseKind;
  optional: boolean;
  meta: Partial<KeyMeta>;
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Strip wrappers, collecting metadata from every layer (outer layers win). */
export function unwrap(schema: z.ZodType): Unwrapped {
  let s = schema;
  let optional = false;
  const layers: Partial<KeyMeta>[] = [];
  for (;;) {
    const m = s.meta() as Partial<KeyMeta> | undefined;
    if (m) layers.push(m);
    const d = defOf(s);
    if (d.type === 'optional') optional = true;
    if (
      (d.type === 'default' || d.type === 'prefault' || d.type === 'optional' ||
        d.type === 'nullable' || d.type === 'readonly' || d.type === 'catch') &&
      d.innerType
    ) {
      s = d.innerType;
      continue;
    }
    if (d.type === 'pipe' && d.in) {
      s = d.in;
      continue;
    }
    break;
  }
  const merged: Partial<KeyMeta> = {};
  for (const m of layers.reverse()) Object.assign(merged, m);
  const t = defOf(s).type;
  const kind: BaseKind = (
    ['object', 'record', 'array', 'string', 'number', 'boolean', 'enum', 'unknown'] as const
  ).includes(t as never)
    ? (t as BaseKind)
    : 'other';
  return { base: s, kind, optional, meta: merged };
}

/** Fields of an object schema (already unwrapped). */
export function shapeOf(base: z.ZodType): Record<string, z.ZodType> {
  return (base as unknown as { shape: Record<string, z.ZodType> }).shape;
}

/** True when an object schema rejects unknown keys. */
export function isStrict(base: z.ZodType): boolean {
  const d = defOf(base) as Def & { catchall?: z.ZodType };
  return d.type === 'object' && d.catchall !== undefined && defOf(d.catchall).type === 'never';
}

/** Value schema of a record schema. */
export function recordValue(base: z.ZodType): z.ZodType {
  return (defOf(base) as Def & { valueType: z.ZodType }).valueType;
}

/** True when a number schema only accepts integers. */
export function isInt(base: z.ZodType): boolean {
  return (base as unknown as { isInt?: boolean }).isInt === true;
}

export interface Leaf {
  /** Path of the key; a record level appears as `<name>` (e.g. `<dialect>`). */
  path: string[];
  schema: z.ZodType;
  info: Unwrapped;
}

/** Every key (scalar, list or free-form table) of the schema, in schema order. */
export function listLeaves(schema: z.ZodType = configSchema): Leaf[] {
  const out: Leaf[] = [];
  const walk = (s: z.ZodType, path: string[]): void => {
    const info = unwrap(s);
    if (info.kind === 'object') {
      for (const [k, v] of Object.entries(shapeOf(info.base))) walk(v, [...path, k]);
      return;
    }
    if (info.kind === 'record') {
      const value = unwrap(recordValue(info.base));
      if (value.kind === 'object') {
        walk(recordValue(info.base), [...path, recordPlaceholder(path)]);
        return;
      }
    }
    out.push({ path, schema: s, info });
  };
  walk(schema, []);
  return out;
}

/** Name shown for the free key of a record (`olap.jdbc_drivers.<dialect>`). */
export function recordPlaceholder(path: string[]): string {
  return path[path.length - 1] === 'jdbc_drivers' ? '<dialect>' : '<name>';
}
