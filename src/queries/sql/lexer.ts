// A tokenizer for DuckDB's SQL, used only to find the head of a statement (its kind, its target
// and where its query and expression parts begin and end). It never decides alone: every part it
// finds is parsed again by DuckDB's own parser (sql/parser.ts), and what runs is rebuilt from
// parts DuckDB parsed, so a disagreement between this lexer and DuckDB's ends in a refusal, never
// in a statement that does more than was checked. Literal and comment forms follow DuckDB's
// scanner (PostgreSQL's): '' inside quotes, E'' escapes, $tag$ quoting, nested /* */ comments.

export type TokenKind = 'word' | 'quoted' | 'string' | 'number' | 'param' | 'op';

export interface Token {
  kind: TokenKind;
  /** The text as written. */
  text: string;
  /** Identifiers: unquoted words lower-cased, quoted ones unescaped; strings: their value. */
  value: string;
  start: number;
  end: number;
}

export class LexError extends Error {}

// Plain white space as DuckDB's scanner reads it. Other Unicode spaces are not read alike: DuckDB
// turns some into spaces before it scans and keeps others in a name (U+2028 in `x\u2028$a$` makes
// one name of it, where a JavaScript \s would start a dollar-quoted string), so outside quotes
// they are refused: one character read two ways could hide the text after it from this lexer.
const SPACE = /[ \t\n\r\f\v]/;
const OTHER_SPACE = /[\u0085\u00a0\u1680\u180e\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]/;
const UNICODE_SPACE = 'a Unicode space character outside quotes is not read the same way everywhere: use a plain space';
const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const DOLLAR_TAG = /\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;
const WORD_PART = /[A-Za-z0-9_$\u0080-\uffff]/;

/** The tokens of `sql`, comments and white space left out. Throws LexError on an unterminated literal or comment. */
export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = sql.length;
  const push = (kind: TokenKind, start: number, end: number, value?: string) => {
    out.push({ kind, text: sql.slice(start, end), value: value ?? sql.slice(start, end), start, end });
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (SPACE.test(c)) { i++; continue; }
    if (OTHER_SPACE.test(c)) throw new LexError(UNICODE_SPACE);
    if (c === '-' && next === '-') {
      // DuckDB's scanner ends a comment at either line break: \r alone too
      let j = i + 2;
      while (j < n && sql[j] !== '\n' && sql[j] !== '\r') j++;
      i = j < n ? j + 1 : n;
      continue;
    }
    if (c === '/' && next === '*') { i = blockComment(sql, i); continue; }
    if (c === "'") { const [end, value] = quoted(sql, i, "'"); push('string', i, end, value); i = end; continue; }
    if ((c === 'e' || c === 'E') && next === "'") { const [end, value] = escaped(sql, i + 1); push('string', i, end, value); i = end; continue; }
    if ((c === 'x' || c === 'X' || c === 'b' || c === 'B' || c === 'n' || c === 'N') && next === "'") {
      const [end, value] = quoted(sql, i + 1, "'"); push('string', i, end, value); i = end; continue;
    }
    if (c === '"') { const [end, value] = quoted(sql, i, '"'); push('quoted', i, end, value); i = end; continue; }
    if (c === '$') {
      // a tag of any length, as DuckDB's (a cut-off window read a long one as a parameter)
      DOLLAR_TAG.lastIndex = i;
      const tag = DOLLAR_TAG.exec(sql);
      if (tag) {
        if (OTHER_SPACE.test(tag[0])) throw new LexError(UNICODE_SPACE);
        const close = sql.indexOf(tag[0], i + tag[0].length);
        if (close < 0) throw new LexError('unterminated dollar-quoted string');
        push('string', i, close + tag[0].length, sql.slice(i + tag[0].length, close));
        i = close + tag[0].length;
        continue;
      }
      const p = /^\$([0-9]+|[A-Za-z_][A-Za-z0-9_]*)/.exec(sql.slice(i, i + 66));
      if (p) { push('param', i, i + p[0].length); i += p[0].length; continue; }
    }
    if (c === '?') { push('param', i, i + 1); i++; continue; }
    if (/[0-9]/.test(c) || (c === '.' && next !== undefined && /[0-9]/.test(next))) {
      const m = /^(0[xX][0-9a-fA-F_]+|0[bB][01_]+|[0-9_]*\.?[0-9_]+([eE][+-]?[0-9]+)?\.?)/.exec(sql.slice(i));
      const len = m ? m[0].length : 1;
      push('number', i, i + len);
      i += len;
      continue;
    }
    if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < n && WORD_PART.test(sql[j]!)) j++;
      if (OTHER_SPACE.test(sql.slice(i, j))) throw new LexError(UNICODE_SPACE);
      push('word', i, j, sql.slice(i, j).toLowerCase());
      i = j;
      continue;
    }
    // Operators: the multi-character ones that matter for finding clause boundaries.
    const op = /^(::|:=|=>|->>|->|<=|>=|<>|!=|\|\||\*\*|\/\/|<<|>>|!~~\*|!~~|~~\*|~~|\^@)/.exec(sql.slice(i, i + 4));
    const len = op ? op[0].length : 1;
    push('op', i, i + len);
    i += len;
  }
  return out;
}

function blockComment(sql: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < sql.length) {
    if (sql[i] === '/' && sql[i + 1] === '*') { depth++; i += 2; continue; }
    if (sql[i] === '*' && sql[i + 1] === '/') { depth--; i += 2; if (depth === 0) return i; continue; }
    i++;
  }
  throw new LexError('unterminated comment');
}

/** A '...' or "..." literal whose doubled quote is an escaped one: [end, value]. */
function quoted(sql: string, start: number, q: string): [number, string] {
  let i = start + 1;
  let value = '';
  for (;;) {
    const j = sql.indexOf(q, i);
    if (j < 0) throw new LexError(q === "'" ? 'unterminated string literal' : 'unterminated quoted identifier');
    value += sql.slice(i, j);
    if (sql[j + 1] === q) { value += q; i = j + 2; continue; }
    return [j + 1, value];
  }
}

/** An E'...' literal: backslash escapes a character, '' a quote. */
function escaped(sql: string, quote: number): [number, string] {
  let i = quote + 1;
  let value = '';
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === '\\') { value += sql[i + 1] ?? ''; i += 2; continue; }
    if (c === "'") {
      if (sql[i + 1] === "'") { value += "'"; i += 2; continue; }
      return [i + 1, value];
    }
    value += c;
    i++;
  }
  throw new LexError('unterminated string literal');
}

/** Double-quotes an identifier for DuckDB (and Trino): "" escapes a quote. */
export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;
