// Filter expressions of the Iceberg REST specification (`Expression` / `Predicate`): parsing
// their JSON (the current `left`/`right`/`child` forms, and the `term`/`value` forms the Java and
// Python clients send), binding names to a schema's fields with the field's type (literals are
// converted to it, as Java's literal conversions do), pushing `not` into the predicates, and
// writing bound expressions back as JSON in the form Java clients read (residual filters).
import { invalid, unsupported } from './errors.js';
import { findField, isPrimitive, typeString, type PrimitiveType, type Schema } from './types.js';
import { canTransform, parseTransform, resultType, type Transform } from './transforms.js';
import { fromJsonValue, toJsonValue, type Value } from './values.js';

export type UnaryOp = 'is-null' | 'not-null' | 'is-nan' | 'not-nan';
export type LiteralOp = 'lt' | 'lt-eq' | 'gt' | 'gt-eq' | 'eq' | 'not-eq' | 'starts-with' | 'not-starts-with';
export type SetOp = 'in' | 'not-in';

/** A bound reference: a schema field, or a transform of one (`day(ts)`). */
export interface BoundTerm {
  id: number; name: string;
  /** the source field's type */
  sourceType: PrimitiveType;
  transform?: Transform;
  /** the type values are compared in: the source type, or the transform's result type */
  type: PrimitiveType;
}

export type Expr =
  | { op: 'true' } | { op: 'false' }
  | { op: 'and' | 'or'; left: Expr; right: Expr }
  | { op: 'not'; child: Expr }
  | { op: UnaryOp; term: BoundTerm }
  | { op: LiteralOp; term: BoundTerm; value: Value }
  | { op: SetOp; term: BoundTerm; values: Value[] };
export type Predicate = Extract<Expr, { term: BoundTerm }>;

export const TRUE: Expr = { op: 'true' };
export const FALSE: Expr = { op: 'false' };

/** Bounds on a filter a client sends: nodes in the tree, literals in one IN list. */
export const MAX_EXPRESSION_NODES = 10_000;
export const MAX_SET_VALUES = 10_000;

const UNARY = new Set(['is-null', 'not-null', 'is-nan', 'not-nan']);
const LITERAL = new Set(['lt', 'lt-eq', 'gt', 'gt-eq', 'eq', 'not-eq', 'starts-with', 'not-starts-with']);
const FLIP: Record<string, LiteralOp> = { lt: 'gt', 'lt-eq': 'gt-eq', gt: 'lt', 'gt-eq': 'lt-eq', eq: 'eq', 'not-eq': 'not-eq' };

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Ctx { schema: Schema; caseSensitive: boolean; nodes: number }

/** A term's JSON: `"name"`, `{"type":"reference","name"|"term"|"id"}`, `{"type":"transform",...}`. */
function bindTerm(v: unknown, c: Ctx): BoundTerm {
  if (typeof v === 'string') return bindName(v, c);
  if (!isObj(v)) throw invalid('invalid filter: a term is a field name, a reference or a transform');
  if (v.type === 'reference') {
    if (typeof v.id === 'number') {
      const f = c.schema.byId.get(v.id);
      if (!f) throw invalid(`invalid filter: no field with id ${v.id}`);
      return bindName(f.name, { ...c, caseSensitive: true });
    }
    const name = v.name ?? v.term;
    if (typeof name !== 'string') throw invalid('invalid filter: a reference needs a name');
    return bindName(name, c);
  }
  if (v.type === 'transform') {
    const inner = bindTerm(v.term, c);
    if (typeof v.transform !== 'string') throw invalid('invalid filter: a transform term needs a transform');
    const t = parseTransform(v.transform);
    if (t.kind === 'unknown' || !canTransform(t, inner.sourceType)) throw invalid(`invalid filter: transform ${v.transform.slice(0, 64)} cannot be applied to ${inner.name}`);
    return { ...inner, transform: t, type: resultType(t, inner.sourceType) };
  }
  if (v.type === 'apply') throw unsupported('function applications are not supported in scan filters');
  throw invalid(`invalid filter: unknown term type ${JSON.stringify(v.type ?? null).slice(0, 64)}`);
}

