// JSON with 64-bit integers intact. Iceberg snapshot ids are random longs that JavaScript numbers
// cannot hold (above 2^53 digits are lost, and a lost digit is another snapshot). Integer
// literals that are not safe integers become BigInt on parse and are written back digit for
// digit. Node 20's JSON.parse gives revivers no source text, so a linear pre-pass quotes those
// literals with a per-call marker that the reviver turns into BigInt.
import { randomBytes } from 'node:crypto';

export type Long = number | bigint;

/** Deepest nesting accepted; Iceberg schemas nest types, but never this deep. */
export const MAX_DEPTH = 64;

export function parseJson(text: string): unknown {
  let depth = 0;
  let out = '';
  let last = 0;
  let hex: string | null = null;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92 /* \ */) i += 2;
        else if (d === 34) { i++; break; } else i++;
      }
      continue;
    }
    if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      const start = i;
      i++;
      let integer = true;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d >= 48 && d <= 57) i++;
        else if (d === 46 || d === 101 || d === 69 || d === 43 || d === 45) { integer = false; i++; } else break;
      }
      if (integer && i - start > 15 && !Number.isSafeInteger(Number(text.slice(start, i)))) {
        hex ??= randomBytes(6).toString('hex');
        out += `${text.slice(last, start)}"\\u0000long${hex}:${text.slice(start, i)}"`;
        last = i;
      }
      continue;
    }
    if (c === 123 || c === 91) { if (++depth > MAX_DEPTH) throw new SyntaxError(`JSON nested deeper than ${MAX_DEPTH}`); } else if (c === 125 || c === 93) depth--;
    i++;
  }
  if (hex === null) return JSON.parse(text);
  const m = `\u0000long${hex}:`;
  return JSON.parse(out + text.slice(last), (_k, v: unknown) => (typeof v === 'string' && v.startsWith(m) ? BigInt(v.slice(m.length)) : v));
}

/** JSON.stringify that writes BigInt as a plain integer literal. */
export function stringifyJson(v: unknown): string {
  if (!containsBigInt(v, 0)) return JSON.stringify(v);
  const hex = randomBytes(6).toString('hex');
  const s = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `\u0000long${hex}:${x.toString()}` : x));
  return s.replace(new RegExp(`"\\\\u0000long${hex}:(-?\\d+)"`, 'g'), '$1');
}

function containsBigInt(v: unknown, depth: number): boolean {
  if (typeof v === 'bigint') return true;
  if (v === null || typeof v !== 'object' || depth > 64) return false;
  if (Array.isArray(v)) return v.some((x) => containsBigInt(x, depth + 1));
  for (const k in v) if (containsBigInt((v as Record<string, unknown>)[k], depth + 1)) return true;
  return false;
}

/** Two longs (number or BigInt, or null) are the same id. */
export const sameLong = (a: unknown, b: unknown) => (a === null || a === undefined ? b === null || b === undefined : String(a) === String(b));

export function isLong(v: unknown): v is Long {
  return (typeof v === 'number' && Number.isInteger(v)) || typeof v === 'bigint';
}
