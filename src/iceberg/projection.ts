// Projecting row filters onto partition values (spec "Scan Planning"), as the Java reference's
// transforms do (ProjectionUtil, including its widening for negative dates and timestamps that
// writers before 0.10.1 transformed one too high):
// - inclusive: a predicate on the partition that every partition holding a matching row satisfies
//   (used to prune manifests and files);
// - strict: a predicate on the partition that only partitions whose rows all match satisfy
//   (used for residuals);
// and the residual of a filter for one partition tuple (what a reader must still check).
import { and, or, TRUE, FALSE, type Expr, type Predicate } from './expressions.js';
import { partitionMatches, type PartExpr, type PartPredicate } from './evaluate.js';
import { applyTransform, isTemporal, truncateString } from './transforms.js';
import type { PartitionField, PartitionSpec } from './specs.js';
import type { Value } from './values.js';

type Mode = 'inclusive' | 'strict';

function pandAnd(l: PartExpr, r: PartExpr): PartExpr {
  if (l.op === 'false' || r.op === 'false') return { op: 'false' };
  if (l.op === 'true') return r;
  if (r.op === 'true') return l;
  return { op: 'and', left: l, right: r };
}
function pOr(l: PartExpr, r: PartExpr): PartExpr {
  if (l.op === 'true' || r.op === 'true') return { op: 'true' };
  if (l.op === 'false') return r;
  if (r.op === 'false') return l;
  return { op: 'or', left: l, right: r };
}

const step = (v: Value, d: 1 | -1): Value => (typeof v === 'bigint' ? v + BigInt(d) : (v as number) + d);
const textLength = (v: Value) => (typeof v === 'string' ? [...v].length : (v as Uint8Array).length);
const cut = (v: Value, n: number): Value => (typeof v === 'string' ? truncateString(v, n) : (v as Uint8Array).subarray(0, n));

/** Java's fixInclusiveTimeProjection / fixStrictTimeProjection on a projected predicate. */
function fixTime(p: PartPredicate, mode: Mode): PartPredicate | null {
  const neg = (v: Value) => (v as number) < 0;
  if (mode === 'inclusive') {
    switch (p.op) {
      case 'lt': case 'lt-eq': return neg(p.value) ? { ...p, value: (p.value as number) + 1 } : p;
      case 'eq': return neg(p.value) ? { op: 'in', pos: p.pos, type: p.type, values: [p.value, (p.value as number) + 1] } : p;
      case 'in': return p.values.some(neg) ? { ...p, values: [...new Set(p.values.flatMap((v) => (neg(v) ? [v, (v as number) + 1] : [v])))] } : p;
      default: return p;
    }
  }
  switch (p.op) {
    case 'gt': case 'gt-eq': return (p.value as number) <= 0 ? { ...p, value: (p.value as number) + 1 } : p;
    case 'not-eq': return neg(p.value) ? { op: 'not-in', pos: p.pos, type: p.type, values: [p.value, (p.value as number) + 1] } : p;
    case 'not-in': return p.values.some(neg) ? { ...p, values: [...new Set(p.values.flatMap((v) => (neg(v) ? [v, (v as number) + 1] : [v])))] } : p;
    default: return p;
  }
}

