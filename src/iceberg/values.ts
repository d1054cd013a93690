// Values of Iceberg primitive types (spec Appendix D): the binary single-value serialization that
// bounds and partition summaries use, the JSON single-value serialization of the REST protocol,
// and the order of each type. In memory a value is:
//   boolean -> boolean;  int, date (days) -> number;  float, double -> number;
//   long, time, timestamp[tz] (micros), timestamp[tz]_ns (nanos) -> bigint;
//   decimal(P,S) -> bigint (the unscaled value);  string -> string;  uuid -> lowercase string;
//   fixed, binary -> Uint8Array.
import { invalid } from './errors.js';
import type { PrimitiveType } from './types.js';

export type Value = boolean | number | bigint | string | Uint8Array;

const LONGISH = new Set(['long', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns']);
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const MICROS_PER_DAY = 86_400_000_000n;

export const isLongish = (t: PrimitiveType) => LONGISH.has(t.type);

// ---------- binary single-value serialization ----------

/** Minimal two's-complement big-endian bytes of a bigint (decimal's unscaled value). */
export function bigintToMinBytes(v: bigint): Uint8Array {
  const out: number[] = [];
  let x = v;
  for (;;) {
    const byte = Number(x & 0xffn);
    out.unshift(byte);
    x >>= 8n;
    if ((x === 0n && (byte & 0x80) === 0) || (x === -1n && (byte & 0x80) !== 0)) break;
  }
  return Uint8Array.from(out);
}

export function bigintFromBytes(b: Uint8Array): bigint {
  if (b.length === 0) return 0n;
  let x = 0n;
  for (const byte of b) x = (x << 8n) | BigInt(byte);
  return b[0] & 0x80 ? x - (1n << BigInt(b.length * 8)) : x;
}

export function uuidToBytes(s: string): Uint8Array {
  return Buffer.from(s.replace(/-/g, ''), 'hex');
}
export function uuidFromBytes(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * A bound or partition-summary value of `t` from its bytes, or undefined for a type without one.
 * Bounds written before a type promotion keep their old width (spec "Schema Evolution"): 4 bytes
 * for a long is an int, for a double a float, for a timestamp a date.
 */
export function fromBytes(t: PrimitiveType, b: Uint8Array): Value | undefined {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  switch (t.type) {
    case 'boolean': return buf.length > 0 && buf[0] !== 0;
    case 'int': case 'date': return buf.readInt32LE(0);
    case 'long': case 'time': return buf.length === 4 ? BigInt(buf.readInt32LE(0)) : buf.readBigInt64LE(0);
    case 'timestamp': case 'timestamptz': return buf.length === 4 ? BigInt(buf.readInt32LE(0)) * MICROS_PER_DAY : buf.readBigInt64LE(0);
    case 'timestamp_ns': case 'timestamptz_ns': return buf.length === 4 ? BigInt(buf.readInt32LE(0)) * MICROS_PER_DAY * 1000n : buf.readBigInt64LE(0);
    case 'float': return buf.readFloatLE(0);
    case 'double': return buf.length === 4 ? buf.readFloatLE(0) : buf.readDoubleLE(0);
    case 'decimal': return bigintFromBytes(buf);
    case 'string': return buf.toString('utf8');
    case 'uuid': return uuidFromBytes(buf);
    case 'fixed': case 'binary': return Uint8Array.from(buf);
    default: return undefined;
  }
}

/** The binary single-value serialization of `v` as a value of `t`. */
export function toBytes(t: PrimitiveType, v: Value): Uint8Array {
  switch (t.type) {
    case 'boolean': return Uint8Array.of(v ? 1 : 0);
    case 'int': case 'date': { const b = Buffer.alloc(4); b.writeInt32LE(Number(v)); return b; }
    case 'long': case 'time': case 'timestamp': case 'timestamptz': case 'timestamp_ns': case 'timestamptz_ns': {
      const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v as number | bigint)); return b;
    }
    case 'float': { const b = Buffer.alloc(4); b.writeFloatLE(Number(v)); return b; }
    case 'double': { const b = Buffer.alloc(8); b.writeDoubleLE(Number(v)); return b; }
    case 'decimal': return bigintToMinBytes(BigInt(v as bigint));
    case 'string': return Buffer.from(String(v), 'utf8');
    case 'uuid': return uuidToBytes(String(v));
    case 'fixed': case 'binary': return v as Uint8Array;
    default: throw invalid(`values of type ${t.type} have no binary serialization`);
  }
}

// ---------- order ----------

/** Unicode code point order (UTF-16 order differs where surrogates meet U+E000..U+FFFF). */
export function compareStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      // a surrogate (a code point above U+FFFF) sorts after every BMP character
      x = x <= 0xdfff ? x + 0x2000 : x - 0x800;
      y = y <= 0xdfff ? y + 0x2000 : y - 0x800;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

/** Total order of two values of one type: -0.0 before +0.0, NaN after everything. */
export function compareValues(a: Value, b: Value): number {
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b);
  if (typeof a === 'number' && typeof b === 'number') {
    if (a < b) return -1;
    if (a > b) return 1;
    if (a === b) return a === 0 ? (Object.is(a, -0) ? (Object.is(b, -0) ? 0 : -1) : (Object.is(b, -0) ? 1 : 0)) : 0;
    return Number.isNaN(a) ? (Number.isNaN(b) ? 0 : 1) : -1;
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  const x = typeof a === 'bigint' ? a : BigInt(a as number);
  const y = typeof b === 'bigint' ? b : BigInt(b as number);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function sameValue(a: Value, b: Value): boolean {
  return compareValues(a, b) === 0;
}

// ---------- dates and times ----------

const pad = (n: number | bigint, w: number) => String(n).padStart(w, '0');

export function daysToDate(days: number): string {
  const d = new Date(days * 86_400_000);
  const y = d.getUTCFullYear();
  const year = y < 0 ? `-${pad(-y, 4)}` : y > 9999 ? `+${y}` : pad(y, 4);
  return `${year}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;
}

export function dateToDays(s: string): number {
  const m = /^([+-]?\d{4,6})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) throw invalid(`not a date (YYYY-MM-DD): ${s.slice(0, 64)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (Number.isNaN(ms) || daysToDate(ms / 86_400_000) !== `${m[1].replace(/^\+/, '')}-${m[2]}-${m[3]}`) throw invalid(`not a valid date: ${s.slice(0, 64)}`);
  return ms / 86_400_000;
}

/** `unitsPerSecond` is 1e6 for micros, 1e9 for nanos. */
function unitsToTimestamp(v: bigint, unitsPerSecond: bigint, zone: boolean): string {
  const perDay = unitsPerSecond * 86_400n;
  let days = v / perDay;
  let rest = v % perDay;
  if (rest < 0n) { rest += perDay; days -= 1n; }
  const secs = rest / unitsPerSecond;
  const frac = rest % unitsPerSecond;
  const digits = unitsPerSecond === 1_000_000n ? 6 : 9;
  const time = `${pad(secs / 3600n, 2)}:${pad((secs / 60n) % 60n, 2)}:${pad(secs % 60n, 2)}.${pad(frac, digits)}`;
  return `${daysToDate(Number(days))}T${time}${zone ? '+00:00' : ''}`;
}

function timestampToUnits(s: string, unitsPerSecond: bigint, zone: boolean): bigint {
  const m = /^([+-]?\d{4,6}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(s);
  if (!m) throw invalid(`not a timestamp (YYYY-MM-DDTHH:MM:SS.ffffff${zone ? '+00:00' : ''}): ${s.slice(0, 64)}`);
  if (zone && !m[6]) throw invalid(`a timestamptz value needs a zone offset (+00:00): ${s.slice(0, 64)}`);
  if (!zone && m[6]) throw invalid(`a timestamp without time zone takes no zone offset: ${s.slice(0, 64)}`);
  const digits = unitsPerSecond === 1_000_000n ? 6 : 9;
  const frac = (m[5] ?? '').padEnd(9, '0').slice(0, digits);
  if ((m[5] ?? '').length > digits && /[1-9]/.test(m[5]!.slice(digits))) throw invalid(`more precision than the type keeps: ${s.slice(0, 64)}`);
  let secs = BigInt(dateToDays(m[1])) * 86_400n + BigInt(m[2]) * 3600n + BigInt(m[3]) * 60n + BigInt(m[4] ?? 0);
  if (m[6] && m[6] !== 'Z') {
    const o = /^([+-])(\d{2}):?(\d{2})$/.exec(m[6])!;
    const off = BigInt(o[2]) * 3600n + BigInt(o[3]) * 60n;
    secs = o[1] === '+' ? secs - off : secs + off;
  }
  return secs * unitsPerSecond + BigInt(frac || 0);
}

export function microsToTime(v: bigint): string {
  return unitsToTimestamp(v, 1_000_000n, false).slice(11);
}

function timeToMicros(s: string): bigint {
  const m = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$/.exec(s);
  if (!m) throw invalid(`not a time (HH:MM:SS.ffffff): ${s.slice(0, 64)}`);
  return (BigInt(m[1]) * 3600n + BigInt(m[2]) * 60n + BigInt(m[3] ?? 0)) * 1_000_000n + BigInt((m[4] ?? '').padEnd(6, '0'));
}

// ---------- decimals ----------

export function decimalToString(unscaled: bigint, scale: number): string {
  if (scale <= 0) return scale === 0 ? unscaled.toString() : `${unscaled}E+${-scale}`;
  const neg = unscaled < 0n;
  const digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  return `${neg ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

function decimalFromString(s: string, scale: number): bigint {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,3}))?$/.exec(s.trim());
  if (!m || (m[2] === '' && !m[3])) throw invalid(`not a decimal: ${s.slice(0, 64)}`);
  let digits = `${m[2]}${m[3] ?? ''}`;
  let exp = -(m[3]?.length ?? 0) + Number(m[4] ?? 0); // value = digits * 10^exp
  while (-exp > scale && digits.endsWith('0')) { digits = digits.slice(0, -1); exp++; }
  if (-exp > scale) throw invalid(`${s.slice(0, 64)} has more digits after the point than the scale ${scale}`);
  const v = BigInt(digits || '0') * 10n ** BigInt(exp + scale);
  return m[1] === '-' ? -v : v;
}

// ---------- JSON single-value serialization ----------

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();

/** The JSON single-value form of `v` (a bigint stays a bigint: the caller writes it digit for digit). */
export function toJsonValue(t: PrimitiveType, v: Value): unknown {
  switch (t.type) {
    case 'date': return daysToDate(Number(v));
    case 'time': return microsToTime(BigInt(v as bigint));
    case 'timestamp': case 'timestamptz': return unitsToTimestamp(BigInt(v as bigint), 1_000_000n, t.type === 'timestamptz');
    case 'timestamp_ns': case 'timestamptz_ns': return unitsToTimestamp(BigInt(v as bigint), 1_000_000_000n, t.type === 'timestamptz_ns');
    case 'decimal': return decimalToString(BigInt(v as bigint), t.scale!);
    case 'fixed': case 'binary': return hex(v as Uint8Array);
    case 'long': return typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    default: return v;
  }
}

const integral = (v: unknown): v is number | bigint => (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';

/**
 * A JSON literal as a value of `t` (the REST protocol's literals, and what Java's literal
 * conversions accept: a date as "YYYY-MM-DD" or days, a timestamp as ISO text or micros, a
 * decimal as text or a number). Throws `invalid` naming the type when it does not convert.
 */
export function fromJsonValue(t: PrimitiveType, v: unknown): Value {
  const bad = () => invalid(`${JSON.stringify(v)?.slice(0, 64) ?? String(v)} is not a value of type ${t.type}`);
  switch (t.type) {
    case 'boolean':
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === 'false') return v === 'true';
      throw bad();
    case 'int':
      if (integral(v)) return Number(v);
      throw bad();
    case 'date':
      if (integral(v)) return Number(v);
      if (typeof v === 'string') return dateToDays(v);
      throw bad();
    case 'long':
      if (integral(v)) return BigInt(v);
      if (typeof v === 'string' && /^-?\d{1,19}$/.test(v)) return BigInt(v);
      throw bad();
    case 'time':
      if (integral(v)) return BigInt(v);
      if (typeof v === 'string') return timeToMicros(v);
      throw bad();
    case 'timestamp': case 'timestamptz':
      if (integral(v)) return BigInt(v);
      if (typeof v === 'string') return timestampToUnits(v, 1_000_000n, t.type === 'timestamptz');
      throw bad();
    case 'timestamp_ns': case 'timestamptz_ns':
      if (integral(v)) return BigInt(v);
      if (typeof v === 'string') return timestampToUnits(v, 1_000_000_000n, t.type === 'timestamptz_ns');
      throw bad();
    case 'float': case 'double':
      if (typeof v === 'number') return v;
      if (typeof v === 'bigint') return Number(v);
      if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return Number(v);
      throw bad();
    case 'decimal':
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint') return decimalFromString(String(v), t.scale!);
      throw bad();
    case 'string':
      if (typeof v === 'string') return v;
      throw bad();
    case 'uuid':
      if (typeof v === 'string' && UUID_RE.test(v)) return v.toLowerCase();
      throw bad();
    case 'fixed': case 'binary': {
      if (typeof v !== 'string' || !/^(?:[0-9a-fA-F]{2})*$/.test(v)) throw bad();
      const b = Uint8Array.from(Buffer.from(v, 'hex'));
      if (t.type === 'fixed' && b.length !== t.length) throw invalid(`${v.slice(0, 64)} is ${b.length} bytes, not the ${t.length} of fixed[${t.length}]`);
      return b;
    }
    default:
      throw invalid(`values of type ${t.type} cannot be compared`);
  }
}

/**
 * A value given by an engine (a writer's bounds or partition values) as a value of `t`: the
 * in-memory forms above, with some slack (a number for a long, a Date for a date or timestamp; a
 * decimal as a bigint is the unscaled value, as a number or a string the decimal value).
 */
export function coerceValue(t: PrimitiveType, v: unknown): Value {
  if (v instanceof Date) {
    const ms = BigInt(v.getTime());
    if (t.type === 'date') return Math.floor(v.getTime() / 86_400_000);
    if (t.type === 'timestamp' || t.type === 'timestamptz') return ms * 1000n;
    if (t.type === 'timestamp_ns' || t.type === 'timestamptz_ns') return ms * 1_000_000n;
  }
  if (v instanceof Uint8Array && (t.type === 'fixed' || t.type === 'binary')) return v;
  if (t.type === 'decimal' && typeof v === 'bigint') return v;
  if (t.type === 'uuid' && v instanceof Uint8Array && v.length === 16) return uuidFromBytes(v);
  return fromJsonValue(t, v);
}
