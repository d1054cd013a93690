// Templates in flow properties: `{{ expression }}`. The expression language is deliberately small
// and has no access to the process: paths into the context (`inputs.name`, `outputs.t1.value`,
// `taskrun.value`, `execution.id`), literals, comparisons (== != < <= > >=), `&&`, `||`, `!`,
// parentheses, and the functions `secret('NAME')`, `read('path')`, `json(value)`.
// A property that is exactly one `{{ ... }}` keeps the value's type (a list for `foreach`);
// otherwise the parts are joined as text.

import { TtlCache } from '../util/ttl-cache.js';
import { storable, storableText } from './storable.js';

export class TemplateError extends Error {}

export interface TemplateFunctions {
  secret(name: string): Promise<string>;
  read(path: string): Promise<string>;
}

type Node =
  | { k: 'lit'; v: unknown }
  | { k: 'path'; parts: Array<string | Node> }
  | { k: 'call'; name: string; args: Node[] }
  | { k: 'not'; e: Node }
  | { k: 'bin'; op: string; l: Node; r: Node };

/** Limits on what one template may make a render or a validation do (docs/workflows.md). */
export const TEMPLATE_LIMITS = {
  /** characters of one `{{ expression }}` */
  expressionChars: 4096,
  /** tokens of one expression (a chain of `&&`/`||` evaluates recursively) */
  expressionTokens: 512,
  /** nesting of parentheses, brackets, calls and `!` in one expression */
  expressionDepth: 32,
  /** nesting of lists and mappings a render or a template check walks */
  valueDepth: 64,
  /** characters one render produces (text parts and whole values together) */
  renderChars: 16 * 1024 * 1024,
  /** bytes the compiled-expression cache holds (an estimate: source and tokens) */
  cacheBytes: 8 * 1024 * 1024,
} as const;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isIdentStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isIdent = (c: number) => isIdentStart(c) || isDigit(c) || c === 45;
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 11 || c === 12 || c === 0xa0 || c === 0xfeff || c === 0x2028 || c === 0x2029;
const TWO = new Set(['==', '!=', '<=', '>=', '&&', '||']);
const ONE = new Set(['<', '>', '!', '(', ')', '.', ',', '[', ']']);

