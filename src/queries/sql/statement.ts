// What a statement is, read from DuckDB's parse trees (docs/engines.md "Statements"). DuckDB's
// parser gives the tree of a SELECT (json_serialize_sql) but not of an INSERT, UPDATE, CREATE or
// EXPLAIN, so the head of those (their kind, target and clause boundaries) is read with the lexer
// and every query or expression inside is handed to DuckDB's parser on its own, in a position
// where it can only be that (a query, an expression in parentheses, a FROM list). What runs is
// rebuilt from the head read here and the parts DuckDB parsed (render), so text that the lexer
// and DuckDB would read differently is refused rather than run. EXPLAIN [ANALYZE] is the
// statement it explains, checked recursively: EXPLAIN ANALYZE runs it.
import { LexError, quoteIdent, tokenize, type Token } from './lexer.js';
import type { Node, SqlParser } from './parser.js';

export interface QName { catalog?: string; schema?: string; name: string }
/** A query or expression part: its text as written and DuckDB's tree of the query that holds it. */
export interface Part { text: string; tree: Node }

export type Statement =
  | { kind: 'select'; text: string; tree: Node }
  | { kind: 'explain'; analyze: boolean; inner: Statement }
  | { kind: 'insert'; target: QName; alias?: string; columns?: string[]; conflict?: 'replace' | 'ignore'; byName: boolean; query: Part }
  | { kind: 'create_table_as'; target: QName; replace: boolean; ifNotExists: boolean; options: TableOptions; query: Part }
  /** A table from a column list: no query or expression in it can read anything (DuckDB refuses subqueries in defaults and checks). */
  | { kind: 'create_table'; target: QName; replace: boolean; ifNotExists: boolean; columns: Token[]; options: TableOptions; text: string }
  | { kind: 'create_view'; target: QName; replace: boolean; ifNotExists: boolean; columns?: string[]; query: Part }
  | { kind: 'update'; target: QName; alias?: string; sets: Array<{ column: string; expr: string }>; from?: string; where?: string; check: Node }
  | { kind: 'delete'; target: QName; alias?: string; using?: string; where?: string; check: Node }
  /** Statements with no query or expression that could read anything, run as written. */
  | { kind: 'ddl'; action: DdlAction; object: string; targets: QName[]; text: string; tokens: Token[] };

/** Iceberg table options as Spark (`PARTITIONED BY (...)`) and Trino (`WITH (partitioning = ARRAY[...])`) write them: the tokens inside the parentheses. */
export interface TableOptions { partitionedBy?: Token[]; with?: Token[] }

export type DdlAction = 'create' | 'alter' | 'drop' | 'analyze' | 'truncate';

export class StatementRefusal extends Error {}
/** DuckDB's parser did not accept the text: the user's SQL is wrong (a failure, not a refusal). */
export class SqlSyntaxError extends Error {}

const ALLOWED = 'allowed: SELECT, EXPLAIN [ANALYZE], INSERT, UPDATE, DELETE, TRUNCATE, CREATE TABLE | VIEW | SCHEMA | SEQUENCE, ALTER, DROP, ANALYZE';
const notAllowed = (what: string) => new StatementRefusal(`${what} is not allowed on the embedded engine (${ALLOWED})`);

