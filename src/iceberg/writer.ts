// A new snapshot of a table (used by the engine's INSERT, CTAS and DELETE): given the current
// metadata and the files a statement wrote, it writes a manifest of the new data files, a manifest
// of the new position-delete files, rewrites the manifests that held removed data files (copy-on-
// write), writes a manifest list that carries every other manifest forward, and returns the
// catalog updates (`add-snapshot` with the summary and sequence number, `set-snapshot-ref` main)
// and the requirements (`assert-table-uuid`, `assert-ref-snapshot-id`) to commit with. Bounds and
// partition values come in as typed values and are encoded here (spec Appendix D).
import { randomBytes, randomUUID } from 'node:crypto';
import { IcebergConflictError, invalid, unsupported } from './errors.js';
import { Content, Status, dataSequenceNumber, entrySnapshotId, fileSequenceNumber, type ContentFile, type ManifestEntry, type ManifestFile } from './manifests.js';
import { encodeManifest, encodeManifestList } from './manifest-writer.js';
import { currentSnapshotId, snapshotById, tableInfo, type TableInfo } from './table.js';
import { specOf } from './planner.js';
import { coerceValue, toBytes, type Value } from './values.js';
import { isPrimitive, type Schema } from './types.js';
import { DELETE_FILE_PATH_ID } from './deletes.js';
import { partitionKey } from './deletes.js';
import type { ManifestIO } from './cache.js';
import type { PartitionSpec } from './specs.js';

type Json = Record<string, unknown>;
type Counts = Record<number, number> | Map<number, number>;
type Bounds = Record<number, unknown> | Map<number, unknown>;

export interface NewDataFile {
  path: string;
  sizeBytes: number;
  recordCount: number;
  /** default PARQUET */
  format?: string;
  /** by partition field name, or in the order of the default spec's fields; typed values (see coerceValue) */
  partition?: Record<string, unknown> | unknown[];
  /** per field id */
  columnSizes?: Counts; valueCounts?: Counts; nullValueCounts?: Counts; nanValueCounts?: Counts;
  /** per field id, values of the column's type (bigint micros for timestamps, number days for dates, ...) */
  lowerBounds?: Bounds; upperBounds?: Bounds;
  splitOffsets?: number[];
  sortOrderId?: number;
}

export interface NewPositionDeleteFile {
  path: string; sizeBytes: number; recordCount: number; format?: string;
  partition?: Record<string, unknown> | unknown[];
  /** the data files whose rows it deletes; with one, it becomes `referenced_data_file` */
  dataFiles: string[];
}

export interface SnapshotChange {
  dataFiles?: NewDataFile[];
  positionDeletes?: NewPositionDeleteFile[];
  /** data files to remove (copy-on-write): they must be live in the current snapshot */
  removeDataFiles?: string[];
  /** extra snapshot summary entries (e.g. engine-name) */
  summary?: Record<string, string>;
}

export interface WriterIO extends ManifestIO {
  /** writes a new file (the caller checks the location is the table's) */
  write(location: string, bytes: Uint8Array): Promise<void>;
  now(): number;
}

export interface PreparedCommit {
  snapshotId: bigint;
  requirements: Json[];
  updates: Json[];
  /** every file written for this attempt (manifests, manifest list) */
  written: string[];
}

const MAX_LONG = (1n << 63n) - 1n;

function newSnapshotId(t: TableInfo): bigint {
  for (;;) {
    const id = randomBytes(8).readBigUInt64BE() & MAX_LONG;
    if (id !== 0n && !snapshotById(t, id)) return id;
  }
}

const entriesOf = (x: Counts | Bounds | undefined): Array<[number, unknown]> => (x === undefined ? [] : x instanceof Map ? [...x] : Object.entries(x).map(([k, v]) => [Number(k), v]));

function countsMap(x: Counts | undefined): Map<number, number> | undefined {
  if (x === undefined) return undefined;
  return new Map(entriesOf(x).map(([k, v]) => [k, Number(v)]));
}

