// What a policy decision (src/policy/decide.ts) becomes in a statement on the embedded engine:
// parse-tree nodes, in the shape json_serialize_sql writes them, that the rewrite of a catalog
// table reference splices into the subquery replacing it (docs/machines.md "Policies on the
// embedded engine"): a masked column's mask expression, a denied column's failing expression, the
// row filter. Every expression, the ones svc writes and the ones an administrator wrote (CUSTOM
// masks, row filters), is parsed by DuckDB's parser in a fixed frame and taken out of the tree,
// never spliced as text; the frame must come back exactly as it went in, the expression passes
// the embedded engine's tree rules, and it may not aggregate, window or expand. `current_user`
// means the subject, as in Trino. The built-in masks give the values Trino's Ranger transformers
// give (service-def.ts MASK_TYPES), rewritten in DuckDB's functions: DuckDB's regexp_replace
// takes no lambda, and Trino's to_hex is upper-case.
import { isLosslessNumber, parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import type { ColumnMask, PolicyDecision } from '../../policy/decide.js';
import { constant } from '../sql/build.js';
import { quoteIdent } from '../sql/lexer.js';
import type { Node, ScalarQuery, SqlParser } from '../sql/parser.js';
import { checkTree, TreeRefusal } from '../sql/rules.js';

/** A statement refused by a policy, or by a policy's SQL that cannot run; the message names the policy. */
export class PolicyRefusal extends Error {
  constructor(readonly policy: string, message: string) { super(message); }
}

export interface PolicySqlContext {
  parser: SqlParser;
  /** The subject's user name (the person's email, the client's id): what `current_user` means. */
  user: string;
  /** The engine's aggregate functions, lower case (aggregateFunctions). */
  aggregates: ReadonlySet<string>;
}

/** A column of the table: its name and its DuckDB type as DuckDB prints it (`VARCHAR`, `DECIMAL(10,2)`). */
export interface TableColumn { name: string; type: string }

export interface TablePolicySql {
  /** The expression each denied or masked column is projected as, under its own name. */
  columns: Map<string, Node>;
  /** The row filter: the WHERE of the subquery, or null. */
  where: Node | null;
}

/** An administrator's expression longer than this is refused rather than parsed. */
export const MAX_POLICY_EXPRESSION_CHARS = 65_536;
const FRAME_TABLE = 'svc_policy_frame';
const MASK_FRAME = (expr: string) => `SELECT (\n${expr}\n) FROM ${FRAME_TABLE}`;
const FILTER_FRAME = (expr: string) => `SELECT * FROM ${FRAME_TABLE} WHERE (\n${expr}\n)`;
const SUBJECT_NAMES = new Set(['current_user', 'user', 'session_user']);
/** Set-returning functions DuckDB accepts in a projection: they would change the table's rows. */
const SET_RETURNING = new Set(['unnest', 'unlist']);

/**
 * The SQL of what `decision` leaves to the statement on `table` (its name for messages). Throws
 * PolicyRefusal when the table is denied or a policy's expression cannot be used.
 */
export async function tablePolicySql(ctx: PolicySqlContext, table: string, decision: PolicyDecision, columns: readonly TableColumn[]): Promise<TablePolicySql> {
  if (decision.denied) throw new PolicyRefusal(decision.denied.policy, `policy "${decision.denied.policy}" denies ${decision.denied.access} on ${table}`);
  const out: TablePolicySql = { columns: new Map(), where: null };
  for (const column of columns) {
    const denied = decision.deniedColumns.get(column.name);
    const mask = decision.masks.get(column.name);
    if (denied !== undefined) out.columns.set(column.name, await deniedColumnExpression(ctx, column, `policy "${denied}" denies select on column ${column.name} of ${table}`));
    else if (mask) out.columns.set(column.name, await maskExpression(ctx, column, mask));
  }
  if (decision.rowFilter) out.where = await rowFilterExpression(ctx, decision.rowFilter);
  return out;
}

/** `CAST(error(message) AS <type>)`: fails when, and only when, a query reads it. */
export async function deniedColumnExpression(ctx: PolicySqlContext, column: TableColumn, message: string): Promise<Node> {
  const call = await svcExpression(ctx, "error('')");
  return castTo({ ...call, children: [constant(message)] }, await columnType(ctx, column));
}

/** The row filter as the expression of a WHERE. */
export async function rowFilterExpression(ctx: PolicySqlContext, f: { policy: string; filter: string }): Promise<Node> {
  return adminExpression(ctx, f.filter, `row filter of policy "${f.policy}"`, f.policy, 'filter');
}

/** The expression a masked column is projected as (Trino's transformer of its mask type, in DuckDB). */
export async function maskExpression(ctx: PolicySqlContext, column: TableColumn, mask: ColumnMask): Promise<Node> {
  const what = `mask ${mask.type} of policy "${mask.policy}" on column ${column.name}`;
  const type = await columnType(ctx, column);
  const kind = typeKind(type);
  const c = quoteIdent(column.name);
  const notFor = () => new PolicyRefusal(mask.policy, `${what} does not apply to its type ${column.type}: ${mask.type === 'MASK_DATE_SHOW_YEAR' ? 'it takes dates and timestamps' : 'it takes text (VARCHAR)'}, as Trino's transformer does`);
  switch (mask.type) {
    case 'MASK_NULL': return castTo(constant(null), type);
    case 'MASK_NONE': return svcExpression(ctx, c);
    case 'CUSTOM': {
      const text = (mask.expression ?? '').replaceAll('{col}', () => c).replaceAll('{type}', () => column.type);
      return castTo(await adminExpression(ctx, text, what, mask.policy, 'mask'), type);
    }
    case 'MASK_DATE_SHOW_YEAR':
      if (kind === 'date' || kind === 'timestamp') return castTo(await svcExpression(ctx, `date_trunc('year', ${c})`), type);
      // An instant's year in UTC, as Trino reads Iceberg's timestamptz, whatever the session's zone.
      if (kind === 'timestamptz') return svcExpression(ctx, `timezone('UTC', date_trunc('year', timezone('UTC', ${c})))`);
      throw notFor();
  }
  if (kind !== 'text') throw notFor();
  switch (mask.type) {
    // Trino: regexp_replace of [A-Z], [a-z], [0-9] (ASCII only); every other character stays.
    case 'MASK': return svcExpression(ctx, `regexp_replace(regexp_replace(regexp_replace(${c}, '[A-Z]', 'X', 'g'), '[a-z]', 'x', 'g'), '[0-9]', '0', 'g')`);
    // Trino's patterns under Java's regex syntax: '.' stops at '\n', '$' is the end or before a
    // final '\n', '^' the start. '(.*)(.{4}$)' so masks the last line but its last four characters
    // (a line shorter than 5 is left as it is); '(^.{4})(.*)' the first line after its first four.
    case 'MASK_SHOW_LAST_4': return svcExpression(ctx, grouped(c, String.raw`^((?s:.*)\n|)(.*)(.{4})(\n?)$`, 4, 2));
    case 'MASK_SHOW_FIRST_4': return svcExpression(ctx, grouped(c, String.raw`^(.{4})(.*)((?s:.*))$`, 3, 2));
    // Trino: to_hex(sha256(to_utf8(col))), to_hex writing upper-case digits.
    case 'MASK_HASH': return svcExpression(ctx, `upper(sha256(${c}))`);
  }
  throw new PolicyRefusal(mask.policy, `${what}: unknown mask type`);
}

/** `col` when `pattern` (with `count` groups covering it) matches it: its groups in order, group `masked` as as many X. */
function grouped(c: string, pattern: string, count: number, masked: number): string {
  const p = `'${pattern}'`;
  const groups = Array.from({ length: count }, (_, i) => (i + 1 === masked ? `repeat('X', length(regexp_extract(${c}, ${p}, ${i + 1})))` : `regexp_extract(${c}, ${p}, ${i + 1})`));
  return `CASE WHEN regexp_matches(${c}, ${p}) THEN ${groups.join(' || ')} ELSE ${c} END`;
}

/** The engine's aggregate functions, lower case: masks and row filters may not call them. */
export async function aggregateFunctions(scalar: ScalarQuery): Promise<Set<string>> {
  const names = await scalar("SELECT coalesce(string_agg(DISTINCT lower(function_name), chr(10)), '') FROM duckdb_functions() WHERE function_type = $1::VARCHAR", 'aggregate');
  return new Set(names.split('\n').filter((n) => n !== ''));
}

// ---------- parsing in a frame ----------

type Slot = 'mask' | 'filter';

/** An expression svc writes from fixed text and a quoted column. */
async function svcExpression(ctx: PolicySqlContext, text: string): Promise<Node> {
  return withoutPositions(await framed(ctx, text, 'mask', (_, message) => new Error(`svc's mask expression does not parse: ${message}`)));
}

/** An administrator's expression: every check, and `current_user` bound to the subject. */
async function adminExpression(ctx: PolicySqlContext, text: string, what: string, policy: string, slot: Slot): Promise<Node> {
  if (text.length > MAX_POLICY_EXPRESSION_CHARS) throw new PolicyRefusal(policy, `${what} is longer than ${MAX_POLICY_EXPRESSION_CHARS} characters`);
  const refuse = (message: string) => new PolicyRefusal(policy, `${what} ${message}`);
  const expr = await framed(ctx, text, slot, (why, message) => refuse(why === 'parse' ? `does not parse: ${message.slice(0, 300)}` : `is refused: ${message}`));
  checkExpression(expr, ctx.aggregates, refuse);
  const source = Buffer.from(slot === 'mask' ? MASK_FRAME(text) : FILTER_FRAME(text));
  return withoutPositions(expr, (n) => (isSubject(n, source) ? constant(ctx.user) : undefined));
}

/**
 * The frame parsed with `1` in its slot, without positions: what every parse must give back around
 * the expression. It depends only on DuckDB's serializer, one per process, so it is kept once.
 */
const frames = new Map<Slot, Promise<string>>();
function frame(parser: SqlParser, slot: Slot): Promise<string> {
  let f = frames.get(slot);
  if (!f) {
    f = parser.parse(slot === 'mask' ? MASK_FRAME('1') : FILTER_FRAME('1')).then((p) => {
      if (!p.ok || p.statements.length !== 1) throw new Error(`the policy frame does not parse: ${p.ok ? 'statements' : p.message}`);
      return withoutSlot(p.statements[0]!, slot).text;
    });
    f.catch(() => frames.delete(slot));
    frames.set(slot, f);
  }
  return f;
}

/** The statement as text without its positions and with its slot emptied, and what was in the slot. */
function withoutSlot(statement: Node, slot: Slot): { text: string; expr: unknown } {
  const copy = parseLossless(stringifyLossless(statement)!) as Node;
  const node = copy.node as Node | undefined;
  let expr: unknown;
  if (node && slot === 'mask' && Array.isArray(node.select_list) && node.select_list.length === 1) { expr = node.select_list[0]; node.select_list = []; }
  if (node && slot === 'filter') { expr = node.where_clause; node.where_clause = null; }
  // Parameters are refused by checkExpression, with a clearer message than a changed frame.
  delete copy.named_param_map;
  return { text: stringifyLossless(copy, (k, v) => (k === 'query_location' ? undefined : v))!, expr };
}

/** Parses `text` in the frame of `slot` and returns the expression's node (positions kept). */
async function framed(ctx: PolicySqlContext, text: string, slot: Slot, fail: (why: 'parse' | 'rules', message: string) => Error): Promise<Node> {
  const parsed = await ctx.parser.parse(slot === 'mask' ? MASK_FRAME(text) : FILTER_FRAME(text));
  if (!parsed.ok) throw fail('parse', parsed.notSelect ? 'it is not one expression' : parsed.message);
  const [statement] = parsed.statements;
  if (parsed.statements.length !== 1 || !statement) throw fail('parse', 'it is not one expression');
  const { text: rest, expr } = withoutSlot(statement, slot);
  if (rest !== await frame(ctx.parser, slot) || expr === null || typeof expr !== 'object') throw fail('parse', 'it is not one expression');
  // checkTree's walk stops looking below a depth of 1,000 objects and arrays, which DuckDB's own
  // expression depth limit does not keep a tree within: deeper is refused, not half checked.
  if (deeperThan(statement, MAX_TREE_DEPTH)) throw fail('rules', 'it is nested too deeply');
  try { checkTree(statement, { writes: false }); } catch (err) {
    if (err instanceof TreeRefusal) throw fail('rules', err.message);
    throw err;
  }
  const node = statement.node as Node;
  return slot === 'mask' ? (node.select_list as Node[])[0]! : node.where_clause as Node;
}

const MAX_TREE_DEPTH = 900;
function deeperThan(x: unknown, limit: number): boolean {
  if (x === null || typeof x !== 'object' || isLosslessNumber(x)) return false;
  if (limit === 0) return true;
  return (Array.isArray(x) ? x : Object.values(x)).some((y) => deeperThan(y, limit - 1));
}

/**
 * What Trino refuses in a mask or filter (aggregations, window functions, grouping operations)
 * and what would change the table's columns or rows here (a `*` or COLUMNS(), unnest) or could
 * not run (a parameter); a subquery inside is a query of its own and may do any of them.
 */
function checkExpression(expr: Node, aggregates: ReadonlySet<string>, refuse: (m: string) => Error): void {
  const visit = (x: unknown, inQuery: boolean, depth: number): void => {
    if (x === null || typeof x !== 'object' || isLosslessNumber(x)) return;
    if (depth > MAX_TREE_DEPTH) throw refuse('is refused: it is nested too deeply');
    if (Array.isArray(x)) { for (const y of x) visit(y, inQuery, depth + 1); return; }
    const n = x as Node;
    if (n.class === 'PARAMETER') throw refuse('is refused: it holds a parameter');
    if (!inQuery) {
      const name = typeof n.function_name === 'string' ? n.function_name.toLowerCase() : '';
      if (n.class === 'WINDOW') throw refuse('is refused: it cannot hold a window function');
      if (n.type === 'GROUPING_FUNCTION') throw refuse('is refused: it cannot hold a grouping operation');
      if (n.class === 'FUNCTION' && aggregates.has(name)) throw refuse(`is refused: it cannot hold an aggregation (${name})`);
      if (n.class === 'FUNCTION' && SET_RETURNING.has(name)) throw refuse(`is refused: it cannot hold ${name}`);
      if (n.class === 'STAR') throw refuse('is refused: it cannot hold * or COLUMNS()');
    }
    for (const [k, v] of Object.entries(n)) visit(v, inQuery || (n.class === 'SUBQUERY' && k === 'subquery'), depth + 1);
  };
  visit(expr, false, 0);
}

/**
 * `current_user`, `user` and `session_user` (unquoted, as DuckDB's grammar reads them: its
 * position in the parsed text holds no '"') and `current_user()` mean the subject; a quoted
 * "user" is a column.
 */
function isSubject(n: Node, source: Buffer): boolean {
  const names = n.column_names;
  if (n.class === 'COLUMN_REF' && Array.isArray(names) && names.length === 1 && SUBJECT_NAMES.has(String(names[0]).toLowerCase())) {
    return source[Number(String(n.query_location))] !== 0x22;
  }
  return n.class === 'FUNCTION' && SUBJECT_NAMES.has(String(n.function_name).toLowerCase()) && !n.schema && Array.isArray(n.children) && n.children.length === 0;
}

/** A copy without positions (they point into the frame, not into the statement the node goes to), `replace` applied. */
function withoutPositions(expr: Node, replace: (n: Node) => Node | undefined = () => undefined): Node {
  const map = (x: unknown, depth: number): unknown => {
    if (depth > 1000 || x === null || typeof x !== 'object' || isLosslessNumber(x)) return x;
    if (Array.isArray(x)) return x.map((y) => map(y, depth + 1));
    const n = x as Node;
    return replace(n) ?? Object.fromEntries(Object.entries(n).map(([k, v]) => [k, k === 'query_location' ? 0 : map(v, depth + 1)]));
  };
  return map(expr, 0) as Node;
}

// ---------- types ----------

/** DuckDB's own reading of the column's type (`CAST(NULL AS <type>)`, checked to be only that). */
async function columnType(ctx: PolicySqlContext, column: TableColumn): Promise<Node> {
  const parsed = await ctx.parser.parse(`SELECT CAST(NULL AS ${column.type})`);
  const node = parsed.ok && parsed.statements.length === 1 ? parsed.statements[0]!.node as Node : undefined;
  const list = node?.select_list as Node[] | undefined;
  const cast = list?.length === 1 ? list[0] : undefined;
  const child = cast?.child as Node | undefined;
  const from = node?.from_table as Node | undefined;
  if (!cast || cast.class !== 'CAST' || child?.class !== 'CONSTANT' || from?.type !== 'EMPTY' || node?.where_clause !== null || !cast.cast_type) {
    throw new Error(`column ${column.name}: not a DuckDB type: ${column.type.slice(0, 200)}`);
  }
  return cast.cast_type as Node;
}

type TypeKind = 'text' | 'date' | 'timestamp' | 'timestamptz' | 'other';
function typeKind(castType: Node): TypeKind {
  const id = String(castType.id);
  if (id === 'VARCHAR') return 'text';
  if (id === 'DATE') return 'date';
  if (['TIMESTAMP', 'TIMESTAMP_S', 'TIMESTAMP_MS', 'TIMESTAMP_NS'].includes(id)) return 'timestamp';
  if (id === 'TIMESTAMP WITH TIME ZONE') return 'timestamptz';
  return 'other';
}

const castTo = (child: Node, castType: Node): Node => ({ class: 'CAST', type: 'OPERATOR_CAST', alias: '', query_location: 0, child, cast_type: castType, try_cast: false });