/** Splits an expression into tokens in one pass (a regex with backtracking here stalled the loop). */
function tokenize(src: string): string[] {
  if (src.length > TEMPLATE_LIMITS.expressionChars) throw new TemplateError(`an expression is at most ${TEMPLATE_LIMITS.expressionChars} characters`);
  const out: string[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src.charCodeAt(i);
    if (isSpace(c)) { i++; continue; }
    if (out.length >= TEMPLATE_LIMITS.expressionTokens) throw new TemplateError(`an expression is at most ${TEMPLATE_LIMITS.expressionTokens} tokens`);
    const start = i;
    if (isDigit(c)) {
      while (i < n && isDigit(src.charCodeAt(i))) i++;
      if (src[i] === '.' && isDigit(src.charCodeAt(i + 1))) { i++; while (i < n && isDigit(src.charCodeAt(i))) i++; }
    } else if (c === 39 || c === 34) {
      i++;
      while (i < n && src.charCodeAt(i) !== c) i += src.charCodeAt(i) === 92 ? 2 : 1;
      if (i >= n) throw new TemplateError('a string is not closed');
      i++;
    } else if (isIdentStart(c)) {
      while (i < n && isIdent(src.charCodeAt(i))) i++;
    } else if (TWO.has(src.slice(i, i + 2))) {
      i += 2;
    } else if (ONE.has(src[i])) {
      i++;
    } else {
      throw new TemplateError(`unexpected character at "${src.slice(i, i + 10)}"`);
    }
    out.push(src.slice(start, i));
  }
  return out;
}

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly t: string[]) {}
  /** Recursion is bounded, so no expression can overflow the stack. */
  private nested<T>(f: () => T): T {
    if (++this.depth > TEMPLATE_LIMITS.expressionDepth) throw new TemplateError(`an expression nests at most ${TEMPLATE_LIMITS.expressionDepth} levels`);
    try { return f(); } finally { this.depth--; }
  }
  parse(): Node {
    const n = this.or();
    if (this.i < this.t.length) throw new TemplateError(`unexpected "${this.t[this.i]}"`);
    return n;
  }
  private peek() { return this.t[this.i]; }
  private eat(tok?: string) {
    const v = this.t[this.i];
    if (v === undefined || (tok !== undefined && v !== tok)) throw new TemplateError(`expected ${tok ?? 'a value'}${v ? ` but found "${v}"` : ' at the end'}`);
    this.i++;
    return v;
  }
  private or(): Node { let l = this.and(); while (this.peek() === '||') { this.i++; l = { k: 'bin', op: '||', l, r: this.and() }; } return l; }
  private and(): Node { let l = this.cmp(); while (this.peek() === '&&') { this.i++; l = { k: 'bin', op: '&&', l, r: this.cmp() }; } return l; }
  private cmp(): Node {
    const l = this.unary();
    const op = this.peek();
    if (op && ['==', '!=', '<', '<=', '>', '>='].includes(op)) { this.i++; return { k: 'bin', op, l, r: this.unary() }; }
    return l;
  }
  private unary(): Node { if (this.peek() === '!') { this.i++; return { k: 'not', e: this.nested(() => this.unary()) }; } return this.primary(); }
  private primary(): Node {
    const tok = this.eat();
    if (tok === '(') { const e = this.nested(() => this.or()); this.eat(')'); return e; }
    if (/^\d/.test(tok)) return { k: 'lit', v: Number(tok) };
    if (tok[0] === '"' || tok[0] === "'") return { k: 'lit', v: tok.slice(1, -1).replace(/\\(.)/g, '$1') };
    if (tok === 'true' || tok === 'false') return { k: 'lit', v: tok === 'true' };
    if (tok === 'null') return { k: 'lit', v: null };
    if (!/^[A-Za-z_]/.test(tok)) throw new TemplateError(`unexpected "${tok}"`);
    if (this.peek() === '(') {
      this.i++;
      const args: Node[] = [];
      while (this.peek() !== ')') { args.push(this.nested(() => this.or())); if (this.peek() === ',') this.i++; else break; }
      this.eat(')');
      return { k: 'call', name: tok, args };
    }
    const parts: Array<string | Node> = [tok];
    for (;;) {
      if (this.peek() === '.') { this.i++; parts.push(this.eat()); continue; }
      if (this.peek() === '[') { this.i++; parts.push(this.nested(() => this.or())); this.eat(']'); continue; }
      break;
    }
    return { k: 'path', parts };
  }
}

// Compiled expressions, bounded in bytes: validate takes any text from a viewer, so the cache
// must not grow with it. An entry costs its source (UTF-16) plus its tokens, estimated.
const cache = new TtlCache<string, Node>(5000, 3_600_000, Date.now, {
  max: TEMPLATE_LIMITS.cacheBytes,
  sizeOf: (expr) => 2 * expr.length * 3 + 128,
});

function compile(expr: string): Node {
  let n = cache.get(expr);
  if (!n) {
    try { n = new Parser(tokenize(expr)).parse(); } catch (e) { throw new TemplateError(`in {{ ${expr.trim().slice(0, 200)} }}: ${(e as Error).message}`); }
    cache.set(expr, n);
  }
  return n;
}

/** The bytes the compiled-expression cache holds (for tests and metrics). */
export function templateCacheBytes(): number { return cache.byteSize; }

