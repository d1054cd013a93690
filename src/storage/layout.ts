// The bucket's layout (docs/architecture.md, "The storage rule"): which family of svc's data a key
// belongs to and which workspace owns it, from the configuration and svc's workspace records only,
// never from a location a client wrote. Pure: no I/O.
//
//   catalog   <catalog.warehouse key><workspace slug>/...     ('' at the bucket root: <slug>/...)
//   results   <engine.results_prefix>/<workspace id>/...
//   apps      <apps.storage.prefix><workspace id>/...
//   workflow  <workflow.storage.prefix><workspace id>/...
//
// Family first: a key under the results, apps or workflow prefix belongs to that family whatever
// the catalog's root is (the default warehouse is the bucket root, which contains them all). So a
// workspace whose slug is such a prefix's first segment ("apps", "query-results", "workflow") owns
// no key of that family, and its catalog warehouse is refused (warehouseProblem). Prefixes that
// overlap each other are refused at startup (layoutProblem).
import type { Config } from '../config/schema.js';

export type Family = 'catalog' | 'results' | 'apps' | 'workflow';
type KeyedById = Exclude<Family, 'catalog'>;
const BY_ID: KeyedById[] = ['results', 'apps', 'workflow'];

/** A workspace as svc records it: the id keys results, apps and workflow files; the slug keys the warehouse. */
export interface Tenant { id: string; slug?: string }

export interface StorageLayout {
  bucket: string;
  /** Key prefix of the catalog warehouse ('' at the bucket root, else ending in '/'); null when it is not in the bucket. */
  warehouse: string | null;
  /** Key prefix of each family keyed by workspace id, ending in '/'. */
  prefixes: Record<KeyedById, string>;
  /** The keys these come from, for messages. */
  names: Record<Family, string>;
}

export type LayoutConfig = Pick<Config, 'storage' | 'catalog' | 'engine' | 'apps' | 'workflow'>;

/** The key prefix of `s3://<bucket>/<prefix>` inside `bucket` ('' or ending in '/'), or null. */
export function warehouseKey(bucket: string, warehouse: string): string | null {
  const m = /^s3a?:\/\/([^/]+)(?:\/(.*))?$/.exec(warehouse.trim());
  if (!m || m[1] !== bucket) return null;
  const path = (m[2] ?? '').replace(/\/+$/, '');
  return path === '' ? '' : `${path}/`;
}

/** The layout of a configuration (computed once per Services: see createStorage). */
export function storageLayout(cfg: LayoutConfig): StorageLayout {
  return {
    bucket: cfg.storage.bucket,
    warehouse: warehouseKey(cfg.storage.bucket, cfg.catalog.warehouse),
    prefixes: {
      results: `${cfg.engine.results_prefix.replace(/\/+$/, '')}/`,
      apps: cfg.apps.storage.prefix,
      workflow: cfg.workflow.storage.prefix,
    },
    names: { catalog: 'catalog.warehouse', results: 'engine.results_prefix', apps: 'apps.storage.prefix', workflow: 'workflow.storage.prefix' },
  };
}

const overlap = (a: string, b: string) => a.startsWith(b) || b.startsWith(a);

/** Why the configured prefixes could make one family's keys another's (a startup check), or null. */
export function layoutProblem(l: StorageLayout): string | null {
  for (let i = 0; i < BY_ID.length; i++) {
    for (let j = i + 1; j < BY_ID.length; j++) {
      const [a, b] = [BY_ID[i]!, BY_ID[j]!];
      if (overlap(l.prefixes[a], l.prefixes[b])) return `${l.names[a]} "${l.prefixes[a]}" and ${l.names[b]} "${l.prefixes[b]}" overlap`;
    }
  }
  if (l.warehouse) {
    for (const f of BY_ID) {
      if (l.warehouse.startsWith(l.prefixes[f])) return `${l.names.catalog} (key prefix "${l.warehouse}") lies inside ${l.names[f]} "${l.prefixes[f]}"`;
    }
  }
  return null;
}

/** The key prefix a tenant owns in a family (ending in '/'), or null (no slug, no warehouse in the bucket). */
export function tenantRoot(l: StorageLayout, family: Family, t: Tenant): string | null {
  if (family !== 'catalog') return `${l.prefixes[family]}${t.id}/`;
  if (l.warehouse === null || !t.slug) return null;
  return `${l.warehouse}${t.slug}/`;
}

/**
 * Why the catalog cannot keep workspace `slug`'s warehouse (its root meets another family's
 * prefix), or null. A warehouse outside the bucket is no problem here: it owns no key at all.
 */
export function warehouseProblem(l: StorageLayout, slug: string): string | null {
  if (l.warehouse === null) return null;
  const root = `${l.warehouse}${slug}/`;
  for (const f of BY_ID) {
    if (overlap(root, l.prefixes[f])) return `the warehouse of workspace ${slug} (key prefix "${root}") meets ${l.names[f]} "${l.prefixes[f]}"`;
  }
  return null;
}

/**
 * The family and owner segment (workspace id, or slug for the catalog) of a key or key prefix, or
 * null when no workspace owns it. Family first, the longest prefix winning; the owner segment must
 * be non-empty and followed by '/'.
 */
export function classify(l: StorageLayout, key: string): { family: Family; owner: string } | null {
  let family: Family | null = null;
  let start = -1;
  for (const f of BY_ID) {
    if (key.startsWith(l.prefixes[f]) && l.prefixes[f].length > start) { family = f; start = l.prefixes[f].length; }
  }
  if (family === null && l.warehouse !== null && key.startsWith(l.warehouse)) { family = 'catalog'; start = l.warehouse.length; }
  if (family === null) return null;
  const end = key.indexOf('/', start);
  if (end <= start) return null;
  return { family, owner: key.slice(start, end) };
}

/**
 * Whether the tenant owns the key (or every key under the prefix) by the layout and svc's records.
 * A warehouse that meets another family owns nothing, so tenants' roots never overlap.
 */
export function owns(l: StorageLayout, t: Tenant, key: string): boolean {
  const c = classify(l, key);
  if (!c) return false;
  if (c.family !== 'catalog') return c.owner === t.id;
  return t.slug !== undefined && c.owner === t.slug && warehouseProblem(l, t.slug) === null;
}
