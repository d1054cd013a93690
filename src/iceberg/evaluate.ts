// Evaluating bound filters, as the Java reference does:
// - mayMatchMetrics: may a file hold a matching row, given its column bounds and value, null
//   and NaN counts (InclusiveMetricsEvaluator)? Conservative: a missing statistic never prunes;
// - partitionMatches: a predicate over partition fields on one file's partition tuple (Evaluator);
// - summariesMayMatch: a predicate over partition fields on a manifest's partition summaries
//   (ManifestEvaluator).
import type { ContentFile, FieldSummary } from './manifests.js';
import type { Expr, Predicate } from './expressions.js';
import { compareBytes, compareValues, fromBytes, type Value } from './values.js';
import type { PrimitiveType } from './types.js';

/** Java's limit: an IN list longer than this is not checked against bounds. */
const IN_LIMIT = 200;

const isNaNValue = (v: Value | undefined) => typeof v === 'number' && Number.isNaN(v);

function startsWith(v: Value, prefix: Value): boolean {
  if (typeof v === 'string' && typeof prefix === 'string') return v.startsWith(prefix);
  if (v instanceof Uint8Array && prefix instanceof Uint8Array) return v.length >= prefix.length && compareBytes(v.subarray(0, prefix.length), prefix) === 0;
  return false;
}
/** The first `n` characters (or bytes) of a bound, to compare with a prefix of that length. */
function head(v: Value, like: Value): Value {
  if (typeof v === 'string' && typeof like === 'string') return v.slice(0, like.length);
  if (v instanceof Uint8Array && like instanceof Uint8Array) return v.subarray(0, like.length);
  return v;
}

// ---------- file metrics ----------

export function mayMatchMetrics(e: Expr, f: ContentFile): boolean {
  if (f.recordCount === 0) return false;
  if (f.recordCount < 0) return true; // some v1 writers wrote -1
  return metrics(e, f);
}

function metrics(e: Expr, f: ContentFile): boolean {
  switch (e.op) {
    case 'true': return true;
    case 'false': return false;
    case 'and': return metrics(e.left, f) && metrics(e.right, f);
    case 'or': return metrics(e.left, f) || metrics(e.right, f);
    case 'not': return true; // rewritten away by bindFilter
    default: return e.term.transform ? true : predicateMetrics(e, f);
  }
}

function predicateMetrics(p: Predicate, f: ContentFile): boolean {
  const id = p.term.id;
  const values = f.valueCounts?.get(id);
  const nulls = f.nullValueCounts?.get(id);
  const nans = f.nanValueCounts?.get(id);
  const nullsOnly = values !== undefined && nulls !== undefined && values - nulls === 0;
  const nansOnly = values !== undefined && nans !== undefined && nans === values;
  const bound = (m: Map<number, Uint8Array> | undefined) => {
    const b = m?.get(id);
    return b === undefined ? undefined : fromBytes(p.term.type, b);
  };
  switch (p.op) {
    case 'is-null': return nulls !== 0;
    case 'not-null': return !nullsOnly;
    case 'is-nan': return nans !== 0 && !nullsOnly;
    case 'not-nan': return !nansOnly;
    case 'not-eq': case 'not-in': return true;
    case 'not-starts-with': {
      if (nulls === undefined || nulls !== 0) return true;
      const lo = bound(f.lowerBounds);
      const hi = bound(f.upperBounds);
      return !(lo !== undefined && hi !== undefined && startsWith(lo, p.value) && startsWith(hi, p.value));
    }
    default: break;
  }
  if (nullsOnly || nansOnly) return false;
  const lo = bound(f.lowerBounds);
  const hi = bound(f.upperBounds);
  const loOk = lo !== undefined && !isNaNValue(lo);
  switch (p.op) {
    case 'lt': return !(loOk && compareValues(lo!, p.value) >= 0);
    case 'lt-eq': return !(loOk && compareValues(lo!, p.value) > 0);
    case 'gt': return !(hi !== undefined && compareValues(hi, p.value) <= 0);
    case 'gt-eq': return !(hi !== undefined && compareValues(hi, p.value) < 0);
    case 'eq':
      if (lo !== undefined && isNaNValue(lo)) return true;
      return !((loOk && compareValues(lo!, p.value) > 0) || (hi !== undefined && compareValues(hi, p.value) < 0));
    case 'in': {
      if (p.values.length > IN_LIMIT || (lo !== undefined && isNaNValue(lo))) return true;
      return p.values.some((v) => !(loOk && compareValues(lo!, v) > 0) && !(hi !== undefined && compareValues(hi, v) < 0));
    }
    case 'starts-with':
      if (loOk && compareValues(head(lo!, p.value), p.value) > 0) return false;
      if (hi !== undefined && compareValues(head(hi, p.value), p.value) < 0) return false;
      return true;
    default: return true;
  }
}