/** One predicate on a source column projected through one partition field, or null (no projection). */
function projectField(p: Predicate, f: PartitionField, pos: number, mode: Mode): PartPredicate | null {
  const t = f.transform;
  const type = f.resultType;
  if (p.term.transform) {
    // a predicate on transform(x) projects onto a partition field of that very transform
    if (p.term.transform.text !== t.text) return null;
    return { ...p, pos, type } as PartPredicate;
  }
  if (t.kind === 'void' || t.kind === 'unknown' || !f.sourceType) return null;
  if (p.op === 'is-null' || p.op === 'not-null') return { op: p.op, pos, type };
  if (t.kind === 'identity') return { ...p, pos, type } as PartPredicate;
  if (p.op === 'is-nan' || p.op === 'not-nan') return null;
  const apply = (v: Value) => applyTransform(t, f.sourceType!, v) as Value;
  if (p.op === 'in' || p.op === 'not-in') {
    if ((mode === 'inclusive') !== (p.op === 'in')) return null;
    if (t.kind === 'bucket' || t.kind === 'truncate' || isTemporal(t)) {
      const projected: PartPredicate = { op: p.op, pos, type, values: [...new Set(p.values.map(apply))] };
      return isTemporal(t) ? fixTime(projected, mode) : projected;
    }
    return null;
  }
  const v = (p as Extract<Predicate, { value: Value }>).value;
  if (t.kind === 'bucket') {
    if (mode === 'inclusive' && p.op === 'eq') return { op: 'eq', pos, type, value: apply(v) };
    if (mode === 'strict' && p.op === 'not-eq') return { op: 'not-eq', pos, type, value: apply(v) };
    return null;
  }
  const source = f.sourceType.type;
  if (t.kind === 'truncate' && (source === 'string' || source === 'binary')) {
    const w = t.n!;
    if (mode === 'inclusive') {
      switch (p.op) {
        case 'lt': case 'lt-eq': return { op: 'lt-eq', pos, type, value: apply(v) };
        case 'gt': case 'gt-eq': return { op: 'gt-eq', pos, type, value: apply(v) };
        case 'eq': return { op: 'eq', pos, type, value: apply(v) };
        case 'starts-with': return textLength(v) < w ? { op: 'starts-with', pos, type, value: v } : textLength(v) === w ? { op: 'eq', pos, type, value: v } : { op: 'starts-with', pos, type, value: cut(v, w) };
        case 'not-starts-with': return textLength(v) < w ? { op: 'not-starts-with', pos, type, value: v } : textLength(v) === w ? { op: 'not-eq', pos, type, value: v } : null;
        default: return null;
      }
    }
    switch (p.op) {
      case 'lt': case 'lt-eq': return { op: 'lt', pos, type, value: apply(v) };
      case 'gt': case 'gt-eq': return { op: 'gt', pos, type, value: apply(v) };
      case 'not-eq': return { op: 'not-eq', pos, type, value: apply(v) };
      case 'starts-with': return textLength(v) <= w ? { op: 'starts-with', pos, type, value: v } : null;
      case 'not-starts-with': return textLength(v) <= w ? { op: 'not-starts-with', pos, type, value: v } : null;
      default: return null;
    }
  }
  // truncate of numbers, and the temporal transforms: ordered, adjacent values share a partition
  let out: PartPredicate | null = null;
  if (mode === 'inclusive') {
    switch (p.op) {
      case 'lt': out = { op: 'lt-eq', pos, type, value: apply(step(v, -1)) }; break;
      case 'lt-eq': out = { op: 'lt-eq', pos, type, value: apply(v) }; break;
      case 'gt': out = { op: 'gt-eq', pos, type, value: apply(step(v, 1)) }; break;
      case 'gt-eq': out = { op: 'gt-eq', pos, type, value: apply(v) }; break;
      case 'eq': out = { op: 'eq', pos, type, value: apply(v) }; break;
      default: return null;
    }
  } else {
    switch (p.op) {
      case 'lt': out = { op: 'lt', pos, type, value: apply(v) }; break;
      case 'lt-eq': out = { op: 'lt', pos, type, value: apply(step(v, 1)) }; break;
      case 'gt': out = { op: 'gt', pos, type, value: apply(v) }; break;
      case 'gt-eq': out = { op: 'gt', pos, type, value: apply(step(v, -1)) }; break;
      case 'not-eq': out = { op: 'not-eq', pos, type, value: apply(v) }; break;
      default: return null;
    }
  }
  return isTemporal(t) ? fixTime(out, mode) : out;
}

/**
 * The filter projected onto `spec`'s partition values. Inclusive: the projections of every
 * partition field on a column must hold (AND); strict: any one suffices (OR).
 */
export function project(e: Expr, spec: PartitionSpec, mode: Mode): PartExpr {
  switch (e.op) {
    case 'true': return { op: 'true' };
    case 'false': return { op: 'false' };
    case 'and': return pandAnd(project(e.left, spec, mode), project(e.right, spec, mode));
    case 'or': return pOr(project(e.left, spec, mode), project(e.right, spec, mode));
    case 'not': return { op: mode === 'inclusive' ? 'true' : 'false' };
    default: break;
  }
  let out: PartExpr = { op: mode === 'inclusive' ? 'true' : 'false' };
  spec.fields.forEach((f, pos) => {
    if (f.sourceId !== e.term.id) return;
    const p = projectField(e, f, pos, mode);
    if (p) out = mode === 'inclusive' ? pandAnd(out, p) : pOr(out, p);
  });
  return out;
}

/**
 * What remains of `e` for the rows of one partition: a predicate the partition already decides
 * becomes true or false (Java's ResidualEvaluator); an unpartitioned spec keeps the filter whole.
 */
export function residual(e: Expr, spec: PartitionSpec, tuple: ReadonlyArray<Value | null>): Expr {
  if (spec.fields.length === 0) return e;
  switch (e.op) {
    case 'true': case 'false': return e;
    case 'and': return and(residual(e.left, spec, tuple), residual(e.right, spec, tuple));
    case 'or': return or(residual(e.left, spec, tuple), residual(e.right, spec, tuple));
    case 'not': return e;
    default: break;
  }
  if (!spec.fields.some((f) => f.sourceId === e.term.id)) return e;
  if (partitionMatches(project(e, spec, 'strict'), tuple, true)) return TRUE;
  if (!partitionMatches(project(e, spec, 'inclusive'), tuple)) return FALSE;
  return e;
}
