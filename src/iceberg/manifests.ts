// Reading manifest lists and manifests of any writer (Java, Spark, Athena, PyIceberg) by field id,
// as the specification asks (names differ between versions and writers; ids do not), and the
// in-memory shapes the planner and the writer share. Sequence numbers and snapshot ids that an
// entry leaves null are inherited from its manifest (spec "Sequence Number Inheritance").
import { invalid } from './errors.js';
import { fieldIds, readAvro, recordOf } from './avro.js';
import type { PartitionSpec } from './specs.js';
import { bigintFromBytes, uuidFromBytes, type Value } from './values.js';
import type { PrimitiveType } from './types.js';

export const Status = { EXISTING: 0, ADDED: 1, DELETED: 2 } as const;
export type Status = 0 | 1 | 2;
export const Content = { DATA: 0, POSITION_DELETES: 1, EQUALITY_DELETES: 2 } as const;
export type Content = 0 | 1 | 2;

export interface FieldSummary { containsNull: boolean; containsNan: boolean | null; lowerBound: Uint8Array | null; upperBound: Uint8Array | null }

/** One record of a manifest list. */
export interface ManifestFile {
  path: string; length: number; specId: number;
  /** 0 data, 1 deletes */
  content: 0 | 1;
  sequenceNumber: number; minSequenceNumber: number; addedSnapshotId: bigint;
  addedFilesCount: number | null; existingFilesCount: number | null; deletedFilesCount: number | null;
  addedRowsCount: number | null; existingRowsCount: number | null; deletedRowsCount: number | null;
  partitions: FieldSummary[] | null; keyMetadata: Uint8Array | null; firstRowId: bigint | null;
}

/** A data or delete file as a manifest describes it (spec "Data File Fields"). */
export interface ContentFile {
  content: Content; path: string; format: string; specId: number;
  /** partition values in the order of the spec's fields (null: a null value) */
  partition: Array<Value | null>;
  recordCount: number; sizeBytes: number;
  columnSizes?: Map<number, number>; valueCounts?: Map<number, number>; nullValueCounts?: Map<number, number>; nanValueCounts?: Map<number, number>;
  lowerBounds?: Map<number, Uint8Array>; upperBounds?: Map<number, Uint8Array>;
  keyMetadata?: Uint8Array; splitOffsets?: number[]; equalityIds?: number[]; sortOrderId?: number;
  firstRowId?: bigint; referencedDataFile?: string; contentOffset?: number; contentSizeInBytes?: number;
}

export interface ManifestEntry {
  status: Status;
  /** null: inherited from the manifest (resolve with `entrySnapshotId`) */
  snapshotId: bigint | null;
  sequenceNumber: number | null;
  fileSequenceNumber: number | null;
  file: ContentFile;
}

export interface Manifest { entries: ManifestEntry[]; meta: Record<string, string>; bytes: number }

type Rec = Record<string, unknown>;
const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const big = (v: unknown): bigint | null => (v === null || v === undefined ? null : BigInt(v as number | bigint));
const bytesOf = (v: unknown): Uint8Array | null => (v instanceof Uint8Array ? v : null);

/** Reads record fields by Iceberg field id: `get(rec, 500)`. */
function byId(schema: unknown): (rec: Rec, id: number) => unknown {
  const ids = fieldIds(schema);
  return (rec, id) => {
    const f = ids.get(id);
    return f ? rec[f.name] : undefined;
  };
}

/** Reads a manifest list. `what` names the file in errors. */
export async function readManifestList(bytes: Uint8Array, what: string): Promise<ManifestFile[]> {
  const file = await readAvro(bytes, what);
  const get = byId(file.schema);
  const partSchema = recordOf((fieldIds(file.schema).get(507)?.type as unknown[] | undefined)?.find((t) => typeof t === 'object' && t !== null) as unknown);
  const summaryItems = (partSchema as { items?: unknown } | null)?.items;
  const getSummary = byId(summaryItems);
  return file.records.map((raw) => {
    const r = raw as Rec;
    const path = get(r, 500);
    if (typeof path !== 'string') throw invalid(`manifest list ${what}: a record has no manifest_path`);
    const parts = get(r, 507) as Rec[] | null | undefined;
    return {
      path, length: Number(get(r, 501)), specId: Number(get(r, 502) ?? 0),
      content: (Number(get(r, 517) ?? 0) === 1 ? 1 : 0) as 0 | 1,
      sequenceNumber: num(get(r, 515)) ?? 0, minSequenceNumber: num(get(r, 516)) ?? 0,
      addedSnapshotId: big(get(r, 503)) ?? 0n,
      addedFilesCount: num(get(r, 504)), existingFilesCount: num(get(r, 505)), deletedFilesCount: num(get(r, 506)),
      addedRowsCount: num(get(r, 512)), existingRowsCount: num(get(r, 513)), deletedRowsCount: num(get(r, 514)),
      partitions: parts ? parts.map((p) => ({
        containsNull: Boolean(getSummary(p, 509)), containsNan: (getSummary(p, 518) as boolean | null | undefined) ?? null,
        lowerBound: bytesOf(getSummary(p, 510)), upperBound: bytesOf(getSummary(p, 511)),
      })) : null,
      keyMetadata: bytesOf(get(r, 519)), firstRowId: big(get(r, 520)),
    };
  });
}