// ---------- partition predicates ----------

/** A predicate on partition field `pos` (the index in the spec's fields), in its result type. */
export type PartPredicate =
  | { op: 'is-null' | 'not-null' | 'is-nan' | 'not-nan'; pos: number; type: PrimitiveType }
  | { op: 'lt' | 'lt-eq' | 'gt' | 'gt-eq' | 'eq' | 'not-eq' | 'starts-with' | 'not-starts-with'; pos: number; type: PrimitiveType; value: Value }
  | { op: 'in' | 'not-in'; pos: number; type: PrimitiveType; values: Value[] };
export type PartExpr = { op: 'true' } | { op: 'false' } | { op: 'and' | 'or'; left: PartExpr; right: PartExpr } | PartPredicate;

/**
 * Exact evaluation on one partition tuple. A null compares false; the negations (not-eq, not-in,
 * not-starts-with) of a null hold when pruning (a file is kept) but not when `strict` (a residual
 * must keep checking them: in SQL `null <> 1` is not true).
 */
export function partitionMatches(e: PartExpr, tuple: ReadonlyArray<Value | null>, strict = false): boolean {
  switch (e.op) {
    case 'true': return true;
    case 'false': return false;
    case 'and': return partitionMatches(e.left, tuple, strict) && partitionMatches(e.right, tuple, strict);
    case 'or': return partitionMatches(e.left, tuple, strict) || partitionMatches(e.right, tuple, strict);
    default: break;
  }
  const v = tuple[e.pos] ?? null;
  switch (e.op) {
    case 'is-null': return v === null;
    case 'not-null': return v !== null;
    case 'is-nan': return isNaNValue(v ?? undefined);
    case 'not-nan': return !isNaNValue(v ?? undefined);
    case 'not-eq': return v === null ? !strict : compareValues(v, e.value) !== 0;
    case 'not-in': return v === null ? !strict : !e.values.some((x) => compareValues(v, x) === 0);
    case 'not-starts-with': return v === null ? !strict : !startsWith(v, e.value);
    default: break;
  }
  if (v === null) return false;
  switch (e.op) {
    case 'lt': return compareValues(v, e.value) < 0;
    case 'lt-eq': return compareValues(v, e.value) <= 0;
    case 'gt': return compareValues(v, e.value) > 0;
    case 'gt-eq': return compareValues(v, e.value) >= 0;
    case 'eq': return compareValues(v, e.value) === 0;
    case 'in': return e.values.some((x) => compareValues(v, x) === 0);
    case 'starts-with': return startsWith(v, e.value);
  }
}

/** May a manifest hold a matching partition, given its partition field summaries? */
export function summariesMayMatch(e: PartExpr, summaries: FieldSummary[] | null): boolean {
  if (!summaries) return true;
  switch (e.op) {
    case 'true': return true;
    case 'false': return false;
    case 'and': return summariesMayMatch(e.left, summaries) && summariesMayMatch(e.right, summaries);
    case 'or': return summariesMayMatch(e.left, summaries) || summariesMayMatch(e.right, summaries);
    default: break;
  }
  const s = summaries[e.pos];
  if (!s) return true;
  const float = e.type.type === 'float' || e.type.type === 'double';
  const allNull = s.containsNull && s.lowerBound === null && (!float || s.containsNan === false);
  const lo = s.lowerBound === null ? undefined : fromBytes(e.type, s.lowerBound);
  const hi = s.upperBound === null ? undefined : fromBytes(e.type, s.upperBound);
  switch (e.op) {
    case 'is-null': return s.containsNull;
    case 'not-null': return !allNull;
    case 'is-nan': return s.containsNan !== false && !allNull;
    case 'not-nan': return !(s.containsNan === true && !s.containsNull && s.lowerBound === null);
    case 'not-eq': case 'not-in': return true;
    case 'not-starts-with':
      if (s.containsNull || lo === undefined || hi === undefined) return true;
      return !(startsWith(lo, e.value) && startsWith(hi, e.value));
    default: break;
  }
  if (lo === undefined || hi === undefined) return false; // every value is null (or NaN)
  switch (e.op) {
    case 'lt': return compareValues(lo, e.value) < 0;
    case 'lt-eq': return compareValues(lo, e.value) <= 0;
    case 'gt': return compareValues(hi, e.value) > 0;
    case 'gt-eq': return compareValues(hi, e.value) >= 0;
    case 'eq': return compareValues(lo, e.value) <= 0 && compareValues(hi, e.value) >= 0;
    case 'in': return e.values.length > IN_LIMIT || e.values.some((x) => compareValues(lo, x) <= 0 && compareValues(hi, x) >= 0);
    case 'starts-with': return compareValues(head(lo, e.value), e.value) <= 0 && compareValues(head(hi, e.value), e.value) >= 0;
  }
}
