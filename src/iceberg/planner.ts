// Scan planning (spec "Scan Planning"): from table metadata and a scan's options to the files a
// reader reads, each with the delete files that apply to it and the residual filter it must still
// check. Pure logic over a ManifestIO (bytes come from an injected reader, through a cache).
//
//   prepareScan: snapshot and schema, the bound filter, the manifest list pruned by file counts
//                and partition summaries (reads the manifest list only);
//   planFiles:   reads delete manifests into a DeleteIndex, then data manifests (all, or slices
//                of them for one plan task), keeps live entries whose partition and column
//                bounds may match, and attaches deletes and residuals.
//   planScan:    both.
import { invalid } from './errors.js';
import { bindFilter, type Expr } from './expressions.js';
import { mayMatchMetrics, partitionMatches, summariesMayMatch, type PartExpr } from './evaluate.js';
import { project, residual } from './projection.js';
import { dataSequenceNumber, entrySnapshotId, fileSequenceNumber, Status, type ContentFile, type ManifestEntry, type ManifestFile } from './manifests.js';
import { DeleteIndex, partitionKey, type DeleteFileRef } from './deletes.js';
import { selectSnapshot, snapshotById, tableInfo, toId, type SnapshotSelection, type TableInfo } from './table.js';
import { findField, type Schema } from './types.js';
import type { PartitionSpec } from './specs.js';
import type { ManifestIO } from './cache.js';

type Json = Record<string, unknown>;

export interface ScanOptions extends SnapshotSelection {
  /** an Iceberg REST `Expression` (JSON); absent: every row */
  filter?: unknown;
  /** column names (full, dotted names for nested fields); absent: every column */
  select?: string[];
  /** how `filter` and `select` match names (default true) */
  caseSensitive?: boolean;
  /**
   * An incremental append scan (REST start-snapshot-id / end-snapshot-id): the data files that
   * `append` snapshots after `start` (exclusive) up to `end` (inclusive) added. Deletes do not apply.
   */
  incremental?: { start: bigint | number | string; end: bigint | number | string };
  signal?: AbortSignal;
  /** Called with each data manifest's kept data files as soon as it is read (a reader starts fetching them). */
  onFiles?: OnFiles;
}

/** The data files planning keeps from one manifest, before the plan is complete. */
export type OnFiles = (files: ContentFile[]) => void;

export interface FileScanTask {
  file: ContentFile;
  spec: PartitionSpec;
  dataSequenceNumber: number;
  fileSequenceNumber: number;
  /** v3 row lineage: the file's first row id, inherited when the manifest entry leaves it null */
  firstRowId?: bigint;
  /** indexes into the plan's `deleteFiles` */
  deletes: number[];
  /** what the reader must still check for this file's rows (true: nothing) */
  residual: Expr;
  /** where the entry sits: `dataManifests[manifest]`, entry `entry` (to resume a plan task) */
  position: { manifest: number; entry: number };
}

export interface Prepared {
  table: TableInfo;
  snapshot: Json | null;
  snapshotId: bigint | null;
  /** the schema to read with (the snapshot's or the table's, see SnapshotSelection) */
  schema: Schema;
  /** field ids of the selected columns, in the order named (all top-level columns without `select`) */
  projection: number[];
  filter: Expr;
  /** live data manifests after pruning, and every delete manifest that may apply */
  dataManifests: ManifestFile[];
  deleteManifests: ManifestFile[];
  /** manifests skipped by file counts or partition summaries */
  skippedManifests: number;
  /** incremental scans: the snapshots whose appended files are read */
  appendSnapshots?: Set<bigint>;
}

export interface ScanPlan extends Prepared {
  tasks: FileScanTask[];
  deleteFiles: DeleteFileRef[];
  /** data files read from manifests and dropped by partition values or column bounds */
  skippedFiles: number;
}

/** A part of a data manifest: entries [from, to) of `manifests[index]` (a plan task's unit). */
export interface ManifestSlice { index: number; from: number; to: number }

const CONCURRENT_READS = 8;

function projectionOf(schema: Schema, select: string[] | undefined, caseSensitive: boolean): number[] {
  if (!select) return schema.struct.fields.map((f) => f.id);
  return select.map((name) => {
    const f = findField(schema, name, caseSensitive);
    if (!f) throw invalid(`no column named ${JSON.stringify(name).slice(0, 200)} in the schema${caseSensitive ? '' : ' (case-insensitive)'}`);
    return f.id;
  });
}

