// Environment layer: `SVC_<SECTION>__<KEY>` (one more `__` pair per sub-table), typed by the
// schema node the name maps to.
import { parse as parseToml } from 'smol-toml';
import type { z } from 'zod';
import { ConfigError, configSchema } from './schema.js';
import { isInt, isStrict, recordValue, shapeOf, unwrap } from './introspect.js';

export const ENV_PREFIX = 'SVC_';

/** `['workflow','storage','max_file_bytes']` -> `SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES`. */
export function envName(path: string[]): string {
  return ENV_PREFIX + path.map((s) => s.toUpperCase()).join('__');
}

/** One environment variable that maps to a configuration key. */
export interface EnvSetting {
  name: string;
  path: string[];
  value: unknown;
}

type Resolved =
  | { kind: 'key'; schema: z.ZodType }
  | { kind: 'unknown'; strict: boolean };

/** Walk the schema along `path`. An unknown segment reports whether the table it was looked
 * up in rejects unknown keys. */
export function resolvePath(path: string[], root: z.ZodType = configSchema): Resolved {
  let node = root;
  let strict = false;
  for (const seg of path) {
    const info = unwrap(node);
    if (info.kind === 'object') {
      strict = isStrict(info.base);
      const shape = shapeOf(info.base);
      if (!Object.prototype.hasOwnProperty.call(shape, seg)) return { kind: 'unknown', strict };
      node = shape[seg];
    } else if (info.kind === 'record') {
      strict = false;
      node = recordValue(info.base);
    } else {
      return { kind: 'unknown', strict };
    }
  }
  return { kind: 'key', schema: node };
}

const NUMBER = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

/** Type a raw variable value by the schema of its key. */
export function typeEnvValue(name: string, raw: string, schema: z.ZodType): unknown {
  const info = unwrap(schema);
  switch (info.kind) {
    case 'string':
    case 'enum':
      return raw;
    case 'number': {
      const n = NUMBER.test(raw) ? Number(raw) : NaN;
      if (!Number.isFinite(n)) throw new ConfigError(`${name}: expected a number, got ${JSON.stringify(raw)}`);
      if (isInt(info.base) && !Number.isInteger(n)) {
        throw new ConfigError(`${name}: expected an integer, got ${JSON.stringify(raw)}`);
      }
      return n;
    }
    case 'boolean': {
      const v = raw.toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      throw new ConfigError(
        `${name}: expected a boolean (true/false/1/0/yes/no), got ${JSON.stringify(raw)}`,
      );
    }
    default: {
      // lists and tables: a TOML value, e.g. ["openid","email"] or {prefix="x/"}
      try {
        return parseToml(`v = ${raw}`).v;
      } catch (err) {
        const first = String((err as Error).message ?? err).split('\n')[0].replace(/^Invalid TOML document: /, '');
        const what = info.kind === 'array' ? 'list, e.g. ["a","b"]' : 'table, e.g. {key="value"}';
        throw new ConfigError(`${name}: expected a TOML ${what}: ${first}`);
      }
    }
  }
}

/** The variables of `env` that map to configuration keys, typed, shallowest first (so a
 * variable for a nested key overrides one setting the whole table). Throws ConfigError for
 * an unparsable value or an unknown key inside a strict table. */
export function readEnv(env: Record<string, string | undefined>): EnvSetting[] {
  const found: { name: string; path: string[]; raw: string }[] = [];
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined || !name.startsWith(ENV_PREFIX)) continue;
    const segs = name.slice(ENV_PREFIX.length).split('__');
    // SVC_ADMIN_EMAIL and friends have no `__`: not configuration keys
    if (segs.length < 2 || segs.some((s) => s === '')) continue;
    found.push({ name, path: segs.map((s) => s.toLowerCase()), raw });
  }
  found.sort((a, b) => a.path.length - b.path.length || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: EnvSetting[] = [];
  for (const { name, path, raw } of found) {
    const r = resolvePath(path);
    if (r.kind === 'unknown') {
      if (r.strict) throw new ConfigError(`${name}: unknown key ${path.join('.')}`);
      continue;
    }
    out.push({ name, path, value: typeEnvValue(name, raw, r.schema) });
  }
  return out;
}
