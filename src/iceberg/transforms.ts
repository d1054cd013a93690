// Partition transforms (spec "Partition Transforms", Appendix B): which source types each accepts,
// its result type, and its value. bucket[N] hashes with 32-bit Murmur3 (x86 variant, seed 0) of
// the bytes Appendix B names for each type.
import { invalid } from './errors.js';
import { isPrimitive, type IcebergType, type PrimitiveType } from './types.js';
import { bigintToMinBytes, MICROS_PER_DAY, uuidToBytes, type Value } from './values.js';

export type TransformKind = 'identity' | 'bucket' | 'truncate' | 'year' | 'month' | 'day' | 'hour' | 'void' | 'unknown';
export interface Transform { kind: TransformKind; n?: number; text: string }

/** A transform string; one this implementation does not know is kind `unknown` (spec: ignored when reading). */
export function parseTransform(text: string): Transform {
  const t = text.trim();
  if (['identity', 'year', 'month', 'day', 'hour', 'void'].includes(t)) return { kind: t as TransformKind, text: t };
  const m = /^(bucket|truncate)\[\s*(\d{1,10})\s*\]$/.exec(t);
  if (m) {
    const n = Number(m[2]);
    if (n < 1 || n > 2147483647) throw invalid(`${t}: the ${m[1] === 'bucket' ? 'number of buckets' : 'width'} must be 1 to 2147483647`);
    return { kind: m[1] as TransformKind, n, text: `${m[1]}[${n}]` };
  }
  return { kind: 'unknown', text: t };
}

const TEMPORAL_DATE = new Set(['date', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns']);
const BUCKETABLE = new Set(['int', 'long', 'decimal', 'date', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns', 'string', 'uuid', 'fixed', 'binary']);
const TRUNCATABLE = new Set(['int', 'long', 'decimal', 'string', 'binary']);
const NOT_IDENTITY = new Set(['geometry', 'geography', 'variant', 'unknown']);

/** Whether `t` may take a `source` column (spec table "Source types"). */
export function canTransform(t: Transform, source: IcebergType): boolean {
  if (t.kind === 'void') return true;
  if (!isPrimitive(source)) return false;
  switch (t.kind) {
    case 'identity': return !NOT_IDENTITY.has(source.type);
    case 'bucket': return BUCKETABLE.has(source.type);
    case 'truncate': return TRUNCATABLE.has(source.type);
    case 'year': case 'month': case 'day': return TEMPORAL_DATE.has(source.type);
    case 'hour': return TEMPORAL_DATE.has(source.type) && source.type !== 'date';
    default: return false;
  }
}

/** The type of the partition values `t` produces from `source`. */
export function resultType(t: Transform, source: IcebergType): PrimitiveType {
  switch (t.kind) {
    case 'bucket': case 'year': case 'month': case 'hour': return { type: 'int' };
    case 'day': return { type: 'date' };
    default: return isPrimitive(source) ? source : { type: 'int' };
  }
}

// ---------- Murmur3 x86_32, seed 0 ----------

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

export function murmur3(bytes: Uint8Array): number {
  let h = 0;
  const n = bytes.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    k = Math.imul(k, C1); k = (k << 15) | (k >>> 17); k = Math.imul(k, C2);
    h ^= k; h = (h << 13) | (h >>> 19); h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  switch (n & 3) {
    case 3: k ^= bytes[blocks + 2] << 16; // falls through
    case 2: k ^= bytes[blocks + 1] << 8; // falls through
    case 1:
      k ^= bytes[blocks];
      k = Math.imul(k, C1); k = (k << 15) | (k >>> 17); k = Math.imul(k, C2);
      h ^= k;
  }
  h ^= n;
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

function longBytes(v: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt.asIntN(64, v));
  return b;
}

const floorDiv = (a: bigint, b: bigint) => { const q = a / b; return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q; };

/** The 32-bit hash Appendix B defines for a value of `t`. */
export function hashValue(t: PrimitiveType, v: Value): number {
  switch (t.type) {
    case 'int': case 'date': case 'long': case 'time': case 'timestamp': case 'timestamptz':
      return murmur3(longBytes(BigInt(v as number | bigint)));
    case 'timestamp_ns': case 'timestamptz_ns':
      return murmur3(longBytes(floorDiv(BigInt(v as bigint), 1000n)));
    case 'decimal': return murmur3(bigintToMinBytes(BigInt(v as bigint)));
    case 'string': return murmur3(Buffer.from(String(v), 'utf8'));
    case 'uuid': return murmur3(uuidToBytes(String(v)));
    case 'fixed': case 'binary': return murmur3(v as Uint8Array);
    default: throw invalid(`values of type ${t.type} cannot be bucketed`);
  }
}

// ---------- temporal transforms ----------

/** Days since 1970-01-01 of a date or timestamp value. */
function epochDays(t: PrimitiveType, v: Value): number {
  if (t.type === 'date') return Number(v);
  const perDay = t.type === 'timestamp_ns' || t.type === 'timestamptz_ns' ? MICROS_PER_DAY * 1000n : MICROS_PER_DAY;
  return Number(floorDiv(BigInt(v as bigint), perDay));
}

function yearMonth(days: number): { year: number; month: number } {
  const d = new Date(days * 86_400_000);
  return { year: d.getUTCFullYear() - 1970, month: d.getUTCMonth() };
}

/** The code points of `s` up to `n` (spec: strings truncate to at most L code points). */
export function truncateString(s: string, n: number): string {
  if (s.length <= n) return s;
  let i = 0;
  let points = 0;
  while (i < s.length && points < n) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
    points++;
  }
  return s.slice(0, i);
}

/** The partition value of `v` (null stays null; void is always null). */
export function applyTransform(t: Transform, source: PrimitiveType, v: Value | null): Value | null {
  if (v === null || v === undefined || t.kind === 'void') return null;
  switch (t.kind) {
    case 'identity': return v;
    case 'bucket': return (hashValue(source, v) & 0x7fffffff) % t.n!;
    case 'truncate': {
      if (source.type === 'int') { const x = Number(v); const w = t.n!; return x - (((x % w) + w) % w); }
      if (source.type === 'long' || source.type === 'decimal') { const x = BigInt(v as bigint); const w = BigInt(t.n!); return x - (((x % w) + w) % w); }
      if (source.type === 'string') return truncateString(String(v), t.n!);
      if (source.type === 'binary') return (v as Uint8Array).subarray(0, t.n!);
      break;
    }
    case 'year': return yearMonth(epochDays(source, v)).year;
    case 'month': { const ym = yearMonth(epochDays(source, v)); return ym.year * 12 + ym.month; }
    case 'day': return epochDays(source, v);
    case 'hour': {
      const perHour = source.type === 'timestamp_ns' || source.type === 'timestamptz_ns' ? 3_600_000_000_000n : 3_600_000_000n;
      return Number(floorDiv(BigInt(v as bigint), perHour));
    }
    default: break;
  }
  throw invalid(`the transform ${t.text} cannot take a ${source.type}`);
}

export const isTemporal = (t: Transform) => t.kind === 'year' || t.kind === 'month' || t.kind === 'day' || t.kind === 'hour';