/** Snapshot ids from `end` back to (not including) `start`, along parents; only appends count. */
function appendsBetween(t: TableInfo, start: bigint, end: bigint): Set<bigint> {
  const out = new Set<bigint>();
  let id: bigint | null = end;
  while (id !== null && id !== start) {
    const s = snapshotById(t, id);
    if (!s) throw invalid(`snapshot ${start} is not an ancestor of snapshot ${end}`);
    if ((s.summary as Json | undefined)?.operation === 'append') out.add(id);
    id = toId(s['parent-snapshot-id']);
  }
  if (id === null) throw invalid(`snapshot ${start} is not an ancestor of snapshot ${end}`);
  return out;
}

function manifestsOf(t: TableInfo, snapshot: Json, io: ManifestIO): Promise<ManifestFile[]> {
  if (typeof snapshot['manifest-list'] === 'string') return io.manifestList(snapshot['manifest-list']);
  // format v1 without a manifest list: bare manifest locations
  const paths = Array.isArray(snapshot.manifests) ? (snapshot.manifests as string[]) : [];
  const id = toId(snapshot['snapshot-id'])!;
  return Promise.resolve(paths.map((path): ManifestFile => ({
    path, length: 0, specId: t.defaultSpecId, content: 0, sequenceNumber: 0, minSequenceNumber: 0, addedSnapshotId: id,
    addedFilesCount: null, existingFilesCount: null, deletedFilesCount: null, addedRowsCount: null, existingRowsCount: null,
    deletedRowsCount: null, partitions: null, keyMetadata: null, firstRowId: null,
  })));
}

export function specOf(t: TableInfo, id: number): PartitionSpec {
  const spec = t.specs.get(id);
  if (!spec) throw invalid(`a manifest names partition spec ${id}, which the table metadata does not have`);
  return spec;
}

/** The first step of planning: reads the manifest list, nothing more. */
export async function prepareScan(metadata: Json, opts: ScanOptions, io: ManifestIO): Promise<Prepared> {
  const table = tableInfo(metadata);
  const caseSensitive = opts.caseSensitive ?? true;
  let sel = selectSnapshot(table, opts);
  let appendSnapshots: Set<bigint> | undefined;
  if (opts.incremental) {
    if (opts.snapshotId !== undefined || opts.ref !== undefined || opts.asOfTimestampMs !== undefined) throw invalid('an incremental scan names no other snapshot');
    const end = toId(opts.incremental.end)!;
    sel = selectSnapshot(table, { snapshotId: end, useSnapshotSchema: opts.useSnapshotSchema ?? true, schemaId: opts.schemaId });
    appendSnapshots = appendsBetween(table, toId(opts.incremental.start)!, end);
  }
  const filter = bindFilter(opts.filter, sel.schema, caseSensitive);
  const projection = projectionOf(sel.schema, opts.select, caseSensitive);
  const base = { table, snapshot: sel.snapshot, snapshotId: sel.snapshotId, schema: sel.schema, projection, filter, appendSnapshots };
  if (!sel.snapshot || filter.op === 'false') return { ...base, dataManifests: [], deleteManifests: [], skippedManifests: 0 };
  const all = await manifestsOf(table, sel.snapshot, io);
  const projected = new Map<number, PartExpr>();
  const partFilter = (specId: number) => {
    let p = projected.get(specId);
    if (!p) { p = project(filter, specOf(table, specId), 'inclusive'); projected.set(specId, p); }
    return p;
  };
  const live = (m: ManifestFile) => !(m.addedFilesCount === 0 && m.existingFilesCount === 0);
  const dataManifests: ManifestFile[] = [];
  const deleteManifests: ManifestFile[] = [];
  let skipped = 0;
  for (const m of all) {
    const keep = live(m) && summariesMayMatch(partFilter(m.specId), m.partitions)
      && (!appendSnapshots || (m.content === 0 && m.addedFilesCount !== 0 && appendSnapshots.has(m.addedSnapshotId)));
    if (!keep) { skipped++; continue; }
    (m.content === 1 ? deleteManifests : dataManifests).push(m);
  }
  return { ...base, dataManifests, deleteManifests: appendSnapshots ? [] : deleteManifests, skippedManifests: skipped };
}

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
async function mapLimited<T, R>(items: T[], limit: number, fn: (x: T) => Promise<R>, signal?: AbortSignal): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      signal?.throwIfAborted();
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

async function deleteIndex(p: Prepared, io: ManifestIO, signal?: AbortSignal): Promise<DeleteIndex> {
  const refs: DeleteFileRef[] = [];
  const read = await mapLimited(p.deleteManifests, CONCURRENT_READS, async (m) => ({ m, man: await io.manifest(m.path, specOf(p.table, m.specId)) }), signal);
  for (const { m, man } of read) {
    const spec = specOf(p.table, m.specId);
    const part = project(p.filter, spec, 'inclusive');
    for (const e of man.entries) {
      if (e.status === Status.DELETED || e.file.content === 0) continue;
      if (!partitionMatches(part, e.file.partition)) continue;
      refs.push({ file: e.file, dataSequenceNumber: dataSequenceNumber(e, m), spec });
    }
  }
  return new DeleteIndex(refs);
}

