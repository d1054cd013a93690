// DuckDB's own parser, reached through `json_serialize_sql`: it turns SELECT statements (and what
// DuckDB parses as one: VALUES, FROM-first, TABLE, DESCRIBE, SHOW, SUMMARIZE) into their parse
// tree as JSON, and `json_deserialize_sql` turns a tree back into SQL. Every decision about what a
// statement does is taken on these trees (docs/engines.md "Statements"), never on its text. The
// JSON is read and written losslessly: a BIGINT constant past 2^53 in a query stays exact through
// a rewrite (lossless-json keeps numbers as their text).
import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';

/** A node of DuckDB's serialized parse tree (the JSON of json_serialize_sql). */
export type Node = { [key: string]: unknown };

export type ParseResult =
  | { ok: true; statements: Node[] }
  | { ok: false; notSelect: boolean; message: string };

/** Parses and prints SQL with DuckDB's parser (a connection of the engine, or a test's). */
export interface SqlParser {
  /** The parse trees of `sql`'s SELECT statements, or why there are none. */
  parse(sql: string): Promise<ParseResult>;
  /** The SQL text of a SELECT statement's tree. */
  print(statement: Node): Promise<string>;
}

/** Something that runs a one-row, one-column query with one VARCHAR parameter (a DuckDB connection). */
export type ScalarQuery = (sql: string, arg: string) => Promise<string>;

/**
 * Texts already turned into trees and trees into texts, least recently used out first, bounded in
 * characters. Both are pure functions of their input (DuckDB's parser reads no catalog), and the
 * same statements come again (a dashboard's, the scans svc writes for catalog tables): a repeat
 * then costs a JSON parse, not a DuckDB round trip (about 0.3 ms of a query's 1 ms each). Kept
 * per scope (a workspace): whether another workspace ran a statement must not show in timings.
 */
class Memo {
  private readonly map = new Map<string, string>();
  private chars = 0;
  constructor(private readonly maxChars: number, private readonly maxEntryChars: number) {}
  get(k: string): string | undefined {
    const v = this.map.get(k);
    if (v !== undefined) { this.map.delete(k); this.map.set(k, v); }
    return v;
  }
  set(k: string, v: string): void {
    const size = k.length + v.length;
    if (size > this.maxEntryChars || this.map.has(k)) return;
    while (this.map.size > 0 && this.chars + size > this.maxChars) {
      const [oldK, oldV] = this.map.entries().next().value as [string, string];
      this.map.delete(oldK);
      this.chars -= oldK.length + oldV.length;
    }
    this.map.set(k, v);
    this.chars += size;
  }
}
const parsed = new Memo(4_000_000, 200_000);

/**
 * A tree's JSON, read natively where that is exact. JSON.parse turns a number of 16 or more digits
 * (a BIGINT past 2^53, a DOUBLE's 17) into the nearest double, -0 into 0 and a three-digit
 * exponent possibly into Infinity; a text with any of them is read with lossless-json (numbers
 * kept as their text), the rest natively: about a quarter of lossless-json's time, and no number
 * objects for every walk of the tree to visit. Either way a number prints as the same text.
 */
const INEXACT = /\d{16}|-0|[eE][-+]?\d{3}/;
export function readTree(text: string): Node {
  if (!INEXACT.test(text)) {
    try { return JSON.parse(text) as Node; } catch { /* not JSON (DuckDB writes an infinite DOUBLE as Infinity): lossless-json refuses it as before */ }
  }
  return parseLossless(text) as Node;
}
const printed = new Memo(4_000_000, 200_000);

/**
 * Characters of a parse tree read into JavaScript at most: it is read (and a rewritten one
 * printed) on the event loop, and a tree is 15 to 80 times its text (a 240 KB list of constants is
 * 19 MB, about a second of parse and another of print). 8 MiB is about 0.3 s at worst.
 */
export const MAX_TREE_CHARS = 8 * 1024 * 1024;
/** Characters of trees read and printed by one parser (one statement: its views, each time named, and scans) at most. */
export const MAX_PARSER_CHARS = 4 * MAX_TREE_CHARS;
/** A tree larger than MAX_TREE_CHARS, or one past MAX_PARSER_CHARS: refused, never read. */
export class TreeTooLarge extends Error {}
const SHORTEN = 'shorten its lists of constants (a table joins as well), or filter a catalog table to fewer files';

/**
 * A SqlParser on a DuckDB connection: one round trip per call, nothing kept on the connection;
 * with a `scope`, answers are memoized within it.
 */
export function duckdbParser(scalar: ScalarQuery, scope?: string): SqlParser {
  const key = (text: string) => (scope === undefined ? undefined : `${scope}\u0000${text}`);
  // a view named 1,000 times is parsed 1,000 times: its trees count each time
  let chars = 0;
  const count = (n: number) => {
    if (n > MAX_TREE_CHARS) throw new TreeTooLarge(`the statement's parse tree is ${n} characters, over the ${MAX_TREE_CHARS} the embedded engine reads: ${SHORTEN}`);
    chars += n;
    if (chars > MAX_PARSER_CHARS) throw new TreeTooLarge(`the statement's parse trees (its views, each time it names them, and scans) come to over ${MAX_PARSER_CHARS} characters, the most the embedded engine reads for one statement: ${SHORTEN}`);
  };
  return {
    async parse(sql) {
      const k = key(sql);
      let text = k === undefined ? undefined : parsed.get(k);
      const hit = text !== undefined;
      text ??= await scalar('SELECT json_serialize_sql($1::VARCHAR)', sql);
      count(text.length);
      // every call parses afresh: callers rewrite the trees they get
      const out = readTree(text);
      if (out.error === true) {
        const message = String(out.error_message ?? 'the statement could not be parsed');
        return { ok: false, notSelect: /Only SELECT statements can be serialized/i.test(message), message };
      }
      if (!hit && k !== undefined) parsed.set(k, text);
      return { ok: true, statements: (out.statements as Node[]) ?? [] };
    },
    async print(statement) {
      const json = stringifyLossless({ error: false, statements: [statement] })!;
      count(json.length);
      const k = key(json);
      const hit = k === undefined ? undefined : printed.get(k);
      if (hit !== undefined) return hit;
      const sql = await scalar('SELECT json_deserialize_sql($1::JSON)', json);
      if (k !== undefined) printed.set(k, sql);
      return sql;
    },
  };
}

/** A tree deeper than any walk looks: refused, never half read. */
export class TreeTooDeep extends Error {}
/** JSON nesting a walk follows: DuckDB's own expression depth limit (1,000) is about 2,000 here. */
export const MAX_TREE_DEPTH = 8000;

/**
 * Calls `visit` on every object node of a tree, depth first, parents before children. A tree
 * deeper than MAX_TREE_DEPTH throws TreeTooDeep: a walk that stopped looking could miss a
 * function at the bottom that the rules refuse.
 */
export function walk(node: unknown, visit: (n: Node, parent: Node | null) => void, parent: Node | null = null, depth = 0): void {
  if (node === null || typeof node !== 'object') return;
  if (depth > MAX_TREE_DEPTH) throw new TreeTooDeep(`the statement is nested more than ${MAX_TREE_DEPTH} levels deep`);
  if (Array.isArray(node)) {
    for (const x of node) walk(x, visit, parent, depth + 1);
    return;
  }
  const n = node as Node;
  visit(n, parent);
  for (const v of Object.values(n)) if (v !== null && typeof v === 'object') walk(v, visit, n, depth + 1);
}
