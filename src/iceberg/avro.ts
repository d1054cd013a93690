// Avro object container files (the Avro 1.11 specification's framing: magic, metadata map, sync
// marker, blocks of count / size / data / sync) with the values encoded and decoded by avsc.
// Longs decode to numbers while they are safe integers and to BigInt beyond (Iceberg snapshot ids
// are random 63-bit longs). Blocks are decompressed one at a time on libuv's pool (deflate), so a
// large manifest never holds the event loop for more than one block's decoding.
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type avro from 'avsc';
import { invalid, unsupported } from './errors.js';

// avsc and the types below are made on the first Avro file read or written, not at every start
// of every command that imports the catalog (about 25 ms of `svc serve`'s start, issue 27 point 8).
const require = createRequire(import.meta.url);

const MAGIC = Buffer.from('Obj\x01', 'latin1');
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** Sync interval of the files written here, as Java's DataFileWriter (64 KB uncompressed). */
const BLOCK_BYTES = 64_000;

interface AvroBase { avsc: typeof avro; LongType: avro.Type; HeaderType: avro.Type; PlainLong: avro.Type }
let base: AvroBase | undefined;

function avroBase(): AvroBase {
  if (base) return base;
  const avsc = require('avsc') as typeof avro;
  const LongType = avsc.types.LongType.__with({
    fromBuffer: (b: Buffer) => { const v = b.readBigInt64LE(0); return v >= MIN_SAFE && v <= MAX_SAFE ? Number(v) : v; },
    toBuffer: (n: number | bigint) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(n)); return b; },
    fromJSON: (x: unknown) => x,
    toJSON: (x: number | bigint) => (typeof x === 'bigint' ? Number(x) : x),
    isValid: (x: unknown) => (typeof x === 'number' && Number.isInteger(x)) || typeof x === 'bigint',
    compare: (a: number | bigint, b: number | bigint) => (a < b ? -1 : a > b ? 1 : 0),
  }) as unknown as avro.Type;
  const HeaderType = avsc.Type.forSchema({
    type: 'record', name: 'org.apache.avro.file.Header',
    fields: [
      { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
      { name: 'meta', type: { type: 'map', values: 'bytes' } },
      { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
    ],
  });
  base = { avsc, LongType, HeaderType, PlainLong: avsc.Type.forSchema('long') };
  return base;
}

/** An avsc type for a schema, with the long type above. */
export function avroType(schema: unknown): avro.Type {
  const { avsc, LongType } = avroBase();
  return avsc.Type.forSchema(schema as avro.Schema, { registry: { long: LongType } });
}

// Types of the schemas files were written with, by the schema's text: avsc compiles a decoder per
// type (several milliseconds), and every manifest of a table carries the same schema, so a cold
// plan compiled the same decoder once per manifest. Bounded in count and key length.
const TYPE_CACHE_ENTRIES = 64;
const TYPE_CACHE_KEY_CHARS = 256 * 1024;
const typeCache = new Map<string, avro.Type>();

/** The avsc type of a file's schema text, compiled once per distinct text. */
function typeOfText(text: string): { schema: unknown; type: avro.Type } {
  const schema: unknown = JSON.parse(text);
  let type = typeCache.get(text);
  if (type) {
    typeCache.delete(text);
    typeCache.set(text, type); // most recently used last
    return { schema, type };
  }
  type = avroType(schema);
  if (text.length <= TYPE_CACHE_KEY_CHARS) {
    if (typeCache.size >= TYPE_CACHE_ENTRIES) typeCache.delete(typeCache.keys().next().value as string);
    typeCache.set(text, type);
  }
  return { schema, type };
}

const inflate = promisify(zlib.inflateRaw);
const deflate = promisify(zlib.deflateRaw);
const zstd = (zlib as unknown as { zstdDecompress?: (b: Buffer, cb: (e: Error | null, r: Buffer) => void) => void }).zstdDecompress;

async function decompress(codec: string, data: Buffer): Promise<Buffer> {
  if (codec === 'null') return data;
  if (codec === 'deflate') return inflate(data);
  if (codec === 'zstandard' && zstd) return promisify(zstd)(data);
  throw unsupported(`Avro codec ${codec} is not supported (null and deflate are${zstd ? ', and zstandard' : ''})`);
}

export interface AvroFile {
  /** the file's metadata map, as UTF-8 text (Iceberg keeps its keys there) */
  meta: Record<string, string>;
  /** the writer's schema (its JSON, with Iceberg's field-id attributes) */
  schema: unknown;
  records: unknown[];
}

function decodeAt(type: avro.Type, buf: Buffer, pos: number, what: string): { value: unknown; offset: number } {
  const r = type.decode(buf, pos);
  if (r.offset < 0) throw invalid(`truncated Avro file: ${what}`);
  return r;
}

/** Decodes an Avro object container file. `what` names it in errors (its location). */
export async function readAvro(bytes: Uint8Array, what: string): Promise<AvroFile> {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC)) throw invalid(`not an Avro file: ${what}`);
  const { HeaderType, PlainLong } = avroBase();
  let header: { meta: Record<string, Buffer>; sync: Buffer };
  let pos: number;
  try {
    const h = decodeAt(HeaderType, buf, 0, what);
    header = h.value as typeof header;
    pos = h.offset;
  } catch (err) {
    throw err instanceof Error && err.name === 'IcebergFormatError' ? err : invalid(`unreadable Avro header: ${what}`);
  }
  const meta: Record<string, string> = {};
  for (const [k, v] of Object.entries(header.meta)) meta[k] = v.toString('utf8');
  const codec = meta['avro.codec'] || 'null';
  let schema: unknown;
  let type: avro.Type;
  try {
    ({ schema, type } = typeOfText(meta['avro.schema']));
  } catch {
    throw invalid(`unreadable Avro schema in ${what}`);
  }
  const records: unknown[] = [];
  while (pos < buf.length) {
    const count = decodeAt(PlainLong, buf, pos, what);
    const size = decodeAt(PlainLong, buf, count.offset, what);
    const start = size.offset;
    const end = start + Number(size.value);
    if (Number(size.value) < 0 || end + 16 > buf.length) throw invalid(`truncated Avro block in ${what}`);
    if (!buf.subarray(end, end + 16).equals(header.sync)) throw invalid(`Avro sync marker mismatch in ${what}`);
    const data = await decompress(codec, buf.subarray(start, end)).catch((err: unknown) => {
      throw err instanceof Error && err.name === 'IcebergFormatError' ? err : invalid(`corrupt ${codec} block in ${what}`);
    });
    let p = 0;
    for (let i = 0; i < Number(count.value); i++) {
      let r: { value: unknown; offset: number };
      try {
        r = decodeAt(type, data, p, what);
      } catch {
        throw invalid(`corrupt Avro record in ${what}`);
      }
      records.push(r.value);
      p = r.offset;
    }
    pos = end + 16;
  }
  return { meta, schema, records };
}

