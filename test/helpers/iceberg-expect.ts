// What a scan of an Iceberg table must return, derived independently of svc's own code, for tests
// (issue 25: "derive the expected rows in the test, do not write them down from svc's output"):
// - decodeAvro: avsc's own container decoder (streams.BlockDecoder), not svc's Avro framing;
// - expectedScan: the live data files of a snapshot and the delete files that apply to each, by
//   the specification's scope rules applied naively (every data file against every delete file);
// - expectedRows: the rows, reading Parquet with hyparquet (not DuckDB, which svc's engine uses)
//   and applying position and equality deletes; columns matched by Parquet field id.
import avro from 'avsc';
import zlib from 'node:zlib';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

type Rec = Record<string, any>;
export type Read = (location: string) => Promise<Uint8Array>;

const BigLong = avro.types.LongType.__with({
  fromBuffer: (b: Buffer) => b.readBigInt64LE(0),
  toBuffer: (n: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
  fromJSON: (x: unknown) => BigInt(x as number), toJSON: (x: bigint) => Number(x),
  isValid: (x: unknown) => typeof x === 'bigint', compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** Decodes an Avro container file with avsc's BlockDecoder; longs are BigInt. */
export function decodeAvro(bytes: Uint8Array): Promise<{ meta: Record<string, string>; schema: any; records: Rec[] }> {
  return new Promise((resolve, reject) => {
    const records: Rec[] = [];
    let meta: Record<string, string> = {};
    let schema: any;
    const dec = new avro.streams.BlockDecoder({
      codecs: { deflate: zlib.inflateRaw, null: (b: Buffer, cb: (e: Error | null, r?: Buffer) => void) => cb(null, b) } as never,
      parseHook: (s: any) => { schema = s; return avro.Type.forSchema(s, { registry: { long: BigLong as never } }); },
    });
    dec.on('metadata', (_t: unknown, _c: unknown, header: { meta: Record<string, Buffer> }) => {
      meta = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, v.toString('utf8')]));
    });
    dec.on('data', (r: Rec) => records.push(r));
    dec.on('end', () => resolve({ meta, schema, records }));
    dec.on('error', reject);
    dec.end(Buffer.from(bytes));
  });
}

export interface ExpectedFile { path: string; seq: bigint; deletes: string[] }

const key = (specId: number, partition: Rec) => `${specId}|${JSON.stringify(partition, (_k, v) => (typeof v === 'bigint' ? `${v}n` : Buffer.isBuffer(v) ? v.toString('hex') : v))}`;

interface Live { path: string; content: number; seq: bigint; specId: number; partKey: string; unpartitioned: boolean; ref: string | null; equalityIds: number[] | null; lower: Map<number, Buffer>; upper: Map<number, Buffer> }

/** Live files of a snapshot (by the manifests' own field names, as Java writes them). */
async function liveFiles(metadata: Rec, snapshotId: string, read: Read): Promise<Live[]> {
  const snap = metadata.snapshots.find((s: Rec) => String(s['snapshot-id']) === snapshotId);
  const list = await decodeAvro(await read(snap['manifest-list']));
  const out: Live[] = [];
  for (const m of list.records) {
    const spec = metadata['partition-specs'].find((s: Rec) => s['spec-id'] === m.partition_spec_id);
    const man = await decodeAvro(await read(m.manifest_path));
    for (const e of man.records) {
      if (e.status === 2) continue;
      const d = e.data_file;
      const bounds = (a: Rec[] | null) => new Map((a ?? []).map((kv: Rec) => [kv.key, kv.value as Buffer]));
      out.push({
        path: d.file_path, content: d.content ?? 0, seq: e.sequence_number ?? m.sequence_number ?? 0n, specId: m.partition_spec_id,
        partKey: key(m.partition_spec_id, d.partition ?? {}), unpartitioned: spec.fields.length === 0, ref: d.referenced_data_file ?? null,
        equalityIds: d.equality_ids ?? null, lower: bounds(d.lower_bounds), upper: bounds(d.upper_bounds),
      });
    }
  }
  return out;
}

/** The spec's scope rules, one data file against every delete file. */
export async function expectedScan(metadata: Rec, snapshotId: string | null, read: Read): Promise<ExpectedFile[]> {
  if (snapshotId === null) return [];
  const files = await liveFiles(metadata, snapshotId, read);
  const PATH_ID = 2147483546;
  return files.filter((f) => f.content === 0).map((d) => ({
    path: d.path, seq: d.seq,
    deletes: files.filter((x) => {
      if (x.content === 1) {
        const lo = x.lower.get(PATH_ID)?.toString('utf8');
        const hi = x.upper.get(PATH_ID)?.toString('utf8');
        const inRange = (lo === undefined || Buffer.compare(Buffer.from(lo), Buffer.from(d.path)) <= 0) && (hi === undefined || Buffer.compare(Buffer.from(hi), Buffer.from(d.path)) >= 0);
        return x.seq >= d.seq && x.partKey === d.partKey && (x.ref === null || x.ref === d.path) && inRange;
      }
      if (x.content === 2) return x.seq > d.seq && (x.unpartitioned || x.partKey === d.partKey);
      return false;
    }).map((x) => x.path).sort(),
  })).sort((a, b) => a.path.localeCompare(b.path));
}

/** Parquet rows keyed by Iceberg field id (from the file's field_id annotations). */
export async function parquetRowsById(bytes: Uint8Array): Promise<Array<Map<number, unknown>>> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const md = parquetMetadata(file);
  const ids = new Map<string, number>();
  for (const s of md.schema) if (s.field_id !== undefined) ids.set(s.name, s.field_id);
  const rows = await parquetReadObjects({ file, compressors });
  return rows.map((r: Rec) => new Map(Object.entries(r).filter(([k]) => ids.has(k)).map(([k, v]) => [ids.get(k)!, v])));
}

const same = (a: unknown, b: unknown) => (a === null || a === undefined ? b === null || b === undefined : typeof a === 'bigint' || typeof b === 'bigint' ? String(a) === String(b) : a === b);

/**
 * The rows of the table at `snapshotId` (current schema, top-level columns by name; a column a
 * file lacks reads as null), with position and equality deletes applied.
 */
export async function expectedRows(metadata: Rec, snapshotId: string | null, read: Read): Promise<Rec[]> {
  const schema = metadata.schemas.find((s: Rec) => s['schema-id'] === metadata['current-schema-id']);
  const scan = await expectedScan(metadata, snapshotId, read);
  const files = snapshotId ? await liveFiles(metadata, snapshotId, read) : [];
  const out: Rec[] = [];
  for (const t of scan) {
    const rows = await parquetRowsById(await read(t.path));
    const deleted = new Set<number>();
    for (const delPath of t.deletes) {
      const del = files.find((f) => f.path === delPath)!;
      const delRows = await parquetRowsById(await read(delPath));
      if (del.content === 1) {
        for (const r of delRows) if (r.get(2147483546) === t.path) deleted.add(Number(r.get(2147483545)));
      } else {
        rows.forEach((row, i) => { if (delRows.some((dr) => del.equalityIds!.every((id) => same(row.get(id), dr.get(id))))) deleted.add(i); });
      }
    }
    rows.forEach((row, i) => {
      if (deleted.has(i)) return;
      out.push(Object.fromEntries(schema.fields.map((f: Rec) => [f.name, row.has(f.id) ? row.get(f.id) : null])));
    });
  }
  return out;
}