function boundsMap(x: Bounds | undefined, schema: Schema, what: string): Map<number, Uint8Array> | undefined {
  if (x === undefined) return undefined;
  const out = new Map<number, Uint8Array>();
  for (const [id, v] of entriesOf(x)) {
    if (v === null || v === undefined) continue;
    const f = schema.byId.get(id);
    if (!f || !isPrimitive(f.type)) throw invalid(`${what}: bound for field id ${id}, which is not a primitive column of the table`);
    out.set(id, toBytes(f.type, coerceValue(f.type, v)));
  }
  return out;
}

function partitionTuple(spec: PartitionSpec, p: NewDataFile['partition'], what: string): Array<Value | null> {
  if (spec.fields.length === 0) {
    if (p && (Array.isArray(p) ? p.length : Object.keys(p).length) > 0) throw invalid(`${what}: the table is not partitioned`);
    return [];
  }
  if (!p) throw invalid(`${what}: the table is partitioned by ${spec.fields.map((f) => f.name).join(', ')}; give the file's partition values`);
  return spec.fields.map((f, i) => {
    const v = Array.isArray(p) ? p[i] : p[f.name];
    if (!Array.isArray(p) && !(f.name in p)) throw invalid(`${what}: no value for partition field ${f.name}`);
    return v === null || v === undefined ? null : coerceValue(f.resultType, v);
  });
}

function checkPath(t: TableInfo, path: string, what: string): void {
  if (typeof path !== 'string' || !path.startsWith(`${t.location.replace(/\/+$/, '')}/`) || path.split('/').includes('..')) {
    throw invalid(`${what} ${String(path).slice(0, 300)} does not lie inside the table location ${t.location}`);
  }
}

/** The live data files of a snapshot's manifests, by path (for deletes and removals). */
async function liveDataFiles(t: TableInfo, manifests: ManifestFile[], io: ManifestIO, wanted: Set<string>): Promise<Map<string, ManifestFile>> {
  const out = new Map<string, ManifestFile>();
  if (wanted.size === 0) return out;
  for (const m of manifests) {
    if (m.content !== 0) continue;
    const man = await io.manifest(m.path, specOf(t, m.specId));
    for (const e of man.entries) if (e.status !== Status.DELETED && wanted.has(e.file.path)) out.set(e.file.path, m);
  }
  return out;
}

function total(parent: Json | undefined, key: string, delta: number): Record<string, string> {
  const prev = parent ? (parent.summary as Record<string, string> | undefined)?.[key] : '0';
  if (prev === undefined || !/^\d+$/.test(prev)) return {};
  return { [key]: String(Number(prev) + delta) };
}

/**
 * Writes the files of a new snapshot of `metadata`'s main branch and returns what to commit. Call
 * it again on the new metadata when the commit loses a race: appends always re-apply; a removal
 * or a delete whose data file is gone by then is an IcebergConflictError.
 */