/** What planning decided for each entry of a manifest slice: left alone (not a live data file of the scan), pruned or kept. */
const PRUNED = 1;
const KEPT = 2;
function entryDecisions(p: Prepared, s: ManifestSlice, m: ManifestFile, entries: ManifestEntry[], part: PartExpr): Uint8Array {
  const end = Math.min(s.to, entries.length);
  const out = new Uint8Array(Math.max(0, end));
  for (let i = s.from; i < end; i++) {
    const e = entries[i];
    if (e.status === Status.DELETED || e.file.content !== 0) continue;
    if (p.appendSnapshots && (e.status !== Status.ADDED || !p.appendSnapshots.has(entrySnapshotId(e, m)))) continue;
    out[i] = partitionMatches(part, e.file.partition) && mayMatchMetrics(p.filter, e.file) ? KEPT : PRUNED;
  }
  return out;
}

/**
 * The second step: the file scan tasks of the prepared scan's data manifests, or of `slices` of
 * them (a plan task). Delete files that no task refers to are left out of `deleteFiles`.
 */
export async function planFiles(p: Prepared, io: ManifestIO, opts: { slices?: ManifestSlice[]; signal?: AbortSignal; onFiles?: OnFiles } = {}): Promise<ScanPlan> {
  const index = await deleteIndex(p, io, opts.signal);
  const slices = opts.slices ?? p.dataManifests.map((_, i) => ({ index: i, from: 0, to: Number.MAX_SAFE_INTEGER }));
  for (const s of slices) if (!p.dataManifests[s.index]) throw invalid('a plan task names a manifest the snapshot does not have');
  const read = await mapLimited(slices, CONCURRENT_READS, async (s) => {
    const m = p.dataManifests[s.index];
    const spec = specOf(p.table, m.specId);
    const man = await io.manifest(m.path, spec);
    // decided as each manifest arrives, so a reader can fetch its files while others are read
    const decisions = entryDecisions(p, s, m, man.entries, project(p.filter, spec, 'inclusive'));
    if (opts.onFiles) opts.onFiles(man.entries.filter((_, i) => decisions[i] === KEPT).map((e) => e.file));
    return { s, m, man, spec, decisions };
  }, opts.signal);
  const tasks: FileScanTask[] = [];
  const used = new Map<number, number>();
  const deleteFiles: DeleteFileRef[] = [];
  let skippedFiles = 0;
  for (const { s, m, man, spec, decisions } of read) {
    const residuals = new Map<string, Expr>();
    let nextRowId = m.firstRowId;
    const end = Math.min(s.to, man.entries.length);
    for (let i = 0; i < end; i++) {
      const e = man.entries[i];
      let firstRowId = e.file.firstRowId;
      if (nextRowId !== null && firstRowId === undefined && e.file.content === 0) {
        firstRowId = nextRowId;
        nextRowId += BigInt(e.file.recordCount);
      }
      if (decisions[i] !== KEPT) { if (decisions[i] === PRUNED) skippedFiles++; continue; }
      const key = partitionKey(spec.specId, e.file.partition);
      let r = residuals.get(key);
      if (!r) { r = residual(p.filter, spec, e.file.partition); residuals.set(key, r); }
      const seq = dataSequenceNumber(e, m);
      const deletes = index.forDataFile(e.file, seq, spec).map((d) => {
        let at = used.get(d);
        if (at === undefined) { at = deleteFiles.length; used.set(d, at); deleteFiles.push(index.refs[d]); }
        return at;
      });
      tasks.push({ file: e.file, spec, dataSequenceNumber: seq, fileSequenceNumber: fileSequenceNumber(e, m), ...(firstRowId !== undefined ? { firstRowId } : {}), deletes, residual: r, position: { manifest: s.index, entry: i } });
    }
  }
  return { ...p, tasks, deleteFiles, skippedFiles };
}

/**
 * Plans a scan of a table: the snapshot and schema used, and the FileScanTasks (data file, the
 * delete files that apply by the sequence-number rules, the residual filter).
 */
export async function planScan(metadata: Json, opts: ScanOptions, io: ManifestIO): Promise<ScanPlan> {
  const prepared = await prepareScan(metadata, opts, io);
  return planFiles(prepared, io, { signal: opts.signal, onFiles: opts.onFiles });
}
