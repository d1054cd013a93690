// One warehouse per workspace: the prefix of every catalog path is the workspace slug, and its
// storage root is `<catalog.warehouse>/<slug>`. Slugs are looked up through a small cache (a
// table load must cost about as much as /healthz); a deleted workspace is gone within seconds.
import type { Services } from '../services.js';
import { TtlCache } from '../util/ttl-cache.js';
import { forbidden, noSuchWarehouse } from './errors.js';
import { SLUG_RE } from '../workspaces/workspaces.js';
import { warehouseProblem } from '../storage/layout.js';
import { StorageRefused } from '../storage/ownership.js';
import type { TenantStore } from '../storage/tenant-store.js';

export interface Warehouse { id: string; slug: string; root: string }

const caches = new WeakMap<Services, TtlCache<string, { id: string } | null>>();

export function warehouseRoot(s: Services, slug: string): string {
  return `${s.config.catalog.warehouse.replace(/\/+$/, '')}/${slug}`;
}

export async function findWarehouse(s: Services, slug: string): Promise<Warehouse> {
  let cache = caches.get(s);
  if (!cache) { cache = new TtlCache(10_000, 5_000, () => s.clock.now().getTime()); caches.set(s, cache); }
  let hit = cache.get(slug);
  if (hit === undefined) {
    const isSlug = SLUG_RE.test(slug);
    const row = isSlug ? await s.db.selectFrom('workspaces').select('id').where('slug', '=', slug).executeTakeFirst() : undefined;
    hit = row ? { id: row.id } : null;
    // Only slugs are kept (a warehouse name in a query string can be long): 10,000 entries of at
    // most 63 characters and a 36-character id stay under 3 MB, so a count bound suffices.
    if (isSlug) cache.set(slug, hit);
  }
  if (!hit) throw noSuchWarehouse(`Warehouse does not exist: ${slug}`);
  // Family first (src/storage/layout.ts): a root that meets the results, apps or workflow prefix
  // (a workspace named "apps" with the warehouse at the bucket root) is no warehouse.
  const problem = warehouseProblem(s.storage.layout, slug);
  if (problem) throw forbidden(`Forbidden: ${problem}; the catalog keeps no warehouse there (give catalog.warehouse a prefix of its own, e.g. s3://${s.config.storage.bucket}/lake)`);
  return { id: hit.id, slug, root: warehouseRoot(s, slug) };
}

/** The bucket as the workspace's catalog may use it (the storage rule, src/storage/ownership.ts). */
export function warehouseStore(s: Services, wh: Warehouse, within?: string): TenantStore {
  return s.storage.of({ tenant: wh, within });
}

/** The bucket and key of an `s3://bucket/key` location inside the configured bucket, or null. */
export function storageKey(s: Services, location: string): string | null {
  const m = /^s3a?:\/\/([^/]+)\/(.+)$/.exec(location);
  if (!m || m[1] !== s.config.storage.bucket) return null;
  return m[2];
}

/** The key prefix (no trailing '/') of a table location inside the bucket; 403 when it is not in it. */
export function locationKey(s: Services, location: string): string {
  const key = storageKey(s, location);
  if (key === null) throw new StorageRefused(`the table location ${location} is outside the bucket ${s.config.storage.bucket}`);
  return key.replace(/\/+$/, '');
}