function bindName(name: string, c: Ctx): BoundTerm {
  const f = findField(c.schema, name, c.caseSensitive);
  if (!f) throw invalid(`invalid filter: no field named ${JSON.stringify(name).slice(0, 200)}${c.caseSensitive ? '' : ' (case-insensitive)'}`);
  if (f.repeated) throw invalid(`invalid filter: ${f.name} lies inside a list or a map`);
  if (!isPrimitive(f.type)) throw invalid(`invalid filter: ${f.name} is a ${typeString(f.type)}, not a primitive field`);
  return { id: f.id, name: f.name, sourceType: f.type, type: f.type };
}

const isTermish = (v: unknown) => typeof v === 'string' || (isObj(v) && (v.type === 'reference' || v.type === 'transform' || v.type === 'apply'));
/** A literal's JSON: a bare value or `{"type":"literal","value":...}`. */
const literalOf = (v: unknown) => (isObj(v) && v.type === 'literal' ? v.value : v);

function literal(term: BoundTerm, op: string, v: unknown): Value {
  const raw = literalOf(v);
  if (raw === null || raw === undefined) throw invalid(`invalid filter: ${op} on ${term.name} needs a value (use is-null for nulls)`);
  const value = fromJsonValue(term.type, raw);
  if (typeof value === 'number' && Number.isNaN(value)) throw invalid(`invalid filter: NaN cannot be compared; use is-nan or not-nan on ${term.name}`);
  return value;
}

function bindPredicate(type: string, v: Json, c: Ctx): Expr {
  if (UNARY.has(type)) {
    const term = bindTerm(v.child ?? v.term, c);
    if ((type === 'is-nan' || type === 'not-nan') && term.type.type !== 'float' && term.type.type !== 'double') {
      throw invalid(`invalid filter: ${type} needs a float or double field, and ${term.name} is ${term.type.type}`);
    }
    return { op: type as UnaryOp, term };
  }
  if (LITERAL.has(type)) {
    let op = type as LiteralOp;
    let termJson = v.left ?? v.term;
    let valueJson = v.right ?? v.value;
    if (v.left !== undefined && !isTermish(v.left) && isTermish(v.right)) {
      if (!FLIP[op]) throw invalid(`invalid filter: ${op} needs the field on the left`);
      [termJson, valueJson, op] = [v.right, v.left, FLIP[op]];
    }
    const term = bindTerm(termJson, c);
    if ((op === 'starts-with' || op === 'not-starts-with') && term.type.type !== 'string') throw invalid(`invalid filter: ${op} needs a string field, and ${term.name} is ${term.type.type}`);
    return { op, term, value: literal(term, op, valueJson) };
  }
  if (type === 'in' || type === 'not-in') {
    const term = bindTerm(v.child ?? v.term, c);
    const raw = isObj(v.values) && v.values.type === 'literals' ? v.values.values : v.values;
    if (!Array.isArray(raw)) throw invalid(`invalid filter: ${type} needs a values array`);
    if (raw.length > MAX_SET_VALUES) throw invalid(`invalid filter: at most ${MAX_SET_VALUES} values in one ${type}`);
    c.nodes += raw.length;
    const values = raw.map((x) => literal(term, type, x));
    if (values.length === 0) return type === 'in' ? FALSE : TRUE;
    return { op: type, term, values };
  }
  throw invalid(`invalid filter: unknown expression type ${JSON.stringify(type).slice(0, 64)}`);
}

