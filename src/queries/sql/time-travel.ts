// Time travel as Trino spells it on a table reference, `FOR VERSION AS OF <snapshot id>` and
// `FOR TIMESTAMP AS OF <point in time>`, turned into DuckDB's own clause `AT (VERSION => ...)` /
// `AT (TIMESTAMP => ...)`, so one statement runs unchanged on the embedded engine and on Trino.
// Only the clause's words change; the result is parsed by DuckDB like any statement, so text that
// this reads wrongly is a parse error or a checked statement, never more. The point in time is
// one of: a number, a string or a parameter; a typed literal (`TIMESTAMP '...'`, `DATE '...'`); a
// word or a call (`current_timestamp`, `now()`); anything in parentheses; each optionally followed
// by `+` or `-` and `INTERVAL '<n>' <unit>`.
import { tokenize, type Token } from './lexer.js';

const TYPED = new Set(['timestamp', 'timestamptz', 'date']);

export function trinoTimeTravel(sql: string): string {
  if (!/\bfor\s+(version|timestamp)\s+as\s+of\b/i.test(sql)) return sql;
  let toks: Token[];
  try { toks = tokenize(sql); } catch { return sql; }
  let out = '';
  let last = 0;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (!(t.kind === 'word' && t.value === 'for' && toks[i + 2]?.value === 'as' && toks[i + 3]?.value === 'of')) continue;
    const unit = toks[i + 1];
    if (unit?.kind !== 'word' || (unit.value !== 'version' && unit.value !== 'timestamp')) continue;
    const end = expressionEnd(toks, i + 4);
    if (end < 0) continue;
    // Trino writes the alias after the clause (`t FOR VERSION AS OF 3 AS x`), DuckDB before it.
    const aliasEnd = aliasAfter(toks, end + 1);
    const alias = aliasEnd < 0 ? '' : `${sql.slice(toks[end + 1]!.start, toks[aliasEnd]!.end)} `;
    out += `${sql.slice(last, t.start)}${alias}AT (${unit.value.toUpperCase()} => ${sql.slice(toks[i + 4]!.start, toks[end]!.end)})`;
    last = toks[aliasEnd < 0 ? end : aliasEnd]!.end;
    i = aliasEnd < 0 ? end : aliasEnd;
  }
  return out + sql.slice(last);
}

const NOT_ALIAS = new Set(['where', 'join', 'left', 'right', 'inner', 'full', 'cross', 'on', 'using', 'group', 'order', 'limit', 'union', 'except',
  'intersect', 'having', 'window', 'qualify', 'natural', 'positional', 'asof', 'anti', 'semi', 'offset', 'fetch', 'tablesample', 'using', 'lateral']);

/** Index of the last token of an alias (`[AS] name [(columns)]`) starting at `i`, or -1. */
function aliasAfter(toks: Token[], i: number): number {
  let j = i;
  if (toks[j]?.kind === 'word' && toks[j]!.value === 'as') j++;
  const name = toks[j];
  if (!name || (name.kind !== 'word' && name.kind !== 'quoted') || (name.kind === 'word' && j === i && NOT_ALIAS.has(name.value))) return -1;
  return toks[j + 1]?.text === '(' ? closing(toks, j + 1) : j;
}

/** Index of the last token of the point in time starting at `i`, or -1. */
function expressionEnd(toks: Token[], i: number): number {
  let end = operand(toks, i);
  while (end >= 0 && (toks[end + 1]?.text === '+' || toks[end + 1]?.text === '-') && toks[end + 2]?.value === 'interval' && toks[end + 3]?.kind === 'string') {
    end += 3;
    if (toks[end + 1]?.kind === 'word' && /^(year|month|week|day|hour|minute|second)s?$/.test(toks[end + 1]!.value)) end++;
  }
  return end;
}

function operand(toks: Token[], i: number): number {
  const t = toks[i];
  if (!t) return -1;
  if (t.text === '(') return closing(toks, i);
  if (t.text === '-' || t.text === '+') return toks[i + 1]?.kind === 'number' ? i + 1 : -1;
  if (t.kind === 'number' || t.kind === 'string' || t.kind === 'param') return i;
  if (t.kind === 'word') {
    if (TYPED.has(t.value) && toks[i + 1]?.kind === 'string') return i + 1;
    if (toks[i + 1]?.text === '(') return closing(toks, i + 1);
    return i;
  }
  return -1;
}

function closing(toks: Token[], open: number): number {
  let depth = 0;
  for (let j = open; j < toks.length; j++) {
    if (toks[j]!.text === '(') depth++;
    else if (toks[j]!.text === ')' && --depth === 0) return j;
  }
  return -1;
}