/** Reads one statement; throws StatementRefusal for anything else. */
export async function readStatement(sql: string, parser: SqlParser, depth = 0): Promise<Statement> {
  if (depth > 4) throw new StatementRefusal('EXPLAIN is nested too deeply');
  let toks: Token[];
  try { toks = tokenize(sql); } catch (err) { throw new StatementRefusal((err as LexError).message); }
  while (toks.length && toks[toks.length - 1]!.text === ';') toks.pop();
  if (toks.length === 0) throw new StatementRefusal('the query has no statement');
  if (toks.some((t) => t.text === ';')) throw new StatementRefusal('send one statement per query');
  const text = sql.slice(0, toks[toks.length - 1]!.end);
  const c = new Cursor(text, toks, parser);
  const first = toks[0]!;
  const head = first.kind === 'word' ? first.value : first.text;
  switch (head) {
    case 'explain': {
      c.next();
      const analyze = c.word('analyze') || c.word('analyse');
      if (c.peek()?.text === '(') throw new StatementRefusal('EXPLAIN options are not supported on the embedded engine: use EXPLAIN or EXPLAIN ANALYZE');
      const rest = c.peek();
      if (!rest) throw new StatementRefusal('EXPLAIN needs a statement');
      return { kind: 'explain', analyze, inner: await readStatement(text.slice(rest.start), parser, depth + 1) };
    }
    case 'insert': return readInsert(c);
    case 'create': return readCreate(c);
    case 'update': return readUpdate(c);
    case 'delete': return readDelete(c);
    case 'alter': case 'drop': case 'analyze': case 'truncate': return readDdl(c, head);
    default: {
      const parsed = await parser.parse(text);
      if (parsed.ok) {
        if (parsed.statements.length !== 1) throw new StatementRefusal('send one statement per query');
        return { kind: 'select', text, tree: parsed.statements[0]! };
      }
      if (parsed.notSelect) throw notAllowed(`${head.toUpperCase()}`);
      throw new SqlSyntaxError(parsed.message);
    }
  }
}

/** The SQL that runs for a statement: its head as read here, its parts as DuckDB parsed them. */
export function render(s: Statement, part: (p: Part) => string = (p) => p.text): string {
  const q = (n: QName) => qualified(n);
  switch (s.kind) {
    case 'select': return part({ text: s.text, tree: s.tree });
    case 'explain': return `EXPLAIN ${s.analyze ? 'ANALYZE ' : ''}${render(s.inner, part)}`;
    case 'insert':
      return `INSERT ${s.conflict ? `OR ${s.conflict.toUpperCase()} ` : ''}INTO ${q(s.target)}${s.alias ? ` AS ${quoteIdent(s.alias)}` : ''}`
        + `${s.columns ? ` (${s.columns.map(quoteIdent).join(', ')})` : ''}${s.byName ? ' BY NAME' : ''}\n${part(s.query)}\n`;
    case 'create_table_as':
      return `CREATE ${s.replace ? 'OR REPLACE ' : ''}TABLE ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${q(s.target)} AS\n${part(s.query)}\n`;
    case 'create_view':
      return `CREATE ${s.replace ? 'OR REPLACE ' : ''}VIEW ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${q(s.target)}`
        + `${s.columns ? ` (${s.columns.map(quoteIdent).join(', ')})` : ''} AS\n${part(s.query)}\n`;
    case 'update':
      return `UPDATE ${q(s.target)}${s.alias ? ` AS ${quoteIdent(s.alias)}` : ''} SET ${s.sets.map((x) => `${quoteIdent(x.column)} = (\n${x.expr}\n)`).join(', ')}`
        + `${s.from ? ` FROM\n${s.from}\n` : ''}${s.where ? ` WHERE (\n${s.where}\n)` : ''}`;
    case 'delete':
      return `DELETE FROM ${q(s.target)}${s.alias ? ` AS ${quoteIdent(s.alias)}` : ''}${s.using ? ` USING\n${s.using}\n` : ''}${s.where ? ` WHERE (\n${s.where}\n)` : ''}`;
    case 'create_table': case 'ddl': return s.text;
  }
}

export const qualified = (n: QName): string => [n.catalog, n.schema, n.name].filter((x): x is string => x !== undefined).map(quoteIdent).join('.');

/** The statement an EXPLAIN explains, or the statement itself. */
export const explained = (s: Statement): Exclude<Statement, { kind: 'explain' }> => (s.kind === 'explain' ? explained(s.inner) : s);

// ---------- the heads ----------