/** Encodes records as an Avro object container file (deflate), the schema written as given. */
export async function writeAvro(schema: unknown, records: unknown[], meta: Record<string, string>, codec: 'deflate' | 'null' = 'deflate'): Promise<Uint8Array> {
  const type = avroType(schema);
  const { HeaderType, PlainLong } = avroBase();
  const sync = Buffer.from(Array.from({ length: 16 }, () => Math.floor(Math.random() * 256)));
  const metaBytes: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(meta)) metaBytes[k] = Buffer.from(v, 'utf8');
  metaBytes['avro.schema'] = Buffer.from(JSON.stringify(schema), 'utf8');
  metaBytes['avro.codec'] = Buffer.from(codec, 'utf8');
  const parts: Buffer[] = [HeaderType.toBuffer({ magic: MAGIC, meta: metaBytes, sync })];
  let block: Buffer[] = [];
  let blockBytes = 0;
  const flush = async () => {
    if (block.length === 0) return;
    const raw = Buffer.concat(block);
    const data = codec === 'deflate' ? await deflate(raw) : raw;
    parts.push(PlainLong.toBuffer(block.length), PlainLong.toBuffer(data.length), data, sync);
    block = [];
    blockBytes = 0;
  };
  for (const r of records) {
    let b: Buffer;
    try {
      b = type.toBuffer(r);
    } catch (err) {
      throw invalid(`cannot encode a record: ${(err as Error).message.slice(0, 300)}`);
    }
    block.push(b);
    blockBytes += b.length;
    if (blockBytes >= BLOCK_BYTES) await flush();
  }
  await flush();
  return Buffer.concat(parts);
}

/** Iceberg's field ids of a record schema's fields: id -> field name. */
export function fieldIds(recordSchema: unknown): Map<number, { name: string; type: unknown }> {
  const out = new Map<number, { name: string; type: unknown }>();
  const fields = (recordSchema as { fields?: Array<{ name: string; type: unknown; 'field-id'?: number }> })?.fields ?? [];
  for (const f of fields) if (typeof f['field-id'] === 'number') out.set(f['field-id'], { name: f.name, type: f.type });
  return out;
}

/** The record schema inside a field type (`["null", {record}]` or `{record}`). */
export function recordOf(type: unknown): unknown {
  if (Array.isArray(type)) return type.find((t) => typeof t === 'object' && t !== null) ?? null;
  return type;
}
