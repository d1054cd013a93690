// Iceberg schemas and data types (spec: "Schemas and Data Types", Appendix C): parsing a schema's
// JSON into checked types, and finding fields by id or by full name. A schema that breaks the
// specification (an unknown type, a duplicate field id or name, a v3 type in a v2 table, an
// identifier field that may be null) is refused with a message naming the field.
import { invalid } from './errors.js';

export type PrimitiveName =
  | 'unknown' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'decimal' | 'date' | 'time'
  | 'timestamp' | 'timestamptz' | 'timestamp_ns' | 'timestamptz_ns' | 'string' | 'uuid' | 'fixed'
  | 'binary' | 'variant' | 'geometry' | 'geography';

export interface PrimitiveType { type: PrimitiveName; precision?: number; scale?: number; length?: number; param?: string }
export interface Field { id: number; name: string; required: boolean; type: IcebergType; doc?: string }
export interface StructType { type: 'struct'; fields: Field[] }
export interface ListType { type: 'list'; elementId: number; elementRequired: boolean; element: IcebergType }
export interface MapType { type: 'map'; keyId: number; key: IcebergType; valueId: number; valueRequired: boolean; value: IcebergType }
export type IcebergType = PrimitiveType | StructType | ListType | MapType;

/** A field anywhere in a schema, by its full dotted name (Java's `Schema#findField`). */
export interface FieldInfo {
  id: number; name: string; type: IcebergType; required: boolean;
  /** inside a list or a map: bounds and partitions never describe such a field */
  repeated: boolean;
  /** this field and every struct around it are required (identifier fields need it) */
  neverNull: boolean;
}

export interface Schema {
  schemaId: number;
  struct: StructType;
  identifierFieldIds: number[];
  byId: Map<number, FieldInfo>;
  byName: Map<string, FieldInfo>;
  /** lower-cased full names; a name two fields share in lower case maps to null (ambiguous) */
  byLowerName: Map<string, FieldInfo | null>;
}

/** The first format version each type is allowed in (spec: "Primitive Types", "variant"). */
const SINCE: Record<PrimitiveName, number> = {
  unknown: 3, boolean: 1, int: 1, long: 1, float: 1, double: 1, decimal: 1, date: 1, time: 1, timestamp: 1,
  timestamptz: 1, timestamp_ns: 3, timestamptz_ns: 3, string: 1, uuid: 1, fixed: 1, binary: 1, variant: 3, geometry: 3, geography: 3,
};
const SIMPLE = new Set<string>(Object.keys(SINCE).filter((k) => !['decimal', 'fixed', 'geometry', 'geography'].includes(k)));
/** Field ids above this are reserved for metadata columns (spec: "Reserved Field IDs"). */
export const MAX_FIELD_ID = 2147483447;
const MAX_DEPTH = 32;

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A primitive type string (`"long"`, `"decimal(9, 2)"`, `"fixed[16]"`), or null if it names none. */
export function parsePrimitive(s: string): PrimitiveType | null {
  const t = s.trim();
  if (SIMPLE.has(t)) return { type: t as PrimitiveName };
  let m = /^decimal\s*\(\s*(\d{1,3})\s*,\s*(-?\d{1,3})\s*\)$/.exec(t);
  if (m) return { type: 'decimal', precision: Number(m[1]), scale: Number(m[2]) };
  m = /^fixed\s*\[\s*(\d{1,10})\s*\]$/.exec(t);
  if (m) return { type: 'fixed', length: Number(m[1]) };
  m = /^(geometry|geography)(?:\s*\((.*)\))?$/.exec(t);
  if (m) return { type: m[1] as PrimitiveName, param: m[2]?.trim() };
  return null;
}

export function typeString(t: IcebergType): string {
  switch (t.type) {
    case 'decimal': return `decimal(${t.precision},${t.scale})`;
    case 'fixed': return `fixed[${t.length}]`;
    case 'geometry': case 'geography': return t.param ? `${t.type}(${t.param})` : t.type;
    case 'struct': return 'struct';
    case 'list': return 'list';
    case 'map': return 'map';
    default: return t.type;
  }
}

export const isPrimitive = (t: IcebergType): t is PrimitiveType => t.type !== 'struct' && t.type !== 'list' && t.type !== 'map';

interface Ctx { formatVersion: number; ids: Set<number>; path: string[] }