async function readInsert(c: Cursor): Promise<Statement> {
  c.expect('insert');
  let conflict: 'replace' | 'ignore' | undefined;
  if (c.word('or')) {
    if (c.word('replace')) conflict = 'replace';
    else if (c.word('ignore')) conflict = 'ignore';
    else throw new StatementRefusal('INSERT OR takes REPLACE or IGNORE');
  }
  c.expect('into');
  const target = c.qname();
  const alias = c.word('as') ? c.ident() : undefined;
  const columns = c.peek()?.text === '(' ? c.identList() : undefined;
  let byName = false;
  if (c.word('by')) {
    if (c.word('name')) byName = true;
    else c.expect('position');
  }
  if (c.peek()?.value === 'default' && c.peek(1)?.value === 'values') throw new StatementRefusal('INSERT ... DEFAULT VALUES is not supported on the embedded engine: name the values');
  for (const [w, what] of [['returning', 'RETURNING'], ['conflict', 'ON CONFLICT']] as const) {
    if (c.atDepthZero(w)) throw new StatementRefusal(`${what} is not supported on the embedded engine`);
  }
  return { kind: 'insert', target, alias, columns, conflict, byName, query: await c.query('INSERT') };
}

async function readCreate(c: Cursor): Promise<Statement> {
  const start = c.i;
  c.expect('create');
  const replace = c.word('or') ? (c.expect('replace'), true) : false;
  if (c.word('temp') || c.word('temporary')) throw new StatementRefusal('temporary objects are not allowed on the embedded engine: a query keeps nothing on its connection');
  if (c.word('table')) {
    const ifNotExists = c.ifExists('not');
    const target = c.qname();
    const columns = c.peek()?.text === '(' ? c.inside() : undefined;
    const options = c.tableOptions();
    if (c.word('as')) {
      if (columns) throw new StatementRefusal('CREATE TABLE ... (columns) AS <query> is not supported: name the columns in the query');
      return { kind: 'create_table_as', target, replace, ifNotExists, options, query: await c.query('CREATE TABLE ... AS') };
    }
    if (!columns) throw new StatementRefusal('CREATE TABLE needs a column list or AS <query>');
    c.end();
    return { kind: 'create_table', target, replace, ifNotExists, columns, options, text: c.sql };
  }
  if (c.word('view')) {
    const ifNotExists = c.ifExists('not');
    const target = c.qname();
    const columns = c.peek()?.text === '(' ? c.identList() : undefined;
    c.expect('as');
    return { kind: 'create_view', target, replace, ifNotExists, columns, query: await c.query('CREATE VIEW') };
  }
  for (const object of ['schema', 'sequence']) {
    if (c.word(object)) {
      c.ifExists('not');
      return { kind: 'ddl', action: 'create', object, targets: [c.qname()], text: c.sql, tokens: c.toks };
    }
  }
  throw notAllowed(`CREATE ${(c.peek()?.text ?? '').toUpperCase()}`.trim());
}

async function readUpdate(c: Cursor): Promise<Statement> {
  c.expect('update');
  const target = c.qname();
  const alias = c.alias(['set']);
  c.expect('set');
  const sets: Array<{ column: string; expr: string }> = [];
  for (;;) {
    if (c.peek()?.text === '(') throw new StatementRefusal('UPDATE ... SET (a, b) = ... is not supported: set each column');
    const column = c.ident();
    if (c.peek()?.text !== '=') throw new StatementRefusal('UPDATE ... SET needs column = value');
    c.next();
    const expr = c.until(['from', 'where', 'returning'], true);
    sets.push({ column, expr });
    if (c.peek()?.text === ',') { c.next(); continue; }
    break;
  }
  const from = c.word('from') ? c.until(['where', 'returning']) : undefined;
  const where = c.word('where') ? c.until(['returning']) : undefined;
  if (c.word('returning')) throw new StatementRefusal('RETURNING is not supported on the embedded engine');
  c.end();
  const check = await c.single(`SELECT ${sets.map((s) => `(\n${s.expr}\n)`).join(', ')} FROM ${qualified(target)}${alias ? ` AS ${quoteIdent(alias)}` : ''}`
    + `${from ? `, \n${from}\n` : ''}${where ? ` WHERE (\n${where}\n)` : ''}`, 'UPDATE');
  return { kind: 'update', target, alias, sets, from, where, check };
}

