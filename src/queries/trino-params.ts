// Named parameters on Trino. Trino's prepared statements take positional `?` only (EXECUTE ...
// USING binds them in order), while the query API also takes named ones (`{year: 2026}` for
// `$year`, as the embedded engine binds them). So each `$name` outside string literals, quoted
// identifiers and comments becomes a `?` and its value joins USING in that order; a name used
// twice is bound twice. `$` cannot start an unquoted identifier in Trino's grammar (hidden columns
// such as "$path" are always quoted), so no valid statement loses meaning.
import { QueryFailure } from './types.js';

type Scalar = string | number | boolean | null;

/** The statement with `?` for each `$name`, and the values in the order they are bound. */
export function namedToPositional(sql: string, params: Record<string, Scalar>): { sql: string; values: Scalar[] } {
  let out = '';
  const values: Scalar[] = [];
  const used = new Set<string>();
  let positional = false;
  let i = 0;
  const copyUntil = (end: string, from: number): number => {
    const j = sql.indexOf(end, from);
    return j < 0 ? sql.length : j + end.length;
  };
  while (i < sql.length) {
    const c = sql[i]!;
    let next = i + 1;
    if (c === "'" || c === '"') {
      // A literal or quoted identifier; a doubled quote inside is an escaped one.
      next = i + 1;
      for (;;) {
        next = copyUntil(c, next);
        if (sql[next] !== c) break;
        next++;
      }
    } else if (c === '-' && sql[i + 1] === '-') {
      next = copyUntil('\n', i + 2);
    } else if (c === '/' && sql[i + 1] === '*') {
      next = copyUntil('*/', i + 2);
    } else if (c === '?') {
      positional = true;
    } else if (c === '$') {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1, i + 65))?.[0];
      if (name) {
        if (!Object.hasOwn(params, name)) throw new QueryFailure('refused', `parameter $${name} has no value`);
        values.push(params[name]!);
        used.add(name);
        out += '?';
        i += 1 + name.length;
        continue;
      }
    }
    out += sql.slice(i, next);
    i = next;
  }
  if (positional && values.length > 0) throw new QueryFailure('refused', 'use either positional (?) or named ($name) parameters, not both');
  const unused = Object.keys(params).filter((k) => !used.has(k));
  if (unused.length > 0) throw new QueryFailure('refused', `parameter ${unused.map((k) => `$${k}`).join(', ')} is not in the statement`);
  return { sql: out, values };
}
