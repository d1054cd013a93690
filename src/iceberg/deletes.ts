// Which delete files apply to a data file (spec "Scan Planning", the scope rules), as Java's
// DeleteFileIndex decides it:
// - a deletion vector (v3, Puffin) applies to the data file it references, of data sequence
//   number <= its own, in the same partition; when one applies, position delete files do not;
// - a position delete file applies to data files of data sequence number <= its own, in the same
//   spec and partition, only to `referenced_data_file` when it names one, and (by its file_path
//   bounds) only to paths inside its range;
// - an equality delete file applies to data files of data sequence number strictly lower, in the
//   same spec and partition, or to every partition when its spec is unpartitioned (global).
import { Content, type ContentFile } from './manifests.js';
import type { PartitionSpec } from './specs.js';
import { compareStrings, type Value } from './values.js';

/** Field id of `file_path` in position delete files (spec "Reserved Field IDs"). */
export const DELETE_FILE_PATH_ID = 2147483546;
export const DELETE_POS_ID = 2147483545;

export interface DeleteFileRef { file: ContentFile; dataSequenceNumber: number; spec: PartitionSpec }

function valueKey(v: Value | null): string {
  if (v === null) return 'n';
  if (typeof v === 'bigint') return `b${v}`;
  if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`;
  if (typeof v === 'number') return Number.isNaN(v) ? 'NaN' : `d${Object.is(v, -0) ? '-0' : v}`;
  if (typeof v === 'boolean') return v ? 't' : 'f';
  return `s${JSON.stringify(v)}`;
}

/** A key equal for equal (spec id, partition tuple) pairs. */
export function partitionKey(specId: number, tuple: ReadonlyArray<Value | null>): string {
  return `${specId}|${tuple.map(valueKey).join('|')}`;
}

/** Delete files sorted by data sequence number, for "all with seq >= n" (or "> n") lookups. */
class BySequence {
  readonly items: Array<{ seq: number; index: number; ref: DeleteFileRef }> = [];
  add(seq: number, index: number, ref: DeleteFileRef) { this.items.push({ seq, index, ref }); }
  sort() { this.items.sort((a, b) => a.seq - b.seq); }
  /** Entries with seq >= min (strict: seq > min). */
  from(min: number, strict: boolean) {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const s = this.items[mid].seq;
      if (strict ? s <= min : s < min) lo = mid + 1; else hi = mid;
    }
    return this.items.slice(lo);
  }
}

const isDv = (f: ContentFile) => f.format.toLowerCase() === 'puffin';

export class DeleteIndex {
  private readonly global = new BySequence();
  private readonly eqByPartition = new Map<string, BySequence>();
  private readonly posByPartition = new Map<string, BySequence>();
  private readonly posByPath = new Map<string, BySequence>();
  private readonly dvByPath = new Map<string, Array<{ seq: number; index: number; ref: DeleteFileRef }>>();

  /** `refs[i]` is referred to by `i` in the answers. */
  constructor(readonly refs: DeleteFileRef[]) {
    const bucket = (m: Map<string, BySequence>, k: string) => { let b = m.get(k); if (!b) { b = new BySequence(); m.set(k, b); } return b; };
    refs.forEach((ref, index) => {
      const f = ref.file;
      const seq = ref.dataSequenceNumber;
      if (f.content === Content.EQUALITY_DELETES) {
        if (ref.spec.fields.length === 0) this.global.add(seq, index, ref);
        else bucket(this.eqByPartition, partitionKey(ref.spec.specId, f.partition)).add(seq, index, ref);
      } else if (f.content === Content.POSITION_DELETES) {
        if (isDv(f) && f.referencedDataFile) {
          const l = this.dvByPath.get(f.referencedDataFile) ?? [];
          l.push({ seq, index, ref });
          this.dvByPath.set(f.referencedDataFile, l);
        } else if (f.referencedDataFile) bucket(this.posByPath, f.referencedDataFile).add(seq, index, ref);
        else bucket(this.posByPartition, partitionKey(ref.spec.specId, f.partition)).add(seq, index, ref);
      }
    });
    for (const m of [this.eqByPartition, this.posByPartition, this.posByPath]) for (const b of m.values()) b.sort();
    this.global.sort();
  }

  get size(): number { return this.refs.length; }

  /** Indexes of the delete files that apply to data file `f` of data sequence number `seq`. */
  forDataFile(f: ContentFile, seq: number, spec: PartitionSpec): number[] {
    if (this.refs.length === 0) return [];
    const key = partitionKey(spec.specId, f.partition);
    const out: number[] = [];
    const dv = (this.dvByPath.get(f.path) ?? []).filter((d) => d.seq >= seq && partitionKey(d.ref.spec.specId, d.ref.file.partition) === key);
    if (dv.length > 0) {
      out.push(...dv.map((d) => d.index));
    } else {
      for (const d of this.posByPath.get(f.path)?.from(seq, false) ?? []) if (partitionKey(d.ref.spec.specId, d.ref.file.partition) === key) out.push(d.index);
      for (const d of this.posByPartition.get(key)?.from(seq, false) ?? []) if (mayReference(d.ref.file, f.path)) out.push(d.index);
    }
    for (const d of this.eqByPartition.get(key)?.from(seq, true) ?? []) out.push(d.index);
    for (const d of this.global.from(seq, true)) out.push(d.index);
    return out.sort((a, b) => a - b);
  }
}

/** By its file_path bounds, may a position delete file name `path`? */
function mayReference(del: ContentFile, path: string): boolean {
  const lo = del.lowerBounds?.get(DELETE_FILE_PATH_ID);
  const hi = del.upperBounds?.get(DELETE_FILE_PATH_ID);
  if (lo && compareStrings(Buffer.from(lo).toString('utf8'), path) > 0) return false;
  if (hi && compareStrings(Buffer.from(hi).toString('utf8'), path) < 0) return false;
  return true;
}