async function readDelete(c: Cursor): Promise<Statement> {
  c.expect('delete');
  c.expect('from');
  const target = c.qname();
  const alias = c.alias(['using', 'where', 'returning']);
  const using = c.word('using') ? c.until(['where', 'returning']) : undefined;
  const where = c.word('where') ? c.until(['returning']) : undefined;
  if (c.word('returning')) throw new StatementRefusal('RETURNING is not supported on the embedded engine');
  c.end();
  const check = await c.single(`SELECT 1 FROM ${qualified(target)}${alias ? ` AS ${quoteIdent(alias)}` : ''}${using ? `, \n${using}\n` : ''}${where ? ` WHERE (\n${where}\n)` : ''}`, 'DELETE');
  return { kind: 'delete', target, alias, using, where, check };
}

const DDL_OBJECTS = ['table', 'view', 'schema', 'sequence'];

function readDdl(c: Cursor, action: 'alter' | 'drop' | 'analyze' | 'truncate'): Statement {
  c.next();
  if (action === 'analyze') {
    const targets = c.peek() ? [c.qname()] : [];
    c.end();
    return { kind: 'ddl', action, object: 'table', targets, text: c.sql, tokens: c.toks };
  }
  if (action === 'truncate') {
    c.word('table');
    const targets = [c.qname()];
    c.end();
    return { kind: 'ddl', action, object: 'table', targets, text: c.sql, tokens: c.toks };
  }
  const object = DDL_OBJECTS.find((o) => c.word(o));
  if (!object) throw notAllowed(`${action.toUpperCase()} ${(c.peek()?.text ?? '').toUpperCase()}`.trim());
  c.ifExists();
  const targets = [c.qname()];
  if (action === 'drop') while (c.peek()?.text === ',') { c.next(); targets.push(c.qname()); }
  return { kind: 'ddl', action, object, targets, text: c.sql, tokens: c.toks };
}

// ---------- the cursor ----------

class Cursor {
  i = 0;
  constructor(readonly sql: string, readonly toks: Token[], private readonly parser: SqlParser) {}

