// Templates in flow properties: `{{ expression }}`. The expression language is deliberately small
// and has no access to the process: paths into the context (`inputs.name`, `outputs.t1.value`,
// `taskrun.value`, `execution.id`), literals, comparisons (== != < <= > >=), `&&`, `||`, `!`,
// parentheses, and the functions `secret('NAME')`, `read('path')`, `json(value)`.
// A property that is exactly one `{{ ... }}` keeps the value's type (a list for `foreach`);
// otherwise the parts are joined as text.

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

const TOKEN = /\s*(?:(\d+(?:\.\d+)?)|('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(==|!=|<=|>=|&&|\|\||[<>!().,[\]])|([A-Za-z_][A-Za-z0-9_-]*))/y;

function tokenize(src: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  let i = 0;
  while (i < src.length) {
    if (/^\s*$/.test(src.slice(i))) break;
    TOKEN.lastIndex = i;
    const m = TOKEN.exec(src);
    if (!m) throw new TemplateError(`unexpected character at "${src.slice(i).trim().slice(0, 10)}"`);
    out.push(m[0].trim());
    i = TOKEN.lastIndex;
  }
  return out;
}

class Parser {
  private i = 0;
  constructor(private readonly t: string[]) {}
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
  private unary(): Node { if (this.peek() === '!') { this.i++; return { k: 'not', e: this.unary() }; } return this.primary(); }
  private primary(): Node {
    const tok = this.eat();
    if (tok === '(') { const e = this.or(); this.eat(')'); return e; }
    if (/^\d/.test(tok)) return { k: 'lit', v: Number(tok) };
    if (tok[0] === '"' || tok[0] === "'") return { k: 'lit', v: tok.slice(1, -1).replace(/\\(.)/g, '$1') };
    if (tok === 'true' || tok === 'false') return { k: 'lit', v: tok === 'true' };
    if (tok === 'null') return { k: 'lit', v: null };
    if (!/^[A-Za-z_]/.test(tok)) throw new TemplateError(`unexpected "${tok}"`);
    if (this.peek() === '(') {
      this.i++;
      const args: Node[] = [];
      while (this.peek() !== ')') { args.push(this.or()); if (this.peek() === ',') this.i++; else break; }
      this.eat(')');
      return { k: 'call', name: tok, args };
    }
    const parts: Array<string | Node> = [tok];
    for (;;) {
      if (this.peek() === '.') { this.i++; parts.push(this.eat()); continue; }
      if (this.peek() === '[') { this.i++; parts.push(this.or()); this.eat(']'); continue; }
      break;
    }
    return { k: 'path', parts };
  }
}

const cache = new Map<string, Node>();
function compile(expr: string): Node {
  let n = cache.get(expr);
  if (!n) {
    try { n = new Parser(tokenize(expr)).parse(); } catch (e) { throw new TemplateError(`in {{ ${expr.trim()} }}: ${(e as Error).message}`); }
    if (cache.size > 5000) cache.clear();
    cache.set(expr, n);
  }
  return n;
}

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
  try { return JSON.parse(s); } catch { throw new TemplateError('json(): the value is not valid JSON'); }
}

export function truthy(v: unknown): boolean {
  if (typeof v === 'string') return v !== '' && v.toLowerCase() !== 'false' && v !== '0';
  if (Array.isArray(v)) return v.length > 0;
  return Boolean(v);
}

const WHOLE = /^\s*\{\{([\s\S]+?)\}\}\s*$/;
const PART = /\{\{([\s\S]+?)\}\}/g;

export function hasTemplate(s: string): boolean { return s.includes('{{'); }

/** Renders one string. */
export async function renderString(s: string, ctx: Record<string, unknown>, fns: TemplateFunctions): Promise<unknown> {
  if (!hasTemplate(s)) return s;
  const whole = WHOLE.exec(s);
  if (whole && !whole[1].includes('}}')) {
    const v = await evaluate(compile(whole[1]), ctx, fns);
    return v === undefined ? '' : v;
  }
  const parts: string[] = [];
  let last = 0;
  for (const m of s.matchAll(PART)) {
    parts.push(s.slice(last, m.index));
    const v = await evaluate(compile(m[1]), ctx, fns);
    parts.push(v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
    last = m.index! + m[0].length;
  }
  parts.push(s.slice(last));
  return parts.join('');
}

/** Renders every string inside a value (objects and lists are walked). */
export async function render(value: unknown, ctx: Record<string, unknown>, fns: TemplateFunctions): Promise<unknown> {
  if (typeof value === 'string') return renderString(value, ctx, fns);
  if (Array.isArray(value)) return Promise.all(value.map((v) => render(v, ctx, fns)));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await render(v, ctx, fns);
    return out;
  }
  return value;
}

/** Checks the syntax of every template in a value; returns the first problem with its path. */
export function checkTemplates(value: unknown, path = ''): { path: string; message: string } | null {
  if (typeof value === 'string') {
    for (const m of value.matchAll(PART)) {
      try { compile(m[1]); } catch (e) { return { path, message: (e as Error).message }; }
    }
    return null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) { const p = checkTemplates(value[i], `${path}[${i}]`); if (p) return p; }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) { const p = checkTemplates(v, path ? `${path}.${k}` : k); if (p) return p; }
  }
  return null;
}

/** Does any template in the value call secret()? */
export function usesSecrets(value: unknown): boolean {
  if (typeof value === 'string') return [...value.matchAll(PART)].some((m) => /\bsecret\s*\(/.test(m[1]));
  if (Array.isArray(value)) return value.some(usesSecrets);
  if (value && typeof value === 'object') return Object.values(value).some(usesSecrets);
  return false;
}
