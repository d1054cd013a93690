// The builders every section of the configuration schema is written with: each key carries its
// default, its value rule and its description (rendered into docs/configuration.md).
//
// Keys are snake_case exactly as in svc.toml. Plain `z.object` sections drop unknown keys
// silently (SPEC 1.5); `z.strictObject` tables reject them.
import { z } from 'zod';

/** A configuration problem. The message is one line naming the source and the problem. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message.replace(/\s*[\r\n]+\s*/g, ' ').trim());
    this.name = 'ConfigError';
  }
}

/** Extra metadata every key carries: `description` is rendered in the docs; `required`
 * names the condition under which an empty value stops the server. */
export type KeyMeta = {
  description: string;
  required?: string;
};

// ---------- small builders ----------

export const meta = (description: string, required?: string): KeyMeta =>
  required === undefined ? { description } : { description, required };

/** Non-negative integer with a default. */
export function count(def: number, description: string, required?: string) {
  return z
    .number()
    .int()
    .min(0, { error: 'must be >= 0' })
    .default(def)
    .meta(meta(description, required));
}

/** Integer with a lower bound. */
export function atLeast(min: number, def: number, description: string) {
  return z
    .number()
    .int()
    .min(min, { error: `must be >= ${min}` })
    .default(def)
    .meta(meta(description));
}

export function str(def: string, description: string, required?: string) {
  return z.string().default(def).meta(meta(description, required));
}

export function optStr(description: string, required?: string) {
  return z.string().optional().meta(meta(description, required));
}

export function bool(def: boolean, description: string) {
  return z.boolean().default(def).meta(meta(description));
}

export function strList(def: readonly string[], description: string, required?: string) {
  return z
    .array(z.string())
    .default(() => [...def])
    .meta(meta(description, required));
}

export function section<T extends z.ZodRawShape>(description: string, shape: T) {
  // every key of a section has a default, so an absent section parses from {}
  return z.object(shape).prefault({} as never).meta(meta(description));
}

/** String with a value rule checked on every value, the default included. */
export function strRule(def: string, description: string, ok: (v: string) => boolean, error: string, required?: string) {
  return z.string().refine(ok, { error }).default(def).meta(meta(description, required));
}

/** Object-store style key prefix: ends with `/`, does not start with `/`. */
export function keyPrefix(def: string, description: string, maxBytes?: number) {
  let s = z
    .string()
    .refine((v) => v.endsWith('/'), { error: 'must end with "/"' })
    .refine((v) => !v.startsWith('/'), { error: 'must not start with "/"' });
  if (maxBytes !== undefined) {
    s = s.refine((v) => Buffer.byteLength(v, 'utf8') <= maxBytes, {
      error: `must be at most ${maxBytes} bytes`,
    });
  }
  return s.default(def).meta(meta(description));
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T, def: T[number], description: string) {
  return z
    .enum(values, { error: `must be one of ${values.join(', ')}` })
    .default(def as never)
    .meta(meta(description));
}

/** Kubernetes-style resource quantities of one container (request or limit). */
export function resources(
  def: { cpu: string; memory: string; ephemeral_storage: string },
  what: string,
) {
  return z
    .strictObject({
      cpu: str(def.cpu, `CPU ${what}`),
      memory: str(def.memory, `memory ${what}`),
      ephemeral_storage: str(def.ephemeral_storage, `ephemeral storage ${what}`),
    })
    .prefault({})
    .meta(meta(`${what} of a task container`));
}