function bindExpr(v: unknown, c: Ctx): Expr {
  if (++c.nodes > MAX_EXPRESSION_NODES) throw invalid(`invalid filter: more than ${MAX_EXPRESSION_NODES} nodes`);
  if (v === true) return TRUE;
  if (v === false) return FALSE;
  if (!isObj(v) || typeof v.type !== 'string') throw invalid('invalid filter: an expression is true, false or an object with a type');
  switch (v.type) {
    case 'true': return TRUE;
    case 'false': return FALSE;
    case 'literal': if (typeof v.value === 'boolean') return v.value ? TRUE : FALSE; break;
    case 'and': case 'or': return { op: v.type, left: bindExpr(v.left, c), right: bindExpr(v.right, c) };
    case 'not': return { op: 'not', child: bindExpr(v.child, c) };
    default: return bindPredicate(v.type, v, c);
  }
  throw invalid('invalid filter: a literal expression must be true or false');
}

/**
 * Parses and binds a REST filter to `schema`: names resolve with `caseSensitive`, literals convert
 * to each field's type, `not` is pushed down. Throws `invalid` naming the problem.
 */
export function bindFilter(json: unknown, schema: Schema, caseSensitive = true): Expr {
  if (json === undefined || json === null) return TRUE;
  return rewriteNot(bindExpr(json, { schema, caseSensitive, nodes: 0 }));
}

const NEGATE: Record<string, string> = {
  'is-null': 'not-null', 'not-null': 'is-null', 'is-nan': 'not-nan', 'not-nan': 'is-nan', lt: 'gt-eq', 'lt-eq': 'gt', gt: 'lt-eq', 'gt-eq': 'lt',
  eq: 'not-eq', 'not-eq': 'eq', 'starts-with': 'not-starts-with', 'not-starts-with': 'starts-with', in: 'not-in', 'not-in': 'in',
};

export function negate(e: Expr): Expr {
  switch (e.op) {
    case 'true': return FALSE;
    case 'false': return TRUE;
    case 'and': return or(negate(e.left), negate(e.right));
    case 'or': return and(negate(e.left), negate(e.right));
    case 'not': return e.child;
    default: return { ...e, op: NEGATE[e.op] } as Expr;
  }
}

export function rewriteNot(e: Expr): Expr {
  switch (e.op) {
    case 'and': return and(rewriteNot(e.left), rewriteNot(e.right));
    case 'or': return or(rewriteNot(e.left), rewriteNot(e.right));
    case 'not': return negate(rewriteNot(e.child));
    default: return e;
  }
}

export function and(l: Expr, r: Expr): Expr {
  if (l.op === 'false' || r.op === 'false') return FALSE;
  if (l.op === 'true') return r;
  if (r.op === 'true') return l;
  return { op: 'and', left: l, right: r };
}

export function or(l: Expr, r: Expr): Expr {
  if (l.op === 'true' || r.op === 'true') return TRUE;
  if (l.op === 'false') return r;
  if (r.op === 'false') return l;
  return { op: 'or', left: l, right: r };
}

/** The field ids an expression refers to. */
export function referencedIds(e: Expr, out = new Set<number>()): Set<number> {
  if ('term' in e) out.add(e.term.id);
  else if (e.op === 'and' || e.op === 'or') { referencedIds(e.left, out); referencedIds(e.right, out); } else if (e.op === 'not') referencedIds(e.child, out);
  return out;
}

function termJson(t: BoundTerm): unknown {
  return t.transform ? { type: 'transform', transform: t.transform.text, term: t.name } : t.name;
}

/**
 * A bound expression as the JSON Java's ExpressionParser writes and reads (`term` / `value` /
 * `values`; booleans for true and false). Longs beyond 2^53 stay BigInt for the caller's writer.
 */
export function exprToJson(e: Expr): unknown {
  switch (e.op) {
    case 'true': return true;
    case 'false': return false;
    case 'and': case 'or': return { type: e.op, left: exprToJson(e.left), right: exprToJson(e.right) };
    case 'not': return { type: 'not', child: exprToJson(e.child) };
    default:
      if ('value' in e) return { type: e.op, term: termJson(e.term), value: toJsonValue(e.term.type, e.value) };
      if ('values' in e) return { type: e.op, term: termJson(e.term), values: e.values.map((v) => toJsonValue(e.term.type, v)) };
      return { type: e.op, term: termJson(e.term) };
  }
}