async function evaluate(n: Node, ctx: Record<string, unknown>, fns: TemplateFunctions): Promise<unknown> {
  switch (n.k) {
    case 'lit': return n.v;
    case 'not': return !truthy(await evaluate(n.e, ctx, fns));
    case 'bin': {
      if (n.op === '&&') return truthy(await evaluate(n.l, ctx, fns)) && truthy(await evaluate(n.r, ctx, fns));
      if (n.op === '||') return truthy(await evaluate(n.l, ctx, fns)) || truthy(await evaluate(n.r, ctx, fns));
      const l = await evaluate(n.l, ctx, fns); const r = await evaluate(n.r, ctx, fns);
      switch (n.op) {
        case '==': return JSON.stringify(l) === JSON.stringify(r);
        case '!=': return JSON.stringify(l) !== JSON.stringify(r);
        case '<': return (l as number) < (r as number);
        case '<=': return (l as number) <= (r as number);
        case '>': return (l as number) > (r as number);
        default: return (l as number) >= (r as number);
      }
    }
    case 'call': {
      const args = await Promise.all(n.args.map((a) => evaluate(a, ctx, fns)));
      if (n.name === 'secret') return fns.secret(String(args[0]));
      if (n.name === 'read') return fns.read(String(args[0]));
      if (n.name === 'json') return typeof args[0] === 'string' ? safeJson(args[0]) : args[0];
      throw new TemplateError(`unknown function ${n.name}()`);
    }
    case 'path': {
      let cur: unknown = ctx;
      for (const p of n.parts) {
        const key = typeof p === 'string' ? p : await evaluate(p, ctx, fns);
        if (cur === null || cur === undefined) return undefined;
        if (typeof key !== 'string' && typeof key !== 'number') throw new TemplateError('an index must be a string or number');
        if (typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
        cur = (cur as Record<string | number, unknown>)[key];
      }
      return cur;
    }
  }
}

function safeJson(s: string): unknown {
  let v: unknown;
  try { v = JSON.parse(s); } catch { throw new TemplateError('json(): the value is not valid JSON'); }
  sizeOf(v);
  return v;
}

/**
 * Characters a value takes as text, estimated without recursion; refuses values nested deeper
 * than valueDepth (JSON.stringify and PostgreSQL would overflow their stacks on them).
 */
function sizeOf(value: unknown): number {
  let n = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') { n += v.length + 2; continue; }
    if (v === null || typeof v !== 'object') { n += 8; continue; }
    if (depth >= TEMPLATE_LIMITS.valueDepth) throw new TemplateError(`values nest at most ${TEMPLATE_LIMITS.valueDepth} levels`);
    n += 2;
    for (const [k, x] of Object.entries(v)) { n += k.length + 4; stack.push([x, depth + 1]); }
  }
  return n;
}

export function truthy(v: unknown): boolean {
  if (typeof v === 'string') return v !== '' && v.toLowerCase() !== 'false' && v !== '0';
  if (Array.isArray(v)) return v.length > 0;
  return Boolean(v);
}

type Segment = { text: string } | { expr: string };

/**
 * Splits a string into text and `{{ expression }}` parts in one pass: each `{{` is closed by the
 * first `}}` after it, and a `{{` never closed is text (a lazy regex here was quadratic on that).
 */
export function scanTemplate(s: string): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (;;) {
    const open = s.indexOf('{{', last);
    if (open < 0) break;
    const close = s.indexOf('}}', open + 2);
    if (close < 0) break;
    if (close === open + 2) throw new TemplateError('an empty {{ }}');
    if (open > last) out.push({ text: s.slice(last, open) });
    out.push({ expr: s.slice(open + 2, close) });
    last = close + 2;
  }
  if (last < s.length) out.push({ text: s.slice(last) });
  return out;
}

export function hasTemplate(s: string): boolean { return s.includes('{{'); }

/** Counts what one render produces, so a template cannot multiply memory (read() in a loop). */
class Budget {
  private left: number = TEMPLATE_LIMITS.renderChars;
  take(v: unknown): void {
    const n = typeof v === 'string' ? v.length : sizeOf(v);
    this.left -= n;
    if (this.left < 0) throw new TemplateError(`a render produces at most ${TEMPLATE_LIMITS.renderChars} characters`);
  }
}

async function renderOne(s: string, ctx: Record<string, unknown>, fns: TemplateFunctions, budget: Budget): Promise<unknown> {
  if (!hasTemplate(s)) return s;
  const segs = scanTemplate(s);
  const exprs = segs.filter((g): g is { expr: string } => 'expr' in g);
  if (exprs.length === 0) return s;
  // A property that is exactly one {{ }} (blank around it) keeps the value's type.
  if (exprs.length === 1 && segs.every((g) => 'expr' in g || g.text.trim() === '')) {
    const v = await evaluate(compile(exprs[0].expr), ctx, fns);
    budget.take(v);
    return v === undefined ? '' : v;
  }
  const parts: string[] = [];
  for (const g of segs) {
    if ('text' in g) { parts.push(g.text); continue; }
    const v = await evaluate(compile(g.expr), ctx, fns);
    const text = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    budget.take(text);
    parts.push(text);
  }
  return parts.join('');
}

/** Renders one string (its secrets unmasked: for a task about to run). */
export async function renderString(s: string, ctx: Record<string, unknown>, fns: TemplateFunctions): Promise<unknown> {
  return renderOne(s, ctx, fns, new Budget());
}

