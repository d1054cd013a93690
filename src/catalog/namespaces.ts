// Namespaces of a warehouse (Iceberg REST: list with parent and pages, create, load, exists,
// drop while empty, update properties). Nested namespaces need their parent; creating and
// dropping are governance events, written in the same transaction.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { recordGovernance } from '../audit/governance.js';
import { isUniqueViolation } from '../errors.js';
import { alreadyExists, badRequest, namespaceNotEmpty, noSuchNamespace, unprocessable } from './errors.js';
import { dotted } from './names.js';
import type { Warehouse } from './warehouse.js';
import type { CatalogCaller } from './access.js';

export const MAX_PROPERTIES = 1000;
export const MAX_PROPERTY_VALUE = 64 * 1024;

export function checkProperties(p: unknown, what = 'properties'): Record<string, string> {
  if (p === undefined || p === null) return {};
  if (typeof p !== 'object' || Array.isArray(p)) throw badRequest(`${what} must be an object of strings`);
  const entries = Object.entries(p as Record<string, unknown>);
  if (entries.length > MAX_PROPERTIES) throw badRequest(`${what}: more than ${MAX_PROPERTIES} entries`);
  for (const [k, v] of entries) {
    if (k.length === 0 || k.length > 1024) throw badRequest(`${what}: keys are 1 to 1024 characters`);
    if (typeof v !== 'string') throw badRequest(`${what}.${k} must be a string`);
    if (v.length > MAX_PROPERTY_VALUE) throw badRequest(`${what}.${k} is longer than ${MAX_PROPERTY_VALUE} characters`);
  }
  return p as Record<string, string>;
}

export interface NamespaceRow { id: string; levels: string[]; properties: Record<string, string> }

export async function findNamespace(db: Db, wh: Warehouse, levels: string[]): Promise<NamespaceRow | undefined> {
  return db.selectFrom('catalog_namespaces').select(['id', 'levels', 'properties'])
    .where('workspace_id', '=', wh.id).where('levels', '=', sql<string[]>`${levels}::text[]`).executeTakeFirst();
}

export async function getNamespace(db: Db, wh: Warehouse, levels: string[]): Promise<NamespaceRow> {
  const ns = await findNamespace(db, wh, levels);
  if (!ns) throw noSuchNamespace(levels);
  return ns;
}

// Page tokens are the last namespace (or name) of the previous page, base64url of its JSON.
export function encodeToken(v: unknown): string { return Buffer.from(JSON.stringify(v)).toString('base64url'); }
export function decodeToken<T>(token: string | undefined, check: (v: unknown) => v is T): T | undefined {
  if (token === undefined || token === '') return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (check(v)) return v;
  } catch { /* reported below */ }
  throw badRequest('invalid pageToken');
}
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.length <= 16 && v.every((x) => typeof x === 'string');

export const MAX_PAGE = 1000;
export function pageSize(raw: number | undefined): number {
  if (raw === undefined) return MAX_PAGE;
  if (!Number.isInteger(raw) || raw < 1) throw badRequest('pageSize must be a positive integer');
  return Math.min(raw, MAX_PAGE);
}

export async function listNamespaces(db: Db, wh: Warehouse, parent: string[] | undefined, token: string | undefined, size: number | undefined) {
  const limit = pageSize(size);
  const after = decodeToken(token, isStrings);
  if (parent && parent.length > 0) await getNamespace(db, wh, parent);
  const depth = (parent?.length ?? 0) + 1;
  let q = db.selectFrom('catalog_namespaces').select('levels').where('workspace_id', '=', wh.id)
    .where(sql<boolean>`cardinality(levels) = ${depth}`);
  if (parent && parent.length > 0) q = q.where(sql<boolean>`levels[1:${parent.length}] = ${parent}::text[]`);
  if (after) q = q.where(sql<boolean>`levels > ${after}::text[]`);
  const rows = await q.orderBy('levels').limit(limit + 1).execute();
  const page = rows.slice(0, limit).map((r) => r.levels);
  return { namespaces: page, ...(rows.length > limit ? { 'next-page-token': encodeToken(page[page.length - 1]) } : {}) };
}

export async function createNamespace(db: Db, wh: Warehouse, caller: CatalogCaller, levels: string[], properties: Record<string, string>) {
  return db.transaction().execute(async (tx) => {
    if (levels.length > 1 && !(await findNamespace(tx, wh, levels.slice(0, -1)))) throw noSuchNamespace(levels.slice(0, -1));
    try {
      await tx.insertInto('catalog_namespaces').values({ workspace_id: wh.id, levels, properties: JSON.stringify(properties) }).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw alreadyExists(`Namespace already exists: ${dotted(levels)}`);
      throw err;
    }
    await recordGovernance(tx, { action: 'catalog.namespace.create', actorId: caller.actorId, actor: caller.actor, target: `namespace:${dotted(levels)}`, workspace: wh.slug });
    return { namespace: levels, properties };
  });
}

export async function dropNamespace(db: Db, wh: Warehouse, caller: CatalogCaller, levels: string[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const ns = await tx.selectFrom('catalog_namespaces').select('id')
      .where('workspace_id', '=', wh.id).where('levels', '=', sql<string[]>`${levels}::text[]`).forUpdate().executeTakeFirst();
    if (!ns) throw noSuchNamespace(levels);
    const child = await tx.selectFrom('catalog_namespaces').select('id').where('workspace_id', '=', wh.id)
      .where(sql<boolean>`cardinality(levels) > ${levels.length} AND levels[1:${levels.length}] = ${levels}::text[]`).limit(1).executeTakeFirst();
    const member = await tx.selectFrom('catalog_tables').select('id').where('namespace_id', '=', ns.id).limit(1).executeTakeFirst();
    if (child || member) throw namespaceNotEmpty(levels);
    await tx.deleteFrom('catalog_namespaces').where('id', '=', ns.id).execute();
    await recordGovernance(tx, { action: 'catalog.namespace.drop', actorId: caller.actorId, actor: caller.actor, target: `namespace:${dotted(levels)}`, workspace: wh.slug });
  });
}

export async function updateNamespaceProperties(db: Db, wh: Warehouse, levels: string[], removals: string[], updates: Record<string, string>, now: Date) {
  const both = removals.filter((k) => Object.hasOwn(updates, k));
  if (both.length) throw unprocessable(`Properties to remove and to update overlap: ${both.join(', ')}`);
  return db.transaction().execute(async (tx) => {
    const ns = await tx.selectFrom('catalog_namespaces').select(['id', 'properties'])
      .where('workspace_id', '=', wh.id).where('levels', '=', sql<string[]>`${levels}::text[]`).forUpdate().executeTakeFirst();
    if (!ns) throw noSuchNamespace(levels);
    const props = { ...ns.properties };
    const removed: string[] = [];
    const missing: string[] = [];
    for (const k of removals) {
      if (Object.hasOwn(props, k)) { delete props[k]; removed.push(k); } else missing.push(k);
    }
    Object.assign(props, updates);
    if (Object.keys(props).length > MAX_PROPERTIES) throw badRequest(`a namespace holds at most ${MAX_PROPERTIES} properties`);
    await tx.updateTable('catalog_namespaces').set({ properties: JSON.stringify(props), updated_at: now }).where('id', '=', ns.id).execute();
    return { updated: Object.keys(updates), removed, ...(missing.length ? { missing } : {}) };
  });
}