function checkId(id: unknown, what: string, c: Ctx): number {
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw invalid(`invalid schema: ${what} needs an integer id >= 0`);
  if (id > MAX_FIELD_ID) throw invalid(`invalid schema: ${what} has id ${id}, above ${MAX_FIELD_ID} (reserved for metadata columns)`);
  if (c.ids.has(id)) throw invalid(`invalid schema: field id ${id} is used twice (${what})`);
  c.ids.add(id);
  return id;
}

function parseTypeIn(v: unknown, what: string, c: Ctx, depth: number): IcebergType {
  if (depth > MAX_DEPTH) throw invalid(`invalid schema: types nest deeper than ${MAX_DEPTH}`);
  if (typeof v === 'string') {
    const p = parsePrimitive(v);
    if (!p) throw invalid(`invalid schema: ${what} has an unknown type "${v.slice(0, 100)}"`);
    if (p.type === 'decimal' && (p.precision! < 1 || p.precision! > 38)) throw invalid(`invalid schema: ${what} is ${v}: decimal precision must be 1 to 38`);
    if (p.type === 'fixed' && p.length! < 1) throw invalid(`invalid schema: ${what} is ${v}: fixed length must be at least 1`);
    if (SINCE[p.type] > c.formatVersion) throw invalid(`invalid schema: ${what} is ${p.type}, which needs format version ${SINCE[p.type]} (the table is v${c.formatVersion})`);
    return p;
  }
  if (!isObj(v)) throw invalid(`invalid schema: ${what} needs a type (a string or an object)`);
  if (v.type === 'struct') return parseStruct(v, what, c, depth + 1);
  if (v.type === 'list') {
    const elementId = checkId(v['element-id'], `the element of ${what}`, c);
    if (typeof v['element-required'] !== 'boolean') throw invalid(`invalid schema: list ${what} needs element-required: true or false`);
    return { type: 'list', elementId, elementRequired: v['element-required'], element: parseTypeIn(v.element, `the element of ${what}`, c, depth + 1) };
  }
  if (v.type === 'map') {
    const keyId = checkId(v['key-id'], `the key of ${what}`, c);
    const valueId = checkId(v['value-id'], `the value of ${what}`, c);
    if (typeof v['value-required'] !== 'boolean') throw invalid(`invalid schema: map ${what} needs value-required: true or false`);
    return { type: 'map', keyId, key: parseTypeIn(v.key, `the key of ${what}`, c, depth + 1), valueId, valueRequired: v['value-required'], value: parseTypeIn(v.value, `the value of ${what}`, c, depth + 1) };
  }
  throw invalid(`invalid schema: ${what} has an unknown type ${JSON.stringify(v.type ?? null).slice(0, 100)}`);
}

function parseStruct(v: Json, what: string, c: Ctx, depth: number): StructType {
  if (!Array.isArray(v.fields)) throw invalid(`invalid schema: struct ${what} needs a fields array`);
  const names = new Set<string>();
  const fields = (v.fields as unknown[]).map((f): Field => {
    if (!isObj(f)) throw invalid(`invalid schema: each field of ${what} must be an object`);
    if (typeof f.name !== 'string' || f.name === '') throw invalid(`invalid schema: a field of ${what} needs a non-empty name`);
    const name = f.name;
    const label = `field ${JSON.stringify(name).slice(0, 200)}`;
    if (names.has(name)) throw invalid(`invalid schema: ${what} has two fields named ${JSON.stringify(name).slice(0, 200)}`);
    names.add(name);
    const id = checkId(f.id, label, c);
    if (typeof f.required !== 'boolean') throw invalid(`invalid schema: ${label} needs required: true or false`);
    if (f.type === undefined) throw invalid(`invalid schema: ${label} needs a type`);
    const type = parseTypeIn(f.type, label, c, depth);
    if (type.type === 'unknown' && f.required) throw invalid(`invalid schema: ${label} is of type unknown, which must be optional`);
    for (const k of ['initial-default', 'write-default']) {
      if (f[k] === undefined || f[k] === null) continue;
      if (c.formatVersion < 3) throw invalid(`invalid schema: ${label} has a ${k}, which needs format version 3 (the table is v${c.formatVersion})`);
      if (['unknown', 'variant', 'geometry', 'geography'].includes(type.type)) throw invalid(`invalid schema: ${label} of type ${type.type} must default to null`);
    }
    return { id, name, required: f.required, type, ...(typeof f.doc === 'string' ? { doc: f.doc } : {}) };
  });
  return { type: 'struct', fields };
}

