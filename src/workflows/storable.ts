// What tasks produce (log lines, outputs, errors, rendered values) goes into PostgreSQL text and
// jsonb, which refuse U+0000, and jsonb refuses lone surrogates too: one such character made the
// whole step fail and left the execution RUNNING. Both become U+FFFD, in strings and in keys.
// Values nested deeper than STORED_DEPTH are refused (PostgreSQL's jsonb input and JSON.stringify
// overflow their stacks at a few thousand levels).

export const STORED_DEPTH = 100;
export class NotStorable extends Error {}

const BAD = /[\u0000\ud800-\udfff]/;
const NUL_OR_LONE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A string PostgreSQL can store: NUL and lone surrogates become U+FFFD. */
export function storableText(s: string): string {
  return BAD.test(s) ? s.replace(NUL_OR_LONE, '\uFFFD') : s;
}

/** A copy of a JSON-like value with every string and key storable; no recursion. */
export function storable(value: unknown, what = 'the value'): unknown {
  const root: Record<string, unknown> = { v: value };
  const stack: Array<[Record<string | number, unknown>, string | number, number]> = [[root, 'v', 0]];
  while (stack.length) {
    const [holder, key, depth] = stack.pop()!;
    const v = holder[key];
    if (typeof v === 'string') { holder[key] = storableText(v); continue; }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= STORED_DEPTH) throw new NotStorable(`${what}: nested deeper than ${STORED_DEPTH} levels`);
    if (Array.isArray(v)) {
      const copy = v.slice();
      holder[key] = copy;
      for (let i = 0; i < copy.length; i++) stack.push([copy as unknown as Record<number, unknown>, i, depth + 1]);
    } else if (v instanceof Date) {
      continue;
    } else {
      const copy: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) copy[storableText(k)] = x;
      holder[key] = copy;
      for (const k of Object.keys(copy)) stack.push([copy, k, depth + 1]);
    }
  }
  return root.v;
}
