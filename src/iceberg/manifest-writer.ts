// Writing manifests and manifest lists in the specification's Avro schemas (manifest-schemas.ts):
// a manifest's entries with the key-value metadata the spec requires (schema, partition spec,
// format version, content), its manifest-list record (entry and row counts, the lowest sequence
// number, partition field summaries), and the manifest list of a snapshot.
import { writeAvro } from './avro.js';
import { avroName, decimalBytes, manifestEntrySchema, manifestFileSchema } from './manifest-schemas.js';
import { Status, type ContentFile, type FieldSummary, type ManifestEntry, type ManifestFile } from './manifests.js';
import type { PartitionSpec } from './specs.js';
import type { PrimitiveType } from './types.js';
import { compareValues, toBytes, uuidToBytes, type Value } from './values.js';

type Json = Record<string, unknown>;

/** Java's default for the deprecated v1 `block_size_in_bytes` (64 MB). */
const V1_BLOCK_SIZE = 64 * 1024 * 1024;

function avroPartitionValue(t: PrimitiveType, v: Value | null): unknown {
  if (v === null) return null;
  switch (t.type) {
    case 'decimal': {
      const size = decimalBytes(t.precision!);
      const b = Buffer.alloc(size, (v as bigint) < 0n ? 0xff : 0);
      const raw = toBytes(t, v);
      Buffer.from(raw).copy(b, size - raw.length);
      return b;
    }
    case 'uuid': return Buffer.from(uuidToBytes(String(v)));
    case 'fixed': case 'binary': return Buffer.from(v as Uint8Array);
    case 'long': case 'time': case 'timestamp': case 'timestamptz': case 'timestamp_ns': case 'timestamptz_ns': return BigInt(v as bigint);
    default: return v;
  }
}

const kv = <T>(m: Map<number, T> | undefined, f: (v: T) => unknown) => (m ? [...m].map(([key, value]) => ({ key, value: f(value) })) : null);

function dataFileRecord(formatVersion: number, spec: PartitionSpec, f: ContentFile): Json {
  const partition: Json = {};
  spec.fields.forEach((p, i) => { partition[avroName(p.name)] = avroPartitionValue(p.resultType, f.partition[i] ?? null); });
  const r: Json = {
    content: f.content, file_path: f.path, file_format: f.format, partition, record_count: f.recordCount, file_size_in_bytes: f.sizeBytes,
    column_sizes: kv(f.columnSizes, (x) => x), value_counts: kv(f.valueCounts, (x) => x), null_value_counts: kv(f.nullValueCounts, (x) => x),
    nan_value_counts: kv(f.nanValueCounts, (x) => x), lower_bounds: kv(f.lowerBounds, (x) => Buffer.from(x)), upper_bounds: kv(f.upperBounds, (x) => Buffer.from(x)),
    key_metadata: f.keyMetadata ? Buffer.from(f.keyMetadata) : null, split_offsets: f.splitOffsets ?? null, equality_ids: f.equalityIds ?? null,
    sort_order_id: f.sortOrderId ?? null, referenced_data_file: f.referencedDataFile ?? null,
    first_row_id: f.firstRowId ?? null, content_offset: f.contentOffset ?? null, content_size_in_bytes: f.contentSizeInBytes ?? null,
  };
  if (formatVersion === 1) r.block_size_in_bytes = V1_BLOCK_SIZE;
  return r;
}

/** Partition field summaries over the partition tuples of `files` (spec "Manifest Lists"). */
export function partitionSummaries(spec: PartitionSpec, files: ContentFile[]): FieldSummary[] {
  return spec.fields.map((p, i) => {
    let containsNull = false;
    let containsNan = false;
    let lo: Value | undefined;
    let hi: Value | undefined;
    for (const f of files) {
      const v = f.partition[i] ?? null;
      if (v === null) { containsNull = true; continue; }
      if (typeof v === 'number' && Number.isNaN(v)) { containsNan = true; continue; }
      if (lo === undefined || compareValues(v, lo) < 0) lo = v;
      if (hi === undefined || compareValues(v, hi) > 0) hi = v;
    }
    const float = p.resultType.type === 'float' || p.resultType.type === 'double';
    const bytes = (v: Value | undefined) => (v === undefined || p.transform.kind === 'unknown' ? null : toBytes(p.resultType, v));
    return { containsNull, containsNan: float ? containsNan : null, lowerBound: bytes(lo), upperBound: bytes(hi) };
  });
}

