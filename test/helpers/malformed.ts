// Malformed variants of every operation of an OpenAPI document, for the robustness sweep: path
// parameters, query parameters and bodies that a careless or hostile client sends. Each variant
// is a ready inject() request; `what` names it in failure messages.
import { randomUUID } from 'node:crypto';

export interface Variant { what: string; method: string; url: string; headers: Record<string, string>; payload?: string | Buffer }

interface Param { name: string; in: string; schema?: Record<string, unknown> }
interface Operation { parameters?: Param[]; requestBody?: { content: Record<string, { schema?: Record<string, unknown> }> } }

const DEEP = 5_000;

/** Path parameter values: NUL, invalid UTF-8 (a lone surrogate's bytes), lengths, odd segments. */
export const PATH_VALUES = [
  'a%00b', '%ED%A0%80', '%FF', 'x'.repeat(99), 'x'.repeat(101), '..', 'a%2Fb', '%', '-1', '99999999999999999999999999999',
  'a\'b%22%5C', 'a%0Ab',
];
/** The few that found most faults, for the anonymous and machine callers (most answers are 401 there). */
export const CORE_PATH_VALUES = ['a%00b', '%ED%A0%80', 'x'.repeat(101), '%', '99999999999999999999999999999'];

/** Query values: NUL, invalid UTF-8, numbers past 64 bits, negative, empty, long. */
export const QUERY_VALUES = [
  'a%00b', '%ED%A0%80', '%', '1' + '0'.repeat(40), '9223372036854775808', '-1', '1e309', 'abc', '', 'x'.repeat(10_000),
];
export const CORE_QUERY_VALUES = ['a%00b', '%ED%A0%80', '1' + '0'.repeat(40)];

/** Raw JSON texts that are wrong at any route: types, NUL and lone surrogates in keys and values, depth, number sizes. */
export const JSON_BODIES = [
  'null', '[]', '123', '"s"', 'true', '{', '{"a":1,}', '', '{"a":"\\u0000"}', '{"a\\u0000":1}', '{"a":"\\ud800"}',
  '{"\\udc00":1}', '["\\ud83d"]', '[' .repeat(DEEP) + ']'.repeat(DEEP), '{"a":'.repeat(DEEP) + '1' + '}'.repeat(DEEP),
  '{"n":1e400}', '{"n":123456789012345678901234567890}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}',
];

/** Bodies of other content types: XML, YAML (broken, NUL, 150 aliases, 3,000 deep), text with NUL, forms with NUL, multipart without boundary, bytes. */
export const OTHER_BODIES: Array<[string, string | Buffer]> = [
  ['application/xml', '<a>1</a>'], ['text/xml', '<a/>'], ['application/x-yaml', 'a: [1'], ['application/x-yaml', 'a: "\\0"'],
  ['application/x-yaml', `x: &a [1]\ny: [${Array.from({ length: 150 }, () => '*a').join(', ')}]\n`], ['application/x-yaml', `x: ${'['.repeat(3_000)}${']'.repeat(3_000)}\n`],
  ['text/plain', 'x\u0000y'], ['text/plain', '\ud800'], ['application/x-www-form-urlencoded', 'a=%00&b=%ED%A0%80&c[d]=1'],
  ['multipart/form-data', '--x\r\n'], ['application/octet-stream', Buffer.from([0, 255, 0xed, 0xa0, 0x80])],
  ['application/json; charset=latin1', '{"a":1}'], ['application/json', Buffer.from([0xff, 0xfe, 0x7b, 0x7d])],
];

/** A plausible value for a path parameter, so the other parameters' variants get past routing. */
function validPathValue(p: Param): string {
  if ((p.schema as { format?: string } | undefined)?.format === 'uuid') return randomUUID();
  return ({ ws: 'default', prefix: 'default', namespace: 'company.team', service: 'svc', path: 'index.html' } as Record<string, string>)[p.name] ?? 'x1';
}

