// What every value a client sends must be before it goes further: PostgreSQL refuses a NUL
// character in text and jsonb, and a lone UTF-16 surrogate in jsonb ("unsupported Unicode escape
// sequence"); a deeply nested value overflows the stack of whatever walks it recursively later
// (validators, serialisers, the jsonb encoder). One iterative walk finds all three, so the API
// can answer 400 at the edge instead of 500 somewhere deep.

/** Deepest nesting of arrays and objects a request value may have (docs/api.md). */
export const MAX_VALUE_DEPTH = 64;

/** Why `s` cannot be stored as text, or null when it can. */
export function textProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'contains a NUL character';
  // String.prototype.isWellFormed is in Node 20, not in the ES2023 lib this project compiles against.
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return null;
}

/**
 * The first problem of a parsed value: a string or key that is not storable text, or nesting
 * deeper than `maxDepth`. `where` is the dotted path of the offending part ('' for the root).
 * Buffers and streams are bytes, not text: they are not looked into.
 */
export function valueProblem(value: unknown, maxDepth = MAX_VALUE_DEPTH): { where: string; problem: string } | null {
  const stack: Array<{ v: unknown; depth: number; path: string }> = [{ v: value, depth: 0, path: '' }];
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v === 'string') {
      const p = textProblem(v);
      if (p) return { where: path, problem: p };
      continue;
    }
    if (v === null || typeof v !== 'object' || Buffer.isBuffer(v) || typeof (v as { pipe?: unknown }).pipe === 'function') continue;
    if (depth >= maxDepth) return { where: path, problem: `nests deeper than ${maxDepth} levels` };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], depth: depth + 1, path: join(path, String(i)) });
      continue;
    }
    for (const k of Object.keys(v)) {
      const p = textProblem(k);
      if (p) return { where: path, problem: `has a key that ${p}` };
      stack.push({ v: (v as Record<string, unknown>)[k], depth: depth + 1, path: join(path, k.length > 64 ? `${k.slice(0, 64)}…` : k) });
    }
  }
  return null;
}

const join = (a: string, b: string) => (a ? `${a}.${b}` : b);
