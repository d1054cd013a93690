// The part of a query's WHERE that planning can use to skip files (docs/engines.md "The
// lakehouse"): conjuncts that compare one column of the table with constants, as an Iceberg REST
// `Expression` for the planner's partition and column-bound pruning. Only ever a way to read fewer
// files: the query keeps its WHERE, so a predicate left out here (or pruned conservatively by the
// planner) changes nothing in the rows. A predicate is taken only where skipping files cannot
// change the answer: the table alone in FROM or inner-joined (an outer join's null-extended rows
// could pass a predicate like IS NULL), and never on a masked column (a query filters on the masked
// value, which the files' statistics do not describe).
import type { Node } from '../sql/parser.js';

type Json = Record<string, unknown>;

const COMPARE: Record<string, [string, string]> = {
  // DuckDB comparison -> Iceberg op, and the op with the sides swapped
  COMPARE_EQUAL: ['eq', 'eq'], COMPARE_NOTEQUAL: ['not-eq', 'not-eq'],
  COMPARE_LESSTHAN: ['lt', 'gt'], COMPARE_GREATERTHAN: ['gt', 'lt'],
  COMPARE_LESSTHANOREQUALTO: ['lt-eq', 'gt-eq'], COMPARE_GREATERTHANOREQUALTO: ['gt-eq', 'lt-eq'],
};

/** The SELECT node whose FROM holds `ref` through inner or cross joins only, or null. */
export function owningSelect(trees: Node[], ref: Node): { select: Node; alone: boolean } | null {
  let found: { select: Node; alone: boolean } | null = null;
  const visit = (n: unknown): void => {
    if (found || n === null || typeof n !== 'object') return;
    if (Array.isArray(n)) { for (const x of n) visit(x); return; }
    const o = n as Node;
    if (o.type === 'SELECT_NODE' && o.from_table) {
      const from = o.from_table as Node;
      if (reaches(from, ref)) { found = { select: o, alone: from === ref }; return; }
    }
    for (const v of Object.values(o)) visit(v);
  };
  visit(trees);
  return found;
}

function reaches(from: Node, ref: Node): boolean {
  if (from === ref) return true;
  if (from.type !== 'JOIN') return false;
  if (from.join_type !== 'INNER' || (from.ref_type !== 'REGULAR' && from.ref_type !== 'CROSS')) return false;
  return reaches(from.left as Node, ref) || reaches(from.right as Node, ref);
}

/** Iceberg filter of the WHERE conjuncts about this table's columns, or undefined. */
export function pushdownFilter(where: Node | null | undefined, opts: { names: string[]; alone: boolean; columns: Set<string>; excluded: Set<string> }): Json | undefined {
  if (!where) return undefined;
  const conjuncts: Node[] = [];
  const split = (n: Node) => {
    if (n.class === 'CONJUNCTION' && n.type === 'CONJUNCTION_AND') for (const c of n.children as Node[]) split(c);
    else conjuncts.push(n);
  };
  split(where);
  const column = (n: unknown): string | null => {
    const o = n as Node | null;
    if (!o || o.class !== 'COLUMN_REF') return null;
    const names = o.column_names as string[];
    let col: string | undefined;
    if (names.length === 1 && opts.alone) col = names[0];
    else if (names.length === 2 && opts.names.includes(names[0]!)) col = names[1];
    if (col === undefined) return null;
    const exact = opts.columns.has(col) ? col : [...opts.columns].find((c) => c.toLowerCase() === col!.toLowerCase());
    return exact && !opts.excluded.has(exact) ? exact : null;
  };
  const out: Json[] = [];
  for (const c of conjuncts) {
    const e = predicate(c, column);
    if (e) out.push(e);
  }
  if (out.length === 0) return undefined;
  return out.reduce((l, r) => ({ type: 'and', left: l, right: r }));
}

function predicate(c: Node, column: (n: unknown) => string | null): Json | null {
  if (c.class === 'COMPARISON') {
    const ops = COMPARE[c.type as string];
    if (!ops) return null;
    const l = column(c.left);
    const r = column(c.right);
    if (l !== null && r === null) { const v = literal(c.right); return v === undefined ? null : { type: ops[0], term: l, value: v }; }
    if (r !== null && l === null) { const v = literal(c.left); return v === undefined ? null : { type: ops[1], term: r, value: v }; }
    return null;
  }
  if (c.class === 'OPERATOR' && (c.type === 'OPERATOR_IS_NULL' || c.type === 'OPERATOR_IS_NOT_NULL')) {
    const col = column((c.children as Node[])[0]);
    return col === null ? null : { type: c.type === 'OPERATOR_IS_NULL' ? 'is-null' : 'not-null', term: col };
  }
  if (c.class === 'OPERATOR' && (c.type === 'COMPARE_IN' || c.type === 'COMPARE_NOT_IN')) {
    const [first, ...rest] = c.children as Node[];
    const col = column(first);
    const values = rest.map(literal);
    if (col === null || values.some((v) => v === undefined || v === null) || values.length > 1000) return null;
    return { type: c.type === 'COMPARE_IN' ? 'in' : 'not-in', term: col, values };
  }
  if (c.class === 'BETWEEN') {
    const col = column(c.input);
    const lo = literal(c.lower);
    const hi = literal(c.upper);
    if (col === null || lo === undefined || hi === undefined || lo === null || hi === null) return null;
    return { type: 'and', left: { type: 'gt-eq', term: col, value: lo }, right: { type: 'lt-eq', term: col, value: hi } };
  }
  return null;
}

/** A constant as the REST expression's literal (dates and timestamps as ISO strings, decimals as strings); undefined when it is not one. */
function literal(n: unknown): unknown {
  const o = n as Node | null;
  if (!o) return undefined;
  if (o.class === 'CAST' && (o.child as Node)?.class === 'CONSTANT') {
    const target = (o.cast_type as Node).id as string;
    const v = literal(o.child);
    if (typeof v !== 'string') return undefined;
    if (target === 'DATE' && /^\d{4}-\d{2}-\d{2}$/.test(v)) return v;
    if ((target === 'TIMESTAMP' || target === 'TIMESTAMP WITH TIME ZONE') && /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$/.test(v)) return v.replace(' ', 'T');
    return undefined;
  }
  if (o.class !== 'CONSTANT') return undefined;
  const value = o.value as Json;
  if (value.is_null) return null;
  const id = (value.type as Json).id as string;
  const raw = value.value as unknown;
  switch (id) {
    case 'VARCHAR': return typeof raw === 'string' ? raw : undefined;
    case 'BOOLEAN': return raw === true || raw === false ? raw : undefined;
    case 'TINYINT': case 'SMALLINT': case 'INTEGER': case 'BIGINT': case 'HUGEINT': case 'UBIGINT': {
      const s = String(raw);
      if (!/^-?\d+$/.test(s)) return undefined;
      const b = BigInt(s);
      return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : undefined;
    }
    case 'DECIMAL': {
      const scale = Number(((value.type as Json).type_info as Json | null)?.scale ?? 0);
      const s = String(raw);
      if (!/^-?\d+$/.test(s)) return undefined;
      const neg = s.startsWith('-');
      const digits = (neg ? s.slice(1) : s).padStart(scale + 1, '0');
      const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
      return (neg ? '-' : '') + text;
    }
    case 'DOUBLE': case 'FLOAT': { const x = Number(String(raw)); return Number.isFinite(x) ? x : undefined; }
    default: return undefined;
  }
}