export async function prepareCommit(metadata: Json, change: SnapshotChange, io: WriterIO): Promise<PreparedCommit> {
  const t = tableInfo(metadata);
  const v = t.formatVersion;
  const adds = change.dataFiles ?? [];
  const dels = change.positionDeletes ?? [];
  const removes = [...new Set(change.removeDataFiles ?? [])];
  if (adds.length + dels.length + removes.length === 0) throw invalid('a snapshot needs files to add, delete or remove');
  if (dels.length > 0 && v < 2) throw unsupported('format v1 tables have no row-level deletes; remove and rewrite data files instead');
  if (dels.length > 0 && v >= 3) throw unsupported('format v3 tables take deletion vectors for row-level deletes, which svc does not write; remove and rewrite data files instead');
  const spec = specOf(t, t.defaultSpecId);
  if (spec.fields.some((f) => f.transform.kind === 'unknown')) throw unsupported(`the partition spec ${spec.specId} has a transform svc does not know; writers may not use it`);
  const schema = t.schemas.get(t.currentSchemaId)!;
  const schemaJson = (((metadata.schemas as Json[] | undefined) ?? []).find((s) => s['schema-id'] === t.currentSchemaId) ?? metadata.schema ?? {}) as Json;
  const parentId = currentSnapshotId(t);
  const parent = parentId === null ? undefined : snapshotById(t, parentId);
  const id = newSnapshotId(t);
  const seq = v >= 2 ? t.lastSequenceNumber + 1 : 0;
  const existing = parent && typeof parent['manifest-list'] === 'string' ? await io.manifestList(parent['manifest-list']) : [];
  const base = t.location.replace(/\/+$/, '');
  const tag = randomUUID();
  const written: string[] = [];
  const newManifests: ManifestFile[] = [];
  const writeManifest = async (content: 0 | 1, entries: ManifestEntry[], mspec: PartitionSpec) => {
    const location = `${base}/metadata/${tag}-m${written.length}.avro`;
    const { bytes, file } = await encodeManifest({ location, formatVersion: v, spec: mspec, schema: schemaJson, content, entries, snapshotId: id, sequenceNumber: seq });
    await io.write(location, bytes);
    written.push(location);
    newManifests.push(file);
  };
  const added = (f: ContentFile): ManifestEntry => ({ status: Status.ADDED, snapshotId: id, sequenceNumber: null, fileSequenceNumber: null, file: f });

  const dataFiles = adds.map((d, i): ContentFile => {
    const what = `data file ${i + 1}`;
    checkPath(t, d.path, what);
    return {
      content: Content.DATA, path: d.path, format: (d.format ?? 'PARQUET').toUpperCase(), specId: spec.specId,
      partition: partitionTuple(spec, d.partition, what), recordCount: d.recordCount, sizeBytes: d.sizeBytes,
      columnSizes: countsMap(d.columnSizes), valueCounts: countsMap(d.valueCounts), nullValueCounts: countsMap(d.nullValueCounts), nanValueCounts: countsMap(d.nanValueCounts),
      lowerBounds: boundsMap(d.lowerBounds, schema, what), upperBounds: boundsMap(d.upperBounds, schema, what),
      ...(d.splitOffsets ? { splitOffsets: d.splitOffsets } : {}), ...(d.sortOrderId !== undefined ? { sortOrderId: d.sortOrderId } : {}),
    };
  });
  if (dataFiles.length > 0) await writeManifest(0, dataFiles.map(added), spec);

  // Deletes and removals name data files that must still be live: a concurrent commit may have removed them.
  const named = new Set([...removes, ...dels.flatMap((d) => d.dataFiles)]);
  const live = await liveDataFiles(t, existing, io, named);
  for (const p of named) if (!live.has(p)) throw new IcebergConflictError(`the data file ${p.slice(0, 300)} is no longer in the table: it changed since the statement read it; run it again`);

  if (dels.length > 0) {
    const files = dels.map((d, i): ContentFile => {
      const what = `position delete file ${i + 1}`;
      checkPath(t, d.path, what);
      if (!Array.isArray(d.dataFiles) || d.dataFiles.length === 0) throw invalid(`${what} names no data file`);
      const paths = [...d.dataFiles].sort();
      const str = { type: 'string' as const };
      return {
        content: Content.POSITION_DELETES, path: d.path, format: (d.format ?? 'PARQUET').toUpperCase(), specId: spec.specId,
        partition: partitionTuple(spec, d.partition, what), recordCount: d.recordCount, sizeBytes: d.sizeBytes,
        lowerBounds: new Map([[DELETE_FILE_PATH_ID, toBytes(str, paths[0])]]), upperBounds: new Map([[DELETE_FILE_PATH_ID, toBytes(str, paths[paths.length - 1])]]),
        ...(paths.length === 1 ? { referencedDataFile: paths[0] } : {}),
      };
    });
    await writeManifest(1, files.map(added), spec);
  }

  // Copy-on-write: each manifest holding a removed file is rewritten, the file marked DELETED.
  const rewritten = new Set<string>();
  let removedRows = 0;
  let removedBytes = 0;
  const removedSet = new Set(removes);
  for (const m of new Set(removes.map((p) => live.get(p)!))) {
    const mspec = specOf(t, m.specId);
    const man = await io.manifest(m.path, mspec);
    let nextRowId = m.firstRowId;
    const entries: ManifestEntry[] = [];
    for (const e of man.entries) {
      let file = e.file;
      if (nextRowId !== null && file.firstRowId === undefined && file.content === 0) { file = { ...file, firstRowId: nextRowId }; nextRowId += BigInt(e.file.recordCount); }
      if (e.status === Status.DELETED) continue;
      const gone = removedSet.has(e.file.path);
      if (gone) { removedRows += e.file.recordCount; removedBytes += e.file.sizeBytes; }
      entries.push({ status: gone ? Status.DELETED : Status.EXISTING, snapshotId: gone ? id : entrySnapshotId(e, m), sequenceNumber: dataSequenceNumber(e, m), fileSequenceNumber: fileSequenceNumber(e, m), file });
    }
    await writeManifest(0, entries, mspec);
    rewritten.add(m.path);
  }

  const kept = existing.filter((m) => !rewritten.has(m.path));
  let firstRowId: bigint | undefined;
  if (v >= 3) {
    firstRowId = BigInt((metadata['next-row-id'] as number | bigint | undefined) ?? 0);
    let next = firstRowId;
    for (const m of newManifests) {
      if (m.content !== 0) continue;
      m.firstRowId = next;
      next += BigInt((m.addedRowsCount ?? 0) + (m.existingRowsCount ?? 0));
    }
  }
  const listLocation = `${base}/metadata/snap-${id}-1-${tag}.avro`;
  await io.write(listLocation, await encodeManifestList(v, { id, parentId, sequenceNumber: seq, firstRowId }, [...newManifests, ...kept]));
  written.push(listLocation);

  const addedRows = dataFiles.reduce((n, f) => n + f.recordCount, 0);
  const addedBytes = dataFiles.reduce((n, f) => n + f.sizeBytes, 0) + dels.reduce((n, d) => n + d.sizeBytes, 0);
  const deletes = dels.reduce((n, d) => n + d.recordCount, 0);
  const partitions = new Set([...dataFiles.map((f) => partitionKey(spec.specId, f.partition)), ...(dels.length ? [''] : [])]);
  const operation = adds.length > 0 && dels.length + removes.length === 0 ? 'append' : adds.length === 0 ? 'delete' : 'overwrite';
  const summary: Record<string, string> = {
    ...change.summary, operation,
    ...(adds.length ? { 'added-data-files': String(adds.length), 'added-records': String(addedRows) } : {}),
    ...(addedBytes ? { 'added-files-size': String(addedBytes) } : {}),
    ...(dels.length ? { 'added-delete-files': String(dels.length), 'added-position-delete-files': String(dels.length), 'added-position-deletes': String(deletes) } : {}),
    ...(removes.length ? { 'deleted-data-files': String(removes.length), 'deleted-records': String(removedRows), 'removed-files-size': String(removedBytes) } : {}),
    'changed-partition-count': String(partitions.size + (removes.length ? 1 : 0)),
    ...total(parent, 'total-records', addedRows - removedRows), ...total(parent, 'total-files-size', addedBytes - removedBytes),
    ...total(parent, 'total-data-files', adds.length - removes.length), ...total(parent, 'total-delete-files', dels.length),
    ...total(parent, 'total-position-deletes', deletes), ...total(parent, 'total-equality-deletes', 0),
  };
  const snapshot: Json = {
    'snapshot-id': id, ...(parentId !== null ? { 'parent-snapshot-id': parentId } : {}), ...(v >= 2 ? { 'sequence-number': seq } : {}),
    'timestamp-ms': io.now(), 'manifest-list': listLocation, summary, 'schema-id': t.currentSchemaId,
    ...(v >= 3 ? { 'added-rows': newManifests.reduce((n, m) => n + (m.content === 0 ? (m.addedRowsCount ?? 0) + (m.existingRowsCount ?? 0) : 0), 0) } : {}),
  };
  return {
    snapshotId: id,
    requirements: [{ type: 'assert-table-uuid', uuid: t.tableUuid }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parentId }],
    updates: [{ action: 'add-snapshot', snapshot }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id }],
    written,
  };
}