/** An Avro partition value as the in-memory value of its partition type. */
export function partitionValue(t: PrimitiveType, v: unknown): Value | null {
  if (v === null || v === undefined) return null;
  switch (t.type) {
    case 'long': case 'time': case 'timestamp': case 'timestamptz': case 'timestamp_ns': case 'timestamptz_ns':
      return BigInt(v as number | bigint);
    case 'decimal': return v instanceof Uint8Array ? bigintFromBytes(v) : BigInt(v as number);
    case 'uuid': return v instanceof Uint8Array ? uuidFromBytes(v) : String(v);
    case 'fixed': case 'binary': return Uint8Array.from(v as Uint8Array);
    case 'int': case 'date': case 'float': case 'double': return Number(v);
    default: return v as Value;
  }
}

function countMap(v: unknown): Map<number, number> | undefined {
  if (!Array.isArray(v)) return undefined;
  const m = new Map<number, number>();
  for (const kv of v as Array<{ key: number; value: number | bigint }>) m.set(Number(kv.key), Number(kv.value));
  return m;
}
function bytesMap(v: unknown): Map<number, Uint8Array> | undefined {
  if (!Array.isArray(v)) return undefined;
  const m = new Map<number, Uint8Array>();
  for (const kv of v as Array<{ key: number; value: Uint8Array }>) m.set(Number(kv.key), kv.value);
  return m;
}
const mapBytes = (m?: Map<number, unknown>, per = 16) => (m ? m.size * per : 0);

/**
 * Reads a manifest written for `spec` (the table's partition spec with the manifest list's
 * partition_spec_id). Partition values are matched to the spec's fields by field id.
 */
export async function readManifest(bytes: Uint8Array, what: string, spec: PartitionSpec): Promise<Manifest> {
  const file = await readAvro(bytes, what);
  const get = byId(file.schema);
  const dataFileSchema = recordOf(fieldIds(file.schema).get(2)?.type);
  if (!dataFileSchema) throw invalid(`manifest ${what}: no data_file field (id 2)`);
  const getFile = byId(dataFileSchema);
  const partSchema = recordOf(fieldIds(dataFileSchema).get(102)?.type);
  const partIds = fieldIds(partSchema);
  const partNames = spec.fields.map((p) => partIds.get(p.fieldId)?.name);
  let total = 0;
  const entries = file.records.map((raw): ManifestEntry => {
    const r = raw as Rec;
    const d = get(r, 2) as Rec;
    const part = (getFile(d, 102) ?? {}) as Rec;
    const lower = bytesMap(getFile(d, 125));
    const upper = bytesMap(getFile(d, 128));
    const path = getFile(d, 100);
    if (typeof path !== 'string') throw invalid(`manifest ${what}: an entry has no file_path`);
    const f: ContentFile = {
      content: Number(getFile(d, 134) ?? 0) as Content, path, format: String(getFile(d, 101) ?? 'PARQUET'), specId: spec.specId,
      partition: spec.fields.map((p, i) => (partNames[i] === undefined ? null : partitionValue(p.resultType, part[partNames[i]!]))),
      recordCount: Number(getFile(d, 103)), sizeBytes: Number(getFile(d, 104)),
    };
    const opt: Array<[keyof ContentFile, unknown]> = [
      ['columnSizes', countMap(getFile(d, 108))], ['valueCounts', countMap(getFile(d, 109))],
      ['nullValueCounts', countMap(getFile(d, 110))], ['nanValueCounts', countMap(getFile(d, 137))],
      ['lowerBounds', lower], ['upperBounds', upper], ['keyMetadata', bytesOf(getFile(d, 131)) ?? undefined],
      ['splitOffsets', (getFile(d, 132) as unknown[] | null | undefined)?.map(Number)], ['equalityIds', (getFile(d, 135) as unknown[] | null | undefined)?.map(Number)],
      ['sortOrderId', num(getFile(d, 140)) ?? undefined], ['firstRowId', big(getFile(d, 142)) ?? undefined],
      ['referencedDataFile', getFile(d, 143) ?? undefined], ['contentOffset', num(getFile(d, 144)) ?? undefined], ['contentSizeInBytes', num(getFile(d, 145)) ?? undefined],
    ];
    for (const [k, v] of opt) if (v !== undefined) (f as unknown as Rec)[k] = v;
    let boundBytes = 0;
    for (const m of [lower, upper]) if (m) for (const b of m.values()) boundBytes += b.length + 48;
    total += 400 + 2 * path.length + boundBytes + mapBytes(f.columnSizes, 40) * 4;
    return { status: Number(get(r, 0)) as Status, snapshotId: big(get(r, 1)), sequenceNumber: num(get(r, 3)), fileSequenceNumber: num(get(r, 4)), file: f };
  });
  return { entries, meta: file.meta, bytes: total };
}

/** The snapshot that added (or deleted) the entry's file, inherited when the entry leaves it null. */
export const entrySnapshotId = (e: ManifestEntry, m: ManifestFile): bigint => e.snapshotId ?? m.addedSnapshotId;

/**
 * The entry's data sequence number: inherited from the manifest when null and the entry was added
 * in it (or the manifest is v1, sequence 0). An existing entry without one (which the spec does
 * not allow) takes the manifest's lowest: deletes then apply to it rather than miss it.
 */
export function dataSequenceNumber(e: ManifestEntry, m: ManifestFile): number {
  if (e.sequenceNumber !== null) return e.sequenceNumber;
  if (e.status === Status.ADDED || m.sequenceNumber === 0) return m.sequenceNumber;
  return m.minSequenceNumber;
}

export function fileSequenceNumber(e: ManifestEntry, m: ManifestFile): number {
  if (e.fileSequenceNumber !== null) return e.fileSequenceNumber;
  return e.status === Status.ADDED || m.sequenceNumber === 0 ? m.sequenceNumber : m.minSequenceNumber;
}