async function walk(value: unknown, ctx: Record<string, unknown>, fns: TemplateFunctions, budget: Budget, depth: number): Promise<unknown> {
  if (typeof value === 'string') return renderOne(value, ctx, fns, budget);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= TEMPLATE_LIMITS.valueDepth) throw new TemplateError(`values nest at most ${TEMPLATE_LIMITS.valueDepth} levels`);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const v of value) out.push(await walk(v, ctx, fns, budget, depth + 1));
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = await walk(v, ctx, fns, budget, depth + 1);
  return out;
}

/**
 * Renders every string inside a value (objects and lists are walked). The result is masked:
 * every secret value the render read is replaced by ****** in it and in its errors, because
 * what a flowable task renders (foreach values, if conditions) is stored and shown. Only the
 * render of a task about to run passes `reveal`: that task gets the values, and its outputs,
 * errors and log lines are masked with the secrets it collected in `fns.revealed`.
 */
export async function render(value: unknown, ctx: Record<string, unknown>, fns: TemplateFunctions, opts: { reveal?: boolean } = {}): Promise<unknown> {
  const seen = new Set<string>();
  const reading: TemplateFunctions = { ...fns, secret: async (name) => { const v = await fns.secret(name); seen.add(v); return v; } };
  let out: unknown;
  try {
    out = await walk(value, ctx, reading, new Budget(), 0);
  } catch (err) {
    if (opts.reveal || !(err instanceof Error)) throw err;
    const message = storableText(maskSecrets(err.message, seen) as string);
    throw message === err.message ? err : new TemplateError(message);
  }
  if (opts.reveal) return out;
  // What this render gives is stored as is (foreach values, iterations): storable too.
  try { return storable(maskSecrets(out, seen), 'the rendered value'); } catch (e) { throw new TemplateError((e as Error).message); }
}

/**
 * Replaces every occurrence of the given secret values in strings inside a value (keys too). A
 * value shorter than 4 characters is replaced only where it is a whole string: as a substring it
 * would mask ordinary text.
 */
export function maskSecrets(value: unknown, secrets: Set<string>): unknown {
  if (secrets.size === 0) return value;
  const mask = (s: string) => {
    let v = s;
    for (const secret of secrets) {
      if (secret.length >= 4) { if (v.includes(secret)) v = v.split(secret).join('******'); } else if (v === secret && secret !== '') v = '******';
    }
    return v;
  };
  // Iterative: a value nested deeper than the stack allows must not throw here.
  const root = { v: value };
  const stack: Array<[Record<string, unknown> | unknown[], string | number]> = [[root, 'v']];
  while (stack.length) {
    const [holder, key] = stack.pop()!;
    const v = (holder as Record<string | number, unknown>)[key];
    if (typeof v === 'string') (holder as Record<string | number, unknown>)[key] = mask(v);
    else if (Array.isArray(v)) { const copy = [...v]; (holder as Record<string | number, unknown>)[key] = copy; for (let i = 0; i < copy.length; i++) stack.push([copy, i]); }
    else if (v && typeof v === 'object') {
      const copy: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) copy[mask(k)] = x;
      (holder as Record<string | number, unknown>)[key] = copy;
      for (const k of Object.keys(copy)) stack.push([copy, k]);
    }
  }
  return root.v;
}

/**
 * Strings inside a value, depth first, without recursion (a value nested 5,000 deep must not
 * overflow the stack); `path` names each string's place for problems.
 */
function* strings(value: unknown, base: string): Generator<{ s: string; path: string }> {
  const stack: Array<{ v: unknown; path: string }> = [{ v: value, path: base }];
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') yield { s: v, path };
    else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}[${i}]` });
    else if (v && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ v: entries[i][1], path: path ? `${path}.${entries[i][0]}` : entries[i][0] });
    }
  }
}

/** Checks the syntax of every template in a value; returns the first problem with its path. */
export function checkTemplates(value: unknown, path = ''): { path: string; message: string } | null {
  for (const { s, path: p } of strings(value, path)) {
    if (!hasTemplate(s)) continue;
    try {
      for (const g of scanTemplate(s)) if ('expr' in g) compile(g.expr);
    } catch (e) { return { path: p, message: (e as Error).message }; }
  }
  return null;
}

/** Does any template in the value call secret()? */
export function usesSecrets(value: unknown): boolean {
  for (const { s } of strings(value, '')) {
    if (!hasTemplate(s)) continue;
    try {
      if (scanTemplate(s).some((g) => 'expr' in g && /\bsecret\s*\(/.test(g.expr))) return true;
    } catch { /* an invalid template is reported by checkTemplates */ }
  }
  return false;
}
