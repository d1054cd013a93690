// Partition specs and sort orders (spec "Partitioning", "Sorting", Appendix C). Two readings:
// - checkPartitionSpec / checkSortOrder: what a catalog accepts in a create or an update (every
//   source is a primitive field of the schema outside lists and maps, each transform is known and
//   valid for its source type, names and field ids are unique); anything else is `invalid`;
// - bindSpec: what a reader makes of a stored spec, lenient as the spec asks (a transform it does
//   not know, or a source column since dropped, is kept and ignored for filtering).
import { invalid } from './errors.js';
import { isPrimitive, typeString, type IcebergType, type PrimitiveType, type Schema } from './types.js';
import { canTransform, parseTransform, resultType, type Transform } from './transforms.js';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface PartitionField {
  fieldId: number; name: string; sourceId: number; transform: Transform;
  /** the source column's type, or undefined when no schema of the table has it any more */
  sourceType?: PrimitiveType;
  resultType: PrimitiveType;
}
export interface PartitionSpec { specId: number; fields: PartitionField[] }

/** The type of a field id in any of the table's schemas (the newest first). */
export type TypeLookup = (id: number) => IcebergType | undefined;

export function schemasLookup(schemas: Schema[]): TypeLookup {
  return (id) => {
    for (let i = schemas.length - 1; i >= 0; i--) {
      const f = schemas[i].byId.get(id);
      if (f) return f.type;
    }
    return undefined;
  };
}

/** A stored spec (`{"spec-id", "fields": [...]}`, or v1's bare field list) as a reader binds it. */
export function bindSpec(json: unknown, lookup: TypeLookup): PartitionSpec {
  const obj = Array.isArray(json) ? { 'spec-id': 0, fields: json } : json;
  if (!isObj(obj) || !Array.isArray(obj.fields)) throw invalid('invalid partition spec: it needs a fields array');
  let next = 1000;
  const fields = (obj.fields as unknown[]).map((f): PartitionField => {
    if (!isObj(f)) throw invalid('invalid partition spec: each field must be an object');
    const sourceId = Array.isArray(f['source-ids']) && f['source-id'] === undefined ? Number(f['source-ids'][0]) : Number(f['source-id']);
    const transform = parseTransform(String(f.transform ?? ''));
    const fieldId = typeof f['field-id'] === 'number' ? f['field-id'] : next;
    next = fieldId + 1;
    const source = lookup(sourceId);
    const usable = source !== undefined && isPrimitive(source) && canTransform(transform, source);
    const bound: Transform = usable ? transform : { kind: transform.kind === 'void' ? 'void' : 'unknown', text: transform.text };
    return {
      fieldId, name: String(f.name ?? ''), sourceId, transform: bound,
      ...(source && isPrimitive(source) ? { sourceType: source } : {}),
      resultType: source ? resultType(transform, source) : { type: 'int' },
    };
  });
  return { specId: typeof obj['spec-id'] === 'number' ? obj['spec-id'] : 0, fields };
}

function sourceOf(schema: Schema, id: unknown, what: string): { type: IcebergType; name: string } {
  if (typeof id !== 'number' || !Number.isInteger(id)) throw invalid(`invalid ${what}: source-id must be an integer`);
  const f = schema.byId.get(id);
  if (!f) throw invalid(`invalid ${what}: source-id ${id} is not a field of the schema`);
  if (f.repeated) throw invalid(`invalid ${what}: source ${f.name} lies inside a list or a map`);
  if (!isPrimitive(f.type)) throw invalid(`invalid ${what}: source ${f.name} is a ${typeString(f.type)}, not a primitive type`);
  return f;
}

function checkTransform(text: unknown, source: { type: IcebergType; name: string }, what: string): Transform {
  if (typeof text !== 'string' || text === '') throw invalid(`invalid ${what}: transform must be a non-empty string`);
  const t = parseTransform(text);
  if (t.kind === 'unknown') throw invalid(`invalid ${what}: unknown transform ${JSON.stringify(text).slice(0, 100)}`);
  if (!canTransform(t, source.type)) throw invalid(`invalid ${what}: transform ${t.text} cannot be applied to ${source.name} of type ${typeString(source.type)}`);
  return t;
}

/**
 * A partition spec a writer proposes, against the schema it partitions: refused (`invalid`) unless
 * it satisfies the specification. Field ids may be absent (the catalog assigns them).
 */
export function checkPartitionSpec(json: unknown, schema: Schema): void {
  if (!isObj(json)) throw invalid('invalid partition spec: it must be an object');
  if (!Array.isArray(json.fields ?? [])) throw invalid('invalid partition spec: fields must be an array');
  const names = new Set<string>();
  const ids = new Set<number>();
  const pairs = new Set<string>();
  for (const f of (json.fields ?? []) as unknown[]) {
    if (!isObj(f)) throw invalid('invalid partition spec: each field must be an object');
    const name = f.name;
    if (typeof name !== 'string' || name === '') throw invalid('invalid partition spec: each field needs a non-empty name');
    const what = `partition field ${JSON.stringify(name).slice(0, 200)}`;
    if (names.has(name)) throw invalid(`invalid partition spec: two fields are named ${JSON.stringify(name).slice(0, 200)}`);
    names.add(name);
    const source = sourceOf(schema, f['source-id'], what);
    const t = checkTransform(f.transform, source, what);
    const clash = schema.byName.get(name);
    // A partition name may be a column's name only for the identity of that very column (Java's rule).
    if (clash && !(t.kind === 'identity' && clash.id === f['source-id'])) throw invalid(`invalid ${what}: the name is a column of the schema, and the field is not the identity of that column`);
    const pair = `${String(f['source-id'])}/${t.text}`;
    if (t.kind !== 'void' && pairs.has(pair)) throw invalid(`invalid ${what}: ${source.name} is already partitioned by ${t.text}`);
    pairs.add(pair);
    if (f['field-id'] !== undefined) {
      const id = f['field-id'];
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw invalid(`invalid ${what}: field-id must be an integer >= 0`);
      if (ids.has(id)) throw invalid(`invalid partition spec: field-id ${id} is used twice`);
      ids.add(id);
    }
  }
}

/** A sort order a writer proposes: every source a primitive column, every transform valid for it. */
export function checkSortOrder(json: unknown, schema: Schema): void {
  if (!isObj(json)) throw invalid('invalid sort order: it must be an object');
  if (!Array.isArray(json.fields ?? [])) throw invalid('invalid sort order: fields must be an array');
  for (const f of (json.fields ?? []) as unknown[]) {
    if (!isObj(f)) throw invalid('invalid sort order: each field must be an object');
    const what = `sort field on source-id ${String(f['source-id'])}`;
    checkTransform(f.transform, sourceOf(schema, f['source-id'], what), what);
  }
}

/** The spec with this id among the table metadata's `partition-specs`. */
export function specById(specs: PartitionSpec[], id: number): PartitionSpec | undefined {
  return specs.find((s) => s.specId === id);
}
