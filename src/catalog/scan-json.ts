// A plan's files in the REST protocol's words (`FileScanTask`, `DataFile`, `DeleteFile` of the
// Iceberg REST specification), written as Java's ContentFileParser and RESTFileScanTaskParser
// write them, since the Java client is what reads them most: content and format in lower case,
// the partition as an array of the spec's fields (SingleValueParser's values: dates and
// timestamps as ISO text, decimals as strings, binary as upper-case hex), counts as
// `{keys, values}`, and bounds as the hex of their single-value binary form (Java reads the bounds
// map as map<int, binary>). Column statistics go out only for the columns a request names in
// `stats-fields`, as Java's server keeps them only for `includeColumnStats` columns.
import { randomBytes } from 'node:crypto';
import { exprToJson } from '../iceberg/expressions.js';
import { toJsonValue } from '../iceberg/values.js';
import type { ContentFile } from '../iceberg/manifests.js';
import type { PartitionSpec } from '../iceberg/specs.js';
import type { ScanPlan } from '../iceberg/planner.js';

type Json = Record<string, unknown>;

const CONTENT = ['data', 'position-deletes', 'equality-deletes'] as const;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();

function countMap(m: Map<number, number> | undefined, keep: Set<number>): Json | undefined {
  if (!m) return undefined;
  const keys: number[] = [];
  const values: number[] = [];
  for (const [k, v] of m) if (keep.has(k)) { keys.push(k); values.push(v); }
  return keys.length ? { keys, values } : undefined;
}

function boundMap(m: Map<number, Uint8Array> | undefined, keep: Set<number>): Json | undefined {
  if (!m) return undefined;
  const keys: number[] = [];
  const values: string[] = [];
  for (const [k, v] of m) if (keep.has(k)) { keys.push(k); values.push(hex(v)); }
  return keys.length ? { keys, values } : undefined;
}

/** A data or delete file as the REST protocol's ContentFile; `stats`: the field ids whose statistics go out. */
export function contentFileJson(f: ContentFile, spec: PartitionSpec, stats: Set<number>, dataSequenceNumber?: number): Json {
  const out: Json = {
    'spec-id': f.specId,
    content: CONTENT[f.content],
    'file-path': f.path,
    'file-format': f.format.toLowerCase(),
    partition: spec.fields.map((p, i) => {
      const v = f.partition[i];
      return v === null || v === undefined ? null : toJsonValue(p.resultType, v);
    }),
    'file-size-in-bytes': f.sizeBytes,
    'record-count': f.recordCount,
  };
  if (stats.size > 0) {
    const put = (k: string, v: Json | undefined) => { if (v) out[k] = v; };
    put('column-sizes', countMap(f.columnSizes, stats));
    put('value-counts', countMap(f.valueCounts, stats));
    put('null-value-counts', countMap(f.nullValueCounts, stats));
    put('nan-value-counts', countMap(f.nanValueCounts, stats));
    put('lower-bounds', boundMap(f.lowerBounds, stats));
    put('upper-bounds', boundMap(f.upperBounds, stats));
  }
  if (f.keyMetadata) out['key-metadata'] = hex(f.keyMetadata);
  if (f.splitOffsets) out['split-offsets'] = f.splitOffsets;
  if (f.equalityIds) out['equality-ids'] = f.equalityIds;
  if (f.sortOrderId !== undefined) out['sort-order-id'] = f.sortOrderId;
  if (f.firstRowId !== undefined) {
    out['first-row-id'] = f.firstRowId;
    // Java writes a data file's sequence number with its first row id (v3 row lineage needs both).
    if (f.content === 0 && dataSequenceNumber !== undefined) out['data-sequence-number'] = dataSequenceNumber;
  }
  if (f.referencedDataFile !== undefined) out['referenced-data-file'] = f.referencedDataFile;
  if (f.contentOffset !== undefined) out['content-offset'] = f.contentOffset;
  if (f.contentSizeInBytes !== undefined) out['content-size-in-bytes'] = f.contentSizeInBytes;
  return out;
}

/** The `ScanTasks` of a plan: its delete files once each, and a FileScanTask per data file. */
export function scanTasksJson(plan: ScanPlan, stats: Set<number>): { 'delete-files': Json[]; 'file-scan-tasks': Json[] } {
  return {
    'delete-files': plan.deleteFiles.map((d) => contentFileJson(d.file, d.spec, stats)),
    'file-scan-tasks': plan.tasks.map((t) => {
      const task: Json = { 'data-file': contentFileJson({ ...t.file, ...(t.firstRowId !== undefined ? { firstRowId: t.firstRowId } : {}) }, t.spec, stats, t.dataSequenceNumber) };
      if (t.deletes.length > 0) task['delete-file-references'] = t.deletes;
      task['residual-filter'] = exprToJson(t.residual);
      return task;
    }),
  };
}

/**
 * JSON text with BigInt written as integer literals (64-bit ids and values), at any depth: a
 * residual filter can nest as deep as the request's filter did.
 */
export function jsonText(v: unknown): string {
  // Most answers hold no BigInt: a replacer would be called for every key of thousands of tasks.
  try { return JSON.stringify(v); } catch (err) { if (!(err instanceof TypeError)) throw err; }
  let mark: string | null = null;
  const s = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${(mark ??= `\u0000long${randomBytes(6).toString('hex')}:`)}${x}` : x));
  if (mark === null) return s;
  const escaped = JSON.stringify(mark).slice(1, -1).replace(/\\/g, '\\\\');
  return s.replace(new RegExp(`"${escaped}(-?\\d+)"`, 'g'), '$1');
}