export interface ManifestToWrite {
  location: string;
  formatVersion: number;
  spec: PartitionSpec;
  /** the table schema's JSON and id, stored in the manifest's metadata */
  schema: Json;
  content: 0 | 1;
  entries: ManifestEntry[];
  /** the snapshot that adds the manifest, and its sequence number (0 in v1) */
  snapshotId: bigint;
  sequenceNumber: number;
}

/** A manifest's bytes and the manifest-list record that points at it. */
export async function encodeManifest(m: ManifestToWrite): Promise<{ bytes: Uint8Array; file: ManifestFile }> {
  const records = m.entries.map((e) => ({
    status: e.status,
    snapshot_id: e.snapshotId,
    ...(m.formatVersion >= 2 ? { sequence_number: e.sequenceNumber, file_sequence_number: e.fileSequenceNumber } : {}),
    data_file: dataFileRecord(m.formatVersion, m.spec, e.file),
  }));
  const meta: Record<string, string> = {
    schema: JSON.stringify(m.schema), 'schema-id': String(m.schema['schema-id'] ?? 0),
    'partition-spec': JSON.stringify(m.spec.fields.map((p) => ({ name: p.name, transform: p.transform.text, 'source-id': p.sourceId, 'field-id': p.fieldId }))),
    'partition-spec-id': String(m.spec.specId), 'format-version': String(m.formatVersion),
    ...(m.formatVersion >= 2 ? { content: m.content === 1 ? 'deletes' : 'data' } : {}),
  };
  const bytes = await writeAvro(manifestEntrySchema(m.formatVersion, m.spec), records, meta);
  const count = (s: Status) => m.entries.filter((e) => e.status === s);
  const rows = (es: ManifestEntry[]) => es.reduce((n, e) => n + e.file.recordCount, 0);
  const live = m.entries.filter((e) => e.status !== Status.DELETED);
  const seqs = live.map((e) => e.sequenceNumber ?? m.sequenceNumber);
  const file: ManifestFile = {
    path: m.location, length: bytes.length, specId: m.spec.specId, content: m.content,
    sequenceNumber: m.sequenceNumber, minSequenceNumber: seqs.length ? Math.min(...seqs) : m.sequenceNumber, addedSnapshotId: m.snapshotId,
    addedFilesCount: count(Status.ADDED).length, existingFilesCount: count(Status.EXISTING).length, deletedFilesCount: count(Status.DELETED).length,
    addedRowsCount: rows(count(Status.ADDED)), existingRowsCount: rows(count(Status.EXISTING)), deletedRowsCount: rows(count(Status.DELETED)),
    partitions: partitionSummaries(m.spec, m.entries.map((e) => e.file)), keyMetadata: null, firstRowId: null,
  };
  return { bytes, file };
}

/** A snapshot's manifest list: `manifests` in order, with the list's metadata keys. */
export async function encodeManifestList(formatVersion: number, snapshot: { id: bigint; parentId: bigint | null; sequenceNumber: number; firstRowId?: bigint }, manifests: ManifestFile[]): Promise<Uint8Array> {
  const records = manifests.map((m) => ({
    manifest_path: m.path, manifest_length: m.length, partition_spec_id: m.specId, content: m.content,
    sequence_number: m.sequenceNumber, min_sequence_number: m.minSequenceNumber, added_snapshot_id: m.addedSnapshotId,
    added_files_count: m.addedFilesCount, existing_files_count: m.existingFilesCount, deleted_files_count: m.deletedFilesCount,
    added_rows_count: m.addedRowsCount, existing_rows_count: m.existingRowsCount, deleted_rows_count: m.deletedRowsCount,
    partitions: m.partitions?.map((s) => ({
      contains_null: s.containsNull, contains_nan: s.containsNan,
      lower_bound: s.lowerBound ? Buffer.from(s.lowerBound) : null, upper_bound: s.upperBound ? Buffer.from(s.upperBound) : null,
    })) ?? null,
    key_metadata: m.keyMetadata ? Buffer.from(m.keyMetadata) : null,
    first_row_id: m.firstRowId,
  }));
  const meta: Record<string, string> = {
    'snapshot-id': String(snapshot.id), 'parent-snapshot-id': snapshot.parentId === null ? 'null' : String(snapshot.parentId),
    'format-version': String(formatVersion),
    ...(formatVersion >= 2 ? { 'sequence-number': String(snapshot.sequenceNumber) } : {}),
    ...(formatVersion >= 3 && snapshot.firstRowId !== undefined ? { 'first-row-id': String(snapshot.firstRowId) } : {}),
  };
  return writeAvro(manifestFileSchema(formatVersion), records, meta);
}
