// How many bytes a result value takes, as JSON would write it (strings by their length): the
// measure of engine.max_result_bytes on every engine, counted as rows are read so that no result
// grows past it in memory.
export function valueBytes(v: unknown, depth = 0): number {
  if (v === null || v === undefined) return 4;
  switch (typeof v) {
    case 'string': return v.length + 2;
    case 'number': case 'bigint': return 8;
    case 'boolean': return 5;
    case 'object': {
      if (depth > 64) return 0;
      let n = 2;
      if (Array.isArray(v)) for (const x of v) n += 1 + valueBytes(x, depth + 1);
      else for (const [k, x] of Object.entries(v)) n += k.length + 4 + valueBytes(x, depth + 1);
      return n;
    }
    default: return 8;
  }
}
