// Completion of a YAML document from its JSON Schema (the flow model's, `GET .../flows/schema`):
// the keys the mapping at the cursor may still take, and the values of a key with fixed ones
// (`type:` of a task or trigger, `level:`, an input's type). The mapping at the cursor and its path
// (`tasks[].then[]`) come from indentation, not from a parse: the text being typed is seldom valid
// YAML. Where the schema has alternatives (a task is one of its types), the mapping's own `type:`
// picks one; before it is known, the keys every alternative shares are offered.
import type { Completion, CompletionContext, CompletionResult, CompletionSource } from '@codemirror/autocomplete';

export interface Schema {
  $ref?: string; $defs?: Record<string, Schema>; type?: string | string[]; const?: unknown; enum?: unknown[];
  properties?: Record<string, Schema>; required?: string[]; items?: Schema; anyOf?: Schema[]; oneOf?: Schema[];
  pattern?: string; description?: string; default?: unknown;
}

interface Line { indent: number; item: boolean; keyCol: number; key?: string; value: string; blank: boolean }

function parseLine(text: string): Line {
  const m = /^( *)(- +)?(.*)$/.exec(text)!;
  const indent = m[1].length;
  const rest = m[3];
  const kv = /^([^\s:#'"-][^:#]*?|"[^"]*"|'[^']*') *:(?: +(.*))?$/.exec(rest);
  const key = kv ? kv[1].replace(/^["']|["']$/g, '') : undefined;
  const value = (kv?.[2] ?? '').replace(/ +#.*$/, '').trim().replace(/^["'](.*)["']$/, '$1');
  return { indent, item: Boolean(m[2]), keyCol: indent + (m[2]?.length ?? 0), key, value, blank: !m[2] && (rest.trim() === '' || rest.trimStart().startsWith('#')) };
}

/** A mapping on the way to the cursor: the key (and whether a list item) that leads into it from its parent, and its keys. */
interface Frame { via?: { key: string; seq: boolean }; keys: Map<string, string> }

const MAX_DEPTH = 32;

/** The mapping whose keys start at `col` and include line `idx` (or start there when `itemStart`), and its ancestors. */
function frames(lines: Line[], idx: number, col: number, itemStart: boolean, cursor: number, depth = 0): Frame[] | null {
  if (depth > MAX_DEPTH) return null;
  const keys = new Map<string, string>();
  const here = lines[idx];
  if (idx !== cursor && here.key !== undefined) keys.set(here.key, here.value);
  let dash = itemStart ? here.indent : undefined;
  let top = idx;
  let parent = -1;
  if (!itemStart) {
    for (let i = idx - 1; i >= 0; i--) {
      const l = lines[i];
      if (l.blank || (l.indent > col) || (l.item && l.indent >= col)) continue;
      if (l.keyCol === col) {
        if (l.key !== undefined) keys.set(l.key, l.value);
        top = i;
        if (l.item) { dash = l.indent; break; }
        continue;
      }
      parent = i;
      break;
    }
  }
  for (let i = idx + 1; i < lines.length; i++) {
    const l = lines[i];
    if (l.blank || l.indent > col || (l.item && l.indent >= col)) continue;
    if (!l.item && l.indent === col && l.key !== undefined) { keys.set(l.key, l.value); continue; }
    break;
  }
  if (dash !== undefined) {
    // A list item: its list is the value of the nearest key above, left of the dash.
    parent = -1;
    for (let i = top - 1; i >= 0; i--) {
      const l = lines[i];
      if (l.blank || l.indent > dash || (l.item && l.indent === dash)) continue;
      parent = i;
      break;
    }
  }
  if (parent < 0) return col === 0 && dash === undefined ? [{ keys }] : null;
  const p = lines[parent];
  if (p.key === undefined || p.value !== '') return null;
  const up = frames(lines, parent, p.keyCol, p.item, cursor, depth + 1);
  return up ? [...up, { via: { key: p.key, seq: dash !== undefined }, keys }] : null;
}

export function resolve(root: Schema, s: Schema): Schema {
  for (let i = 0; i < 8 && s.$ref; i++) {
    const name = /^#\/\$defs\/(.+)$/.exec(s.$ref)?.[1];
    s = s.$ref === '#' ? root : name && root.$defs?.[name] ? root.$defs[name] : {};
  }
  return s;
}

/** The object alternatives of a schema. */
function alternatives(root: Schema, s: Schema): Schema[] {
  const r = resolve(root, s);
  const alts = r.anyOf ?? r.oneOf;
  return alts ? alts.flatMap((a) => alternatives(root, a)) : r.properties ? [r] : [];
}

export function valuesOf(root: Schema, s: Schema | undefined): string[] {
  if (!s) return [];
  const r = resolve(root, s);
  if (r.const !== undefined) return [String(r.const)];
  if (r.enum) return r.enum.map(String);
  if (r.anyOf ?? r.oneOf) return (r.anyOf ?? r.oneOf)!.flatMap((a) => valuesOf(root, a));
  return r.type === 'boolean' ? ['true', 'false'] : [];
}

/** The alternatives a mapping with these keys can be: its `type:` picks when given. */
function pick(root: Schema, alts: Schema[], keys: Map<string, string>): Schema[] {
  const type = keys.get('type');
  if (alts.length <= 1 || !type) return alts;
  const exact = alts.filter((a) => valuesOf(root, a.properties?.type).includes(type));
  if (exact.length) return exact;
  const patterned = alts.filter((a) => {
    const p = a.properties?.type && resolve(root, a.properties.type).pattern;
    try { return p ? new RegExp(p).test(type) : false; } catch { return false; }
  });
  return patterned.length ? patterned : alts;
}

/** The alternatives of the mapping at the end of the path (ignoring `exclude` among its own keys). */
export function schemasAt(root: Schema, path: Frame[], exclude?: string): Schema[] {
  let cur = [root];
  for (let i = 0; i < path.length; i++) {
    const f = path[i];
    if (f.via) {
      const prev = path[i - 1];
      const next = pick(root, cur.flatMap((s) => alternatives(root, s)), prev.keys)
        .flatMap((a) => (a.properties?.[f.via!.key] ? [a.properties[f.via!.key]] : []));
      cur = f.via.seq ? next.map((s) => resolve(root, s).items).filter((s): s is Schema => Boolean(s)) : next;
    }
  }
  const keys = new Map(path[path.length - 1].keys);
  if (exclude) keys.delete(exclude);
  return pick(root, cur.flatMap((s) => alternatives(root, s)), keys);
}

export function typeText(root: Schema, s: Schema): string {
  const r = resolve(root, s);
  if (r.const !== undefined) return JSON.stringify(r.const);
  if (r.enum) return r.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (Array.isArray(r.type)) return r.type.join(' | ');
  if (r.type === 'array') return 'list';
  if (r.type === 'object') return 'mapping';
  return r.type ?? ((r.anyOf ?? r.oneOf) ? 'one of several' : 'any');
}

export interface CursorContext { mode: 'key' | 'value'; key?: string; prefix: string; path: Frame[] }

/** What is being typed at the end of `before` (the text of the document before the cursor). */
export function cursorContext(before: string, after = ''): CursorContext | null {
  const all = before.split('\n');
  const current = all[all.length - 1];
  const keyMode = /^( *)(- +)?([\w.-]*)$/.exec(current);
  const valueMode = keyMode ? null : /^( *)(- +)?([\w.-]+) *: +([\w.-]*)$/.exec(current);
  const m = keyMode ?? valueMode;
  if (!m) return null;
  const lines = [...all, ...after.split('\n').slice(1)].map(parseLine);
  const cursor = all.length - 1;
  const col = m[1].length + (m[2]?.length ?? 0);
  const path = frames(lines, cursor, col, Boolean(m[2]), cursor);
  if (!path) return null;
  return keyMode ? { mode: 'key', prefix: m[3], path } : { mode: 'value', key: m[3], prefix: m[4], path };
}

/** The completions at the end of `before`, with where the completed word starts (as an offset back from the cursor). */
export function completionsAt(root: Schema, before: string, after = ''): { options: Completion[]; back: number } | null {
  const ctx = cursorContext(before, after);
  if (!ctx) return null;
  const frame = ctx.path[ctx.path.length - 1];
  if (ctx.mode === 'value') {
    const alts = schemasAt(root, ctx.path, ctx.key);
    const seen = new Set<string>();
    const options: Completion[] = [];
    for (const a of alts) {
      for (const v of valuesOf(root, a.properties?.[ctx.key!])) {
        if (seen.has(v)) continue;
        seen.add(v);
        const required = ctx.key === 'type' ? (a.required ?? []).filter((k) => k !== 'id' && k !== 'type') : [];
        options.push({ label: v, type: 'enum', detail: required.length ? `needs ${required.join(', ')}` : undefined, info: a.description });
      }
    }
    return options.length ? { options, back: ctx.prefix.length } : null;
  }
  const alts = schemasAt(root, ctx.path);
  if (!alts.length) return null;
  // Before the alternative is known, the keys they all share.
  const names = Object.keys(alts[0].properties ?? {}).filter((k) => alts.every((a) => a.properties?.[k]));
  const indent = ' '.repeat(before.length - before.lastIndexOf('\n') - 1 - ctx.prefix.length);
  const options: Completion[] = names.filter((k) => !frame.keys.has(k)).map((k) => {
    const prop = resolve(root, alts[0].properties![k]);
    const required = alts.every((a) => a.required?.includes(k));
    const isList = prop.type === 'array';
    const isMap = prop.type === 'object' && Boolean(prop.properties);
    return {
      label: k, type: 'property', boost: required ? 1 : 0,
      detail: `${typeText(root, prop)}${required ? ', required' : ''}`, info: prop.description,
      apply: isList ? `${k}:\n${indent}  - ` : isMap ? `${k}:\n${indent}  ` : `${k}: `,
    };
  });
  return options.length ? { options, back: ctx.prefix.length } : null;
}

/** A CodeMirror completion source over the schema `load` answers (asked once, on first use). */
export function schemaCompletion(load: () => Promise<Schema>): CompletionSource {
  let schema: Schema | null = null;
  let loading: Promise<Schema | null> | null = null;
  return async (context: CompletionContext): Promise<CompletionResult | null> => {
    loading ??= load().then((s) => (schema = s), () => { loading = null; return null; });
    const root = schema ?? (await loading);
    if (!root) return null;
    const line = context.state.doc.lineAt(context.pos);
    const before = context.state.sliceDoc(Math.max(0, line.from - 20_000), context.pos);
    const after = context.state.sliceDoc(context.pos, Math.min(context.state.doc.length, context.pos + 20_000));
    const found = completionsAt(root, before, after);
    return found ? { from: context.pos - found.back, options: found.options, validFor: /^[\w.-]*$/ } : null;
  };
}