/** Full names of every field (`a.b`, lists' `element`, maps' `key` / `value` as Java names them). */
function index(struct: StructType): Map<number, FieldInfo> {
  const out = new Map<number, FieldInfo>();
  const walk = (t: IcebergType, prefix: string, repeated: boolean, neverNull: boolean) => {
    if (t.type === 'struct') {
      for (const f of t.fields) {
        const name = prefix ? `${prefix}.${f.name}` : f.name;
        const nn = neverNull && f.required;
        out.set(f.id, { id: f.id, name, type: f.type, required: f.required, repeated, neverNull: nn });
        walk(f.type, name, repeated, nn);
      }
    } else if (t.type === 'list') {
      const name = `${prefix}.element`;
      out.set(t.elementId, { id: t.elementId, name, type: t.element, required: t.elementRequired, repeated: true, neverNull: false });
      walk(t.element, name, true, false);
    } else if (t.type === 'map') {
      out.set(t.keyId, { id: t.keyId, name: `${prefix}.key`, type: t.key, required: true, repeated: true, neverNull: false });
      out.set(t.valueId, { id: t.valueId, name: `${prefix}.value`, type: t.value, required: t.valueRequired, repeated: true, neverNull: false });
      walk(t.key, `${prefix}.key`, true, false);
      walk(t.value, `${prefix}.value`, true, false);
    }
  };
  walk(struct, '', false, true);
  return out;
}

/**
 * A schema's JSON (`{"type":"struct","schema-id":..,"fields":[..]}`) checked for a table of
 * `formatVersion`. Throws an `invalid` IcebergFormatError naming what is wrong. `lenient` is for
 * reading a table someone else wrote: every type of every version is accepted, and identifier
 * fields are not checked (they constrain writers, not readers).
 */
export function parseSchema(json: unknown, formatVersion = 2, lenient = false): Schema {
  if (!isObj(json) || json.type !== 'struct') throw invalid('invalid schema: a schema is a struct with fields');
  const c: Ctx = { formatVersion: lenient ? Number.MAX_SAFE_INTEGER : formatVersion, ids: new Set(), path: [] };
  const struct = parseStruct(json, 'the schema', c, 0);
  const byId = index(struct);
  const byName = new Map<string, FieldInfo>();
  const byLowerName = new Map<string, FieldInfo | null>();
  for (const f of byId.values()) {
    if (byName.has(f.name)) throw invalid(`invalid schema: two fields have the full name ${JSON.stringify(f.name).slice(0, 200)}`);
    byName.set(f.name, f);
    const lower = f.name.toLowerCase();
    byLowerName.set(lower, byLowerName.has(lower) ? null : f);
  }
  const ids = json['identifier-field-ids'] ?? [];
  if (!Array.isArray(ids)) throw invalid('invalid schema: identifier-field-ids must be an array of field ids');
  for (const id of lenient ? [] : ids) {
    const f = byId.get(id as number);
    if (!f) throw invalid(`invalid schema: identifier field id ${String(id)} is not a field of the schema`);
    if (!isPrimitive(f.type) || ['float', 'double', 'unknown', 'variant', 'geometry', 'geography'].includes(f.type.type)) {
      throw invalid(`invalid schema: identifier field ${f.name} must be a primitive type other than float and double, not ${typeString(f.type)}`);
    }
    if (f.repeated || !f.neverNull) throw invalid(`invalid schema: identifier field ${f.name} must be required and not inside an optional struct, a list or a map`);
  }
  const schemaId = typeof json['schema-id'] === 'number' ? json['schema-id'] : 0;
  return { schemaId, struct, identifierFieldIds: ids as number[], byId, byName, byLowerName };
}

/** The field a (full, dotted) name names, honouring case sensitivity; undefined if none or ambiguous. */
export function findField(schema: Schema, name: string, caseSensitive: boolean): FieldInfo | undefined {
  if (caseSensitive) return schema.byName.get(name);
  return schema.byLowerName.get(name.toLowerCase()) ?? undefined;
}

/** Highest field id in a type tree (for last-column-id). */
export function highestFieldId(s: Schema): number {
  let max = 0;
  for (const id of s.byId.keys()) if (id > max) max = id;
  return max;
}