  peek(k = 0): Token | undefined { return this.toks[this.i + k]; }
  next(): Token {
    const t = this.toks[this.i++];
    if (!t) throw new StatementRefusal('the statement ends too early');
    return t;
  }
  word(w: string): boolean {
    const t = this.peek();
    if (t?.kind === 'word' && t.value === w) { this.i++; return true; }
    return false;
  }
  expect(w: string): void {
    if (!this.word(w)) throw new StatementRefusal(`expected ${w.toUpperCase()} ${this.peek() ? `at "${this.peek()!.text.slice(0, 40)}"` : 'at the end'}`);
  }
  /** IF EXISTS, or IF NOT EXISTS with `not`. */
  ifExists(not?: 'not'): boolean {
    if (!this.word('if')) return false;
    if (not) this.expect('not');
    this.expect('exists');
    return true;
  }
  ident(): string {
    const t = this.next();
    if (t.kind === 'word' || t.kind === 'quoted') return t.value;
    throw new StatementRefusal(`expected a name at "${t.text.slice(0, 40)}"`);
  }
  qname(): QName {
    const parts = [this.ident()];
    while (this.peek()?.text === '.' && parts.length < 3) { this.next(); parts.push(this.ident()); }
    if (parts.length === 3) return { catalog: parts[0], schema: parts[1], name: parts[2]! };
    if (parts.length === 2) return { schema: parts[0], name: parts[1]! };
    return { name: parts[0]! };
  }
  /** `[AS] alias` unless the next word is one of `stops`. */
  alias(stops: string[]): string | undefined {
    if (this.word('as')) return this.ident();
    const t = this.peek();
    if (t && (t.kind === 'quoted' || (t.kind === 'word' && !stops.includes(t.value)))) return this.ident();
    return undefined;
  }
  identList(): string[] {
    this.next();
    const out = [this.ident()];
    while (this.peek()?.text === ',') { this.next(); out.push(this.ident()); }
    if (this.next().text !== ')') throw new StatementRefusal('expected ) after the column list');
    return out;
  }
  /** The tokens inside the parentheses that start here. */
  inside(): Token[] {
    const start = this.i;
    let depth = 0;
    do {
      const t = this.next();
      if (t.text === '(') depth++;
      else if (t.text === ')') depth--;
    } while (depth > 0);
    return this.toks.slice(start + 1, this.i - 1);
  }
  tableOptions(): TableOptions {
    const o: TableOptions = {};
    for (;;) {
      if (!o.partitionedBy && this.peek()?.value === 'partitioned' && this.peek(1)?.value === 'by') {
        this.i += 2;
        if (this.peek()?.text !== '(') throw new StatementRefusal('PARTITIONED BY needs a list in parentheses');
        o.partitionedBy = this.inside();
      } else if (!o.with && this.peek()?.value === 'with' && this.peek(1)?.text === '(') {
        this.i += 1;
        o.with = this.inside();
      } else return o;
    }
  }
  /** Whether the word appears after the cursor outside parentheses. */
  atDepthZero(w: string): boolean {
    let depth = 0;
    for (let j = this.i; j < this.toks.length; j++) {
      const t = this.toks[j]!;
      if (t.text === '(' || t.text === '[' || t.text === '{') depth++;
      else if (t.text === ')' || t.text === ']' || t.text === '}') depth--;
      else if (depth === 0 && t.kind === 'word' && t.value === w) return true;
    }
    return false;
  }
  end(): void { if (this.peek()) throw new StatementRefusal(`unexpected "${this.peek()!.text.slice(0, 40)}"`); }

  /**
   * The text up to the first of `stops` (words) outside parentheses, or the end; with `comma`, a
   * comma outside parentheses stops too. `IS [NOT] DISTINCT FROM` is an operator, not a clause.
   */
  until(stops: string[], comma = false): string {
    const from = this.peek();
    if (!from) throw new StatementRefusal('the statement ends too early');
    let depth = 0;
    let last = from;
    while (this.peek()) {
      const t = this.peek()!;
      if (t.text === '(' || t.text === '[' || t.text === '{') depth++;
      else if (t.text === ')' || t.text === ']' || t.text === '}') depth--;
      else if (depth === 0) {
        if (comma && t.text === ',') break;
        if (t.kind === 'word' && stops.includes(t.value) && !(t.value === 'from' && this.peek(-1)?.value === 'distinct')) break;
      }
      last = t;
      this.i++;
    }
    if (last === from && this.peek() === from) throw new StatementRefusal('an expression is missing');
    return this.sql.slice(from.start, last.end);
  }

  /** The rest of the statement as one query DuckDB parses. */
  async query(what: string): Promise<Part> {
    const from = this.peek();
    if (!from) throw new StatementRefusal(`${what} needs a query`);
    const text = this.sql.slice(from.start);
    this.i = this.toks.length;
    return { text, tree: await this.single(text, what) };
  }

  /** DuckDB's tree of one SELECT statement, or a refusal naming `what`. */
  async single(text: string, what: string): Promise<Node> {
    const parsed = await this.parser.parse(text);
    if (!parsed.ok) {
      if (parsed.notSelect) throw new StatementRefusal(`${what} takes a query (SELECT or VALUES) here`);
      throw new SqlSyntaxError(parsed.message);
    }
    if (parsed.statements.length !== 1) throw new StatementRefusal('send one statement per query');
    return parsed.statements[0]!;
  }
}
