// A table's metadata JSON as a reader needs it (schemas, partition specs, snapshots, refs, the
// snapshot log), and choosing the snapshot a scan reads: the current snapshot of `main`, a branch
// or tag, a snapshot id, or the snapshot that was current at a point in time (Trino's
// `FOR TIMESTAMP AS OF`: the newest snapshot-log entry at or before it; spec Appendix F).
import { invalid, notFound } from './errors.js';
import { parseSchema, type Schema } from './types.js';
import { bindSpec, schemasLookup, type PartitionSpec } from './specs.js';

type Json = Record<string, unknown>;

export interface TableInfo {
  formatVersion: number;
  location: string;
  tableUuid: string;
  schemas: Map<number, Schema>;
  currentSchemaId: number;
  specs: Map<number, PartitionSpec>;
  defaultSpecId: number;
  snapshots: Json[];
  refs: Record<string, Json>;
  snapshotLog: Array<{ timestampMs: number; snapshotId: bigint }>;
  lastSequenceNumber: number;
  properties: Record<string, string>;
  raw: Json;
}

export const toId = (v: unknown): bigint | null => {
  if (v === null || v === undefined) return null;
  try { return BigInt(v as string | number | bigint); } catch { throw invalid(`not a snapshot id: ${String(v).slice(0, 40)}`); }
};

const parsed = new WeakMap<object, TableInfo>();

/** Reads (once per metadata object) what planning and writing need from table metadata JSON. */
export function tableInfo(meta: Json): TableInfo {
  const hit = parsed.get(meta);
  if (hit) return hit;
  const formatVersion = Number(meta['format-version'] ?? 1);
  const schemaList = (Array.isArray(meta.schemas) ? meta.schemas : meta.schema ? [meta.schema] : []) as Json[];
  if (schemaList.length === 0) throw invalid('table metadata has no schema');
  const schemas = new Map<number, Schema>();
  for (const s of schemaList) {
    const schema = parseSchema(s, formatVersion, true);
    schemas.set(schema.schemaId, schema);
  }
  const currentSchemaId = typeof meta['current-schema-id'] === 'number' ? meta['current-schema-id'] : [...schemas.keys()][0];
  const lookup = schemasLookup([...schemas.values()].sort((a, b) => a.schemaId - b.schemaId).filter((s) => s.schemaId !== currentSchemaId).concat(schemas.get(currentSchemaId) ?? []));
  const specList = (Array.isArray(meta['partition-specs']) ? meta['partition-specs'] : [{ 'spec-id': 0, fields: meta['partition-spec'] ?? [] }]) as Json[];
  const specs = new Map<number, PartitionSpec>();
  for (const s of specList) { const spec = bindSpec(s, lookup); specs.set(spec.specId, spec); }
  const info: TableInfo = {
    formatVersion, location: String(meta.location ?? ''), tableUuid: String(meta['table-uuid'] ?? ''),
    schemas, currentSchemaId, specs, defaultSpecId: typeof meta['default-spec-id'] === 'number' ? meta['default-spec-id'] : 0,
    snapshots: (meta.snapshots ?? []) as Json[], refs: (meta.refs ?? {}) as Record<string, Json>,
    snapshotLog: ((meta['snapshot-log'] ?? []) as Json[]).map((e) => ({ timestampMs: Number(e['timestamp-ms']), snapshotId: toId(e['snapshot-id'])! })),
    lastSequenceNumber: Number(meta['last-sequence-number'] ?? 0),
    properties: (meta.properties ?? {}) as Record<string, string>,
    raw: meta,
  };
  parsed.set(meta, info);
  return info;
}

export function snapshotById(t: TableInfo, id: bigint): Json | undefined {
  return t.snapshots.find((s) => toId(s['snapshot-id']) === id);
}

/** Which snapshot a scan reads: at most one of these; none means the current snapshot of `main`. */
export interface SnapshotSelection {
  /** a branch or tag name */
  ref?: string;
  snapshotId?: bigint | number | string;
  /** milliseconds since the epoch */
  asOfTimestampMs?: number;
  /**
   * Read with the schema the snapshot was written with (true) or the table's current schema
   * (false). Default as Java's SnapshotUtil.schemaFor and Trino: true for a snapshot id, a time or
   * a tag; false for a branch and for the current snapshot.
   */
  useSnapshotSchema?: boolean;
  /** Read with this schema of the table, whatever the snapshot (a plan task keeps its plan's schema). */
  schemaId?: number;
}

export interface Selected { snapshot: Json | null; snapshotId: bigint | null; schema: Schema }

/** The main branch's snapshot id, or null for a table without snapshots. */
export function currentSnapshotId(t: TableInfo): bigint | null {
  const main = t.refs.main?.['snapshot-id'] ?? t.raw['current-snapshot-id'];
  const id = toId(main);
  return id === null || id === -1n ? null : id;
}

export function selectSnapshot(t: TableInfo, sel: SnapshotSelection): Selected {
  const given = [sel.ref, sel.snapshotId, sel.asOfTimestampMs].filter((x) => x !== undefined && x !== null).length;
  if (given > 1) throw invalid('name at most one of a ref, a snapshot id and a point in time');
  let id: bigint | null;
  let snapshotSchema = false;
  if (sel.snapshotId !== undefined && sel.snapshotId !== null) {
    id = toId(sel.snapshotId);
    snapshotSchema = true;
  } else if (sel.ref !== undefined && sel.ref !== null) {
    const ref = t.refs[sel.ref];
    if (!ref) {
      if (sel.ref !== 'main') throw notFound(`Cannot find ref ${JSON.stringify(sel.ref).slice(0, 200)}`);
      id = currentSnapshotId(t);
    } else {
      id = toId(ref['snapshot-id']);
      snapshotSchema = ref.type === 'tag';
    }
  } else if (sel.asOfTimestampMs !== undefined && sel.asOfTimestampMs !== null) {
    const at = sel.asOfTimestampMs;
    if (!Number.isFinite(at)) throw invalid('the point in time must be a number of milliseconds');
    let best: { timestampMs: number; snapshotId: bigint } | undefined;
    for (const e of t.snapshotLog) if (e.timestampMs <= at && (!best || e.timestampMs >= best.timestampMs)) best = e;
    if (!best) throw notFound(`No version history of the table at or before ${new Date(at).toISOString()}`);
    id = best.snapshotId;
    snapshotSchema = true;
  } else {
    id = currentSnapshotId(t);
  }
  const current = t.schemas.get(t.currentSchemaId)!;
  if (id === null) return { snapshot: null, snapshotId: null, schema: current };
  const snapshot = snapshotById(t, id);
  if (!snapshot) throw notFound(`Cannot find snapshot with ID ${id}`);
  const useSnap = sel.useSnapshotSchema ?? snapshotSchema;
  const sid = snapshot['schema-id'];
  if (sel.schemaId !== undefined && !t.schemas.has(sel.schemaId)) throw notFound(`Cannot find schema with ID ${sel.schemaId}`);
  const schema = sel.schemaId !== undefined ? t.schemas.get(sel.schemaId)! : useSnap && typeof sid === 'number' && t.schemas.has(sid) ? t.schemas.get(sid)! : current;
  return { snapshot, snapshotId: id, schema };
}
