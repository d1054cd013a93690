// The catalog as a person browses it in the console (issue 17 point 5): a table's or view's
// stored metadata described in plain terms (columns with their types written out, partition
// fields and sort fields with their source column, snapshots with their summary, refs), and the
// names of a listing a person may see. Reads only; the same decision as the Iceberg routes: the
// role first (catalog-common's scope), then the policies on each name.
// Metadata may have been registered from any file of the workspace's warehouse (registerTable
// checks its identity and its location, not its other fields), so every field is read
// defensively: a missing or odd field is shown as absent, never a 500. Browsing reads the stored
// metadata only, never an object: it shows a location, it does not open it.
import type { Services } from '../services.js';
import { requirePolicies, type CatalogCaller } from './access.js';
import { IcebergError } from './errors.js';
import type { Json } from './metadata.js';

/** Snapshots described, newest first; older ones are counted, not sent (a table may hold thousands). */
export const MAX_SNAPSHOTS = 200;
const MAX_TYPE_DEPTH = 32;

const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Json : undefined);
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj).filter((x): x is Json => x !== undefined) : []);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
/** A 64-bit id (a number or, past 2^53, a BigInt from json.ts) as its decimal digits. */
const long = (v: unknown): string | null => (typeof v === 'number' || typeof v === 'bigint' ? String(v) : null);
const iso = (ms: unknown): string | null => {
  const n = typeof ms === 'bigint' ? Number(ms) : num(ms);
  if (n === null) return null;
  const d = new Date(n);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
};
const strings = (v: unknown): Record<string, string> => Object.fromEntries(Object.entries(obj(v) ?? {}).map(([k, x]) => [k, String(x)]));

/** An Iceberg type written out: `long`, `list<string>`, `map<string, int>`, `struct<a: int, b: string>`. */
export function typeText(t: unknown, depth = 0): string {
  if (typeof t === 'string') return t;
  const o = obj(t);
  if (!o || depth > MAX_TYPE_DEPTH) return 'unknown';
  if (o.type === 'list') return `list<${typeText(o.element, depth + 1)}>`;
  if (o.type === 'map') return `map<${typeText(o.key, depth + 1)}, ${typeText(o.value, depth + 1)}>`;
  if (o.type === 'struct') return `struct<${list(o.fields).map((f) => `${String(f.name)}: ${typeText(f.type, depth + 1)}`).join(', ')}>`;
  return 'unknown';
}

export interface Column { id: number | null; name: string; type: string; required: boolean; doc: string | null }

function columns(schema: Json | undefined): Column[] {
  return list(schema?.fields).map((f) => ({ id: num(f.id), name: String(f.name ?? ''), type: typeText(f.type), required: f.required === true, doc: str(f.doc) }));
}

export function describeTable(m: Json) {
  const schemas = list(m.schemas);
  const schema = schemas.find((x) => x['schema-id'] === m['current-schema-id']) ?? obj(m.schema);
  const cols = columns(schema);
  const byId = new Map(cols.filter((c) => c.id !== null).map((c) => [c.id, c.name]));
  const source = (id: unknown) => byId.get(num(id)) ?? null;
  const spec = list(m['partition-specs']).find((x) => x['spec-id'] === m['default-spec-id']);
  const order = list(m['sort-orders']).find((x) => x['order-id'] === m['default-sort-order-id']);
  const all = list(m.snapshots).map((x) => ({
    snapshot_id: long(x['snapshot-id']) ?? '', parent_id: long(x['parent-snapshot-id']), sequence_number: long(x['sequence-number']),
    timestamp: iso(x['timestamp-ms']), operation: str(obj(x.summary)?.operation), summary: strings(x.summary), schema_id: num(x['schema-id']),
  })).sort((a, b) => (b.timestamp ?? '').localeCompare(a.timestamp ?? ''));
  return {
    table_uuid: str(m['table-uuid']), format_version: num(m['format-version']), location: str(m.location),
    last_updated: iso(m['last-updated-ms']), current_snapshot_id: long(m['current-snapshot-id']),
    schema: { schema_id: num(schema?.['schema-id']), columns: cols },
    partition_spec: {
      spec_id: num(spec?.['spec-id']),
      fields: list(spec?.fields).map((f) => ({ name: String(f.name ?? ''), transform: String(f.transform ?? ''), source_id: num(f['source-id']), source: source(f['source-id']), field_id: num(f['field-id']) })),
    },
    sort_order: {
      order_id: num(order?.['order-id']),
      fields: list(order?.fields).map((f) => ({ transform: String(f.transform ?? ''), source_id: num(f['source-id']), source: source(f['source-id']), direction: String(f.direction ?? ''), null_order: String(f['null-order'] ?? '') })),
    },
    properties: strings(m.properties),
    snapshots: all.slice(0, MAX_SNAPSHOTS),
    snapshots_total: all.length,
    refs: Object.entries(obj(m.refs) ?? {}).map(([name, r]) => ({ name, type: str(obj(r)?.type) ?? 'branch', snapshot_id: long(obj(r)?.['snapshot-id']) ?? '' }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

export function describeView(m: Json) {
  const versions = list(m.versions);
  const current = versions.find((v) => v['version-id'] === m['current-version-id']);
  const schema = list(m.schemas).find((x) => x['schema-id'] === current?.['schema-id']);
  const ns = current?.['default-namespace'];
  return {
    view_uuid: str(m['view-uuid']), format_version: num(m['format-version']), location: str(m.location),
    version_id: num(current?.['version-id']), versions: versions.length, timestamp: iso(current?.['timestamp-ms']),
    default_namespace: Array.isArray(ns) ? ns.map(String) : [], default_catalog: str(current?.['default-catalog']),
    summary: strings(current?.summary),
    representations: list(current?.representations).filter((r) => r.type === 'sql').map((r) => ({ dialect: String(r.dialect ?? ''), sql: String(r.sql ?? '') })),
    schema: { schema_id: num(schema?.['schema-id']), columns: columns(schema) },
    properties: strings(m.properties),
  };
}

/**
 * Whether the policies let the caller read `name` in `namespace` (or the namespace itself, when
 * `name` is undefined): a listing leaves out what a policy denies `select` on, so the console
 * never shows a name the person could not load.
 */
export async function mayRead(s: Services, caller: CatalogCaller, ws: string, namespace: string[], name?: string): Promise<boolean> {
  try {
    await requirePolicies(s, caller, ws, namespace, name, 'read');
    return true;
  } catch (err) {
    if (err instanceof IcebergError && err.status === 403) return false;
    throw err;
  }
}
