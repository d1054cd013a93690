// "Did you mean" for a misspelt key: the server reports `Unrecognized key: "mesage"` on the
// mapping (`tasks[0]`), which marked the task's first line. The key itself is in the source, so
// the problem is moved onto it (`tasks[0].mesage`), and the keys that mapping may take (from the
// same JSON Schema as completion, schemaComplete.ts) give the nearest one within two edits.
import { completionsAt, type Schema } from './schemaComplete';

/** Levenshtein distance, bounded (stops counting past `max`). */
export function distance(a: string, b: string, max = 3): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The unknown keys a problem names (zod: `Unrecognized key: "a"`, `Unrecognized keys: "a", "b"`). */
export function unknownKeys(message: string): string[] {
  if (!/^Unrecognized keys?:/i.test(message)) return [];
  return [...message.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

/** The key the mapping whose key starts at `keyFrom` may take that is nearest to `key`, if close enough. */
export function suggestKey(root: Schema, text: string, keyFrom: number, key: string): string | null {
  const found = completionsAt(root, text.slice(0, keyFrom), text.slice(keyFrom));
  if (!found) return null;
  let best: { label: string; d: number } | null = null;
  for (const o of found.options) {
    const d = distance(key.toLowerCase(), o.label.toLowerCase());
    if (d <= Math.max(1, Math.min(2, Math.floor(key.length / 3))) && (!best || d < best.d)) best = { label: o.label, d };
  }
  return best?.label ?? null;
}
