// Layered loader: built-in defaults < svc.toml in the working directory < environment.
// A provenance map (dotted key -> 'svc.toml' or the variable's name) attributes every
// schema issue to where the value came from; every failure is one ConfigError line.
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import type { z } from 'zod';
import { readEnv, resolvePath } from './env.js';
import { unwrap } from './introspect.js';
import { ConfigError, configSchema, type Config } from './schema.js';

export const CONFIG_FILE = 'svc.toml';

export interface LoadOptions {
  /** Directory holding svc.toml; default process.cwd(). */
  cwd?: string;
  /** Environment; default process.env. */
  env?: Record<string, string | undefined>;
}

type Tree = Record<string, unknown>;
type Sources = Map<string, string>;

/** A TOML table (smol-toml builds them without a prototype) or a plain object. */
function isTable(v: unknown): v is Tree {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === null || proto === Object.prototype;
}

/** Dotted key with list indexes in brackets: `workflow.plugin_configurations[0].type`. */
export function dotted(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += (out === '' ? '' : '.') + String(seg);
  }
  return out;
}

function readFile(cwd: string): Tree {
  let text: string;
  try {
    text = readFileSync(join(cwd, CONFIG_FILE), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return {};
    throw new ConfigError(`${CONFIG_FILE}: cannot read: ${code ?? (err as Error).message}`);
  }
  try {
    return parseToml(text) as Tree;
  } catch (err) {
    const e = err as Error & { line?: number; column?: number };
    const first = String(e.message ?? err).split('\n')[0].replace(/^Invalid TOML document: /, '');
    const where = e.line !== undefined ? ` (line ${e.line}${e.column !== undefined ? `, column ${e.column}` : ''})` : '';
    throw new ConfigError(`${CONFIG_FILE}: invalid TOML: ${first}${where}`);
  }
}

/** Most bytes a `{ file = "..." }` value reads (a key or token, not a document). */
const MAX_FILE_VALUE_BYTES = 64 * 1024;

/**
 * A string key written in svc.toml as `{ file = "path" }` takes the file's content, without one
 * trailing newline; a relative path is relative to svc.toml's directory. So a secret can stay out
 * of svc.toml (SPEC 5.3.1) while every command that reads svc.toml still finds it: the
 * development setup (scripts/serve-dev.sh) keeps its keys in .run/secrets/, as a Kubernetes
 * Secret mounted as files would. Only keys whose schema is a string take this form.
 */
function readFileValues(tree: Tree, cwd: string, sources: Sources, path: string[] = []): void {
  for (const [k, v] of Object.entries(tree)) {
    const at = [...path, k];
    if (!isTable(v)) continue;
    const keys = Object.keys(v);
    const r = resolvePath(at);
    if (keys.length === 1 && keys[0] === 'file' && r.kind === 'key' && ['string', 'enum'].includes(unwrap(r.schema).kind)) {
      if (typeof v.file !== 'string' || v.file === '') throw new ConfigError(`${CONFIG_FILE}: ${dotted(at)}: file must be a path`);
      const file = isAbsolute(v.file) ? v.file : join(cwd, v.file);
      let text: string;
      try {
        if (statSync(file).size > MAX_FILE_VALUE_BYTES) throw new ConfigError(`${CONFIG_FILE}: ${dotted(at)}: ${v.file} is larger than ${MAX_FILE_VALUE_BYTES} bytes`);
        text = readFileSync(file, 'utf8');
      } catch (err) {
        if (err instanceof ConfigError) throw err;
        throw new ConfigError(`${CONFIG_FILE}: ${dotted(at)}: cannot read ${v.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      tree[k] = text.replace(/\r?\n$/, '');
      forget(sources, at);
      sources.set(dotted(at), `${CONFIG_FILE} (file ${v.file})`);
    } else {
      readFileValues(v, cwd, sources, at);
    }
  }
}

/** Record `source` for every leaf of `value` placed at `path`. */
function record(sources: Sources, path: PropertyKey[], value: unknown, source: string): void {
  if (isTable(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) record(sources, [...path, k], v, source);
    return;
  }
  sources.set(dotted(path), source);
}

function forget(sources: Sources, path: PropertyKey[]): void {
  const p = dotted(path);
  for (const k of [...sources.keys()]) {
    if (k === p || k.startsWith(`${p}.`) || k.startsWith(`${p}[`)) sources.delete(k);
  }
}

/** Place `value` at `path`, merging tables key by key (the new layer wins). */
function place(tree: Tree, sources: Sources, path: string[], value: unknown, source: string): void {
  let node = tree;
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i];
    if (!isTable(node[k])) {
      forget(sources, path.slice(0, i + 1));
      node[k] = {};
    }
    node = node[k] as Tree;
  }
  const last = path[path.length - 1];
  if (isTable(value) && isTable(node[last])) {
    for (const [k, v] of Object.entries(value)) place(tree, sources, [...path, k], v, source);
    return;
  }
  forget(sources, path);
  node[last] = value;
  record(sources, path, value, source);
}

function sourceOf(sources: Sources, path: readonly PropertyKey[]): string {
  for (let n = path.length; n > 0; n--) {
    const s = sources.get(dotted(path.slice(0, n)));
    if (s !== undefined) return s;
  }
  return 'default';
}

function valueAt(tree: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = tree;
  for (const seg of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<PropertyKey, unknown>)[seg];
  }
  return v;
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return 'a list';
  if (isTable(v)) return 'a table';
  if (v instanceof Date) return 'a date';
  return typeof v;
}

const EXPECTED: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'a boolean (true or false)',
  array: 'a list',
  object: 'a table',
  record: 'a table',
};

function problem(issue: z.core.$ZodIssue, value: unknown): string {
  if (issue.code === 'invalid_type') {
    if (value === undefined) return 'is required';
    const expected = EXPECTED[issue.expected] ?? issue.expected;
    return `must be ${expected}, got ${describe(value)}`;
  }
  const msg = issue.message.split('\n')[0];
  if (/^must /.test(msg) && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) {
    return `${msg}, got ${describe(value)}`;
  }
  return msg;
}

/** One line for the first schema issue, naming the key and the source of its value. */
function formatIssue(issue: z.core.$ZodIssue, tree: Tree, sources: Sources): string {
  if (issue.code === 'unrecognized_keys') {
    const full = [...issue.path, issue.keys[0]];
    return `${sourceOf(sources, full)}: unknown key ${dotted(full)}`;
  }
  const value = valueAt(tree, issue.path);
  return `${dotted(issue.path)} ${problem(issue, value)} (from ${sourceOf(sources, issue.path)})`;
}

/** Load the configuration: defaults < svc.toml < environment. Throws ConfigError. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  const sources: Sources = new Map();
  const tree = readFile(cwd);
  record(sources, [], tree, CONFIG_FILE);
  sources.delete('');
  readFileValues(tree, cwd, sources);
  for (const s of readEnv(env)) place(tree, sources, s.path, s.value, s.name);
  // Parsed once per process: zod's compiled fast path (new Function per object) costs more than it saves.
  const result = configSchema.safeParse(tree, { jitless: true });
  if (!result.success) throw new ConfigError(formatIssue(result.error.issues[0], tree, sources));
  return result.data;
}
