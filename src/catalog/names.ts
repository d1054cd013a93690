// Names in catalog paths: the warehouse prefix (a workspace slug), namespaces (levels joined by
// the unit separator 0x1F, `%1F` in a URL, as the Iceberg REST specification lays down) and
// table or view names. Every name is bounded; nothing reaches SQL or a storage key unchecked.
import { badRequest } from './errors.js';

export const NAMESPACE_SEPARATOR = '\u001f';
export const MAX_LEVELS = 16;
export const MAX_NAME = 255;
// Control characters would confuse logs, keys and the separator itself.
const BAD = /[\u0000-\u001f\u007f]/;

export function checkLevel(level: unknown, what = 'namespace level'): string {
  if (typeof level !== 'string' || level.length === 0) throw badRequest(`${what} must be a non-empty string`);
  if (level.length > MAX_NAME) throw badRequest(`${what} is longer than ${MAX_NAME} characters`);
  if (BAD.test(level)) throw badRequest(`${what} contains a control character`);
  return level;
}

export function checkNamespace(levels: unknown): string[] {
  if (!Array.isArray(levels) || levels.length === 0) throw badRequest('namespace must be a non-empty array of strings');
  if (levels.length > MAX_LEVELS) throw badRequest(`namespace is deeper than ${MAX_LEVELS} levels`);
  return levels.map((l) => checkLevel(l));
}

/** A namespace from its path segment (already URL-decoded by the router). */
export function parseNamespace(segment: string): string[] {
  return checkNamespace(segment.split(NAMESPACE_SEPARATOR));
}

export const checkName = (name: unknown, what = 'name') => checkLevel(name, what);

export const dotted = (ns: string[], name?: string) => [...ns, ...(name === undefined ? [] : [name])].join('.');