/** A sample of a JSON schema with every string replaced by `str` and every number by `num`. */
function sample(schema: Record<string, unknown> | undefined, str: unknown, num: unknown, depth = 0): unknown {
  if (!schema || depth > 6) return str;
  const s = schema as { type?: string | string[]; properties?: Record<string, Record<string, unknown>>; items?: Record<string, unknown>; anyOf?: Array<Record<string, unknown>>; enum?: unknown[] };
  if (s.anyOf?.length) return sample(s.anyOf[0], str, num, depth + 1);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === 'object' || s.properties) {
    return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, sample(v, str, num, depth + 1)]));
  }
  if (type === 'array') return [sample(s.items, str, num, depth + 1)];
  if (type === 'number' || type === 'integer') return num;
  if (type === 'boolean') return str;
  return str;
}

/** Every variant of one operation. `full` (the session caller) sends them all; otherwise the core ones. */
export function variantsOf(path: string, method: string, op: Operation, full: boolean): Variant[] {
  const params = op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const valid = Object.fromEntries(pathParams.map((p) => [p.name, validPathValue(p)]));
  const urlWith = (over: Record<string, string>, query = '') =>
    path.replace(/\{([^}]+)\}/g, (_m, name: string) => over[name] ?? encodeURIComponent(valid[name])) + query;
  const out: Variant[] = [];
  const add = (what: string, url: string, headers: Record<string, string> = {}, payload?: string | Buffer) =>
    out.push({ what: `${method.toUpperCase()} ${path} ${what}`, method: method.toUpperCase(), url, headers, payload });

  for (const p of pathParams) for (const v of full ? PATH_VALUES : CORE_PATH_VALUES) add(`path ${p.name}=${v.slice(0, 20)}`, urlWith({ [p.name]: v }));
  for (const q of queryParams) {
    for (const v of full ? QUERY_VALUES : CORE_QUERY_VALUES) add(`query ${q.name}=${v.slice(0, 20)}`, urlWith({}, `?${q.name}=${v}`));
    add(`query ${q.name} twice`, urlWith({}, `?${q.name}=1&${q.name}=2`));
  }
  add('unknown query with NUL', urlWith({}, '?zz%00=%00&%ED%A0%80=1'));
  if (!['post', 'put', 'patch', 'delete'].includes(method)) return out;

  for (const [type, body] of OTHER_BODIES) add(`body ${type}`, urlWith({}), { 'content-type': type }, body);
  if (!full) { add('body deep JSON', urlWith({}), { 'content-type': 'application/json' }, JSON_BODIES[13]); return out; }
  for (const body of JSON_BODIES) add(`body ${body.slice(0, 30)}`, urlWith({}), { 'content-type': 'application/json' }, body);
  const schema = op.requestBody?.content['application/json']?.schema;
  if (schema) {
    for (const [label, str, num] of [
      ['NUL strings', 'a\u0000b', 1], ['lone surrogates', '\ud800', 1], ['huge numbers', 'x', 1e300],
      ['unsafe integers', 'x', 2 ** 64], ['negative numbers', 'x', -1], ['long strings', 'y'.repeat(100_000), 1],
      ['wrong types', 12, 'twelve'], ['objects for scalars', { a: 1 }, [1]],
    ] as const) {
      add(`body with ${label}`, urlWith({}), { 'content-type': 'application/json' }, JSON.stringify(sample(schema, str, num)));
    }
  }
  return out;
}

/** Text that must never reach a client: stack frames, framework codes, PostgreSQL and engine messages. */
export const INTERNAL_TEXT = /FST_|Maximum call stack|\n\s+at |node:internal|SQLSTATE|duplicate key|violates .* constraint|syntax error at|invalid input syntax|unsupported Unicode escape|invalid byte sequence|relation "|column "|out of range for type|Kysely|TypeError|ReferenceError|RangeError|Cannot read propert|is not a function|ECONNREFUSED|Excessive alias/;
