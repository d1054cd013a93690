// Typed parameters of a Data API endpoint. A publisher declares each parameter (type, default,
// bounds); a call's values are checked against the declaration and bound to the query as named
// parameters ($name), never written into the SQL text. Errors name the parameter.
import { badRequest } from '../errors.js';
import type { ParamSpec } from '../db/data-api-types.js';

export const PARAM_TYPES = ['string', 'integer', 'number', 'boolean', 'date', 'timestamp'] as const;
export type ParamType = ParamSpec['type'];
export type ParamValue = string | number | boolean;

export type { ParamSpec };

export const MAX_PARAMS_PER_ENDPOINT = 50;
export const MAX_STRING = 4096;
/** Query-string names the Data API keeps for itself: no endpoint parameter may take them. */
export const RESERVED = ['limit', 'offset', 'format', 'version'] as const;
export const PARAM_NAME_RE = /^[a-z_][a-z0-9_]{0,62}$/;

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;

const invalid = (name: string, why: string) => badRequest(`invalid parameter ${name}: ${why}`);

function validDate(s: string): boolean {
  const m = DATE_RE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/**
 * The value of `raw` for parameter `p`: query-string values arrive as strings, JSON bodies as
 * typed values; both are checked against the type and bounds. Throws a 400 naming the parameter.
 */
export function coerce(p: ParamSpec, raw: unknown): ParamValue {
  const fromText = typeof raw === 'string';
  switch (p.type) {
    case 'integer': {
      let n: number;
      if (typeof raw === 'number') n = raw;
      else if (fromText && /^-?\d{1,16}$/.test(raw)) n = Number(raw);
      else throw invalid(p.name, 'must be an integer');
      if (!Number.isSafeInteger(n)) throw invalid(p.name, 'must be an integer');
      return bounded(p, n);
    }
    case 'number': {
      let n: number;
      if (typeof raw === 'number') n = raw;
      else if (fromText && raw.length <= 64 && /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) n = Number(raw);
      else throw invalid(p.name, 'must be a number');
      if (!Number.isFinite(n)) throw invalid(p.name, 'must be a finite number');
      return bounded(p, n);
    }
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      throw invalid(p.name, 'must be true or false');
    case 'date':
      if (!fromText || !validDate(raw)) throw invalid(p.name, 'must be a date (YYYY-MM-DD)');
      return raw;
    case 'timestamp':
      if (!fromText || raw.length > 40 || !TIMESTAMP_RE.test(raw) || !validDate(raw.slice(0, 10)) || Number.isNaN(Date.parse(raw.replace(' ', 'T')))) {
        throw invalid(p.name, 'must be an ISO 8601 timestamp');
      }
      return raw;
    case 'string': {
      if (!fromText) throw invalid(p.name, 'must be a string');
      const max = Math.min(p.max_length ?? MAX_STRING, MAX_STRING);
      if ([...raw].length > max) throw invalid(p.name, `must be at most ${max} characters`);
      if (p.enum && !p.enum.includes(raw)) throw invalid(p.name, `must be one of ${p.enum.join(', ')}`);
      return raw;
    }
  }
}

function bounded(p: ParamSpec, n: number): number {
  if (p.minimum !== undefined && n < p.minimum) throw invalid(p.name, `must be at least ${p.minimum}`);
  if (p.maximum !== undefined && n > p.maximum) throw invalid(p.name, `must be at most ${p.maximum}`);
  return n;
}

/**
 * The named parameters of a call: each declared parameter's given value or its default; a
 * missing required one, an unknown name or a repeated one is a 400 naming it.
 */
export function bindParams(specs: ParamSpec[], given: Record<string, unknown>): Record<string, ParamValue> {
  const out: Record<string, ParamValue> = {};
  const known = new Set(specs.map((p) => p.name));
  for (const name of Object.keys(given)) {
    if ((RESERVED as readonly string[]).includes(name)) continue;
    if (!known.has(name)) throw badRequest(`unknown parameter ${name.length > 64 ? `${name.slice(0, 64)}…` : name}: this endpoint takes ${specs.length ? specs.map((p) => p.name).join(', ') : 'no parameters'}`);
  }
  for (const p of specs) {
    const raw = given[p.name];
    if (Array.isArray(raw)) throw invalid(p.name, 'given more than once');
    if (raw === undefined || raw === null) {
      if (p.default === undefined) throw badRequest(`missing parameter ${p.name}: it is required`);
      out[p.name] = p.default;
      continue;
    }
    out[p.name] = coerce(p, raw);
  }
  return out;
}

/** `$name` references of a statement (DuckDB named parameters). */
export function referencedNames(sql: string): Set<string> {
  return new Set([...sql.matchAll(/\$([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1].toLowerCase()));
}

/** Checks the declarations a publisher sends; throws a 400 naming the parameter. */
export function checkSpecs(specs: ParamSpec[], sql: string): ParamSpec[] {
  if (specs.length > MAX_PARAMS_PER_ENDPOINT) throw badRequest(`an endpoint takes at most ${MAX_PARAMS_PER_ENDPOINT} parameters`);
  const seen = new Set<string>();
  const used = referencedNames(sql);
  const out: ParamSpec[] = [];
  for (const p of specs) {
    if (!PARAM_NAME_RE.test(p.name)) throw badRequest(`invalid parameter name ${JSON.stringify(p.name).slice(0, 80)}: lower-case letters, digits and _ (at most 63), not starting with a digit`);
    if ((RESERVED as readonly string[]).includes(p.name)) throw badRequest(`parameter name ${p.name} is reserved (${RESERVED.join(', ')} are the Data API's own)`);
    if (seen.has(p.name)) throw badRequest(`parameter ${p.name} is declared twice`);
    seen.add(p.name);
    if (!used.has(p.name)) throw badRequest(`parameter ${p.name} is not used in the SQL (refer to it as $${p.name})`);
    const numeric = p.type === 'integer' || p.type === 'number';
    if (!numeric && (p.minimum !== undefined || p.maximum !== undefined)) throw badRequest(`parameter ${p.name}: minimum and maximum apply to integer and number parameters`);
    if (p.type !== 'string' && (p.max_length !== undefined || p.enum !== undefined)) throw badRequest(`parameter ${p.name}: max_length and enum apply to string parameters`);
    if (p.minimum !== undefined && p.maximum !== undefined && p.minimum > p.maximum) throw badRequest(`parameter ${p.name}: minimum is above maximum`);
    if (p.type === 'integer' && [p.minimum, p.maximum].some((b) => b !== undefined && !Number.isSafeInteger(b))) throw badRequest(`parameter ${p.name}: integer bounds must be integers`);
    if (p.default !== undefined) {
      try { coerce(p, p.default); } catch (err) { throw badRequest(`parameter ${p.name}: the default ${(err as Error).message.replace(/^invalid parameter \S+: /, '')}`); }
    }
    out.push(p);
  }
  for (const name of used) if (!seen.has(name)) throw badRequest(`the SQL refers to $${name}, which is not a declared parameter`);
  return out;
}

/** The normalised form of bound values (sorted keys): the same call has the same text. */
export function normalise(values: Record<string, ParamValue>): string {
  return JSON.stringify(Object.keys(values).sort().map((k) => [k, values[k]]));
}
