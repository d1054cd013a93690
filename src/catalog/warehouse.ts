// One warehouse per workspace: the prefix of every catalog path is the workspace slug, and its
// storage root is `<catalog.warehouse>/<slug>`. Slugs are looked up through a small cache (a
// table load must cost about as much as /healthz); a deleted workspace is gone within seconds.
import type { Services } from '../services.js';
import { TtlCache } from '../util/ttl-cache.js';
import { noSuchWarehouse } from './errors.js';
import { SLUG_RE } from '../workspaces/workspaces.js';

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
  return { id: hit.id, slug, root: warehouseRoot(s, slug) };
}

/** The bucket and key of an `s3://bucket/key` location inside the configured bucket, or null. */
export function storageKey(s: Services, location: string): string | null {
  const m = /^s3a?:\/\/([^/]+)\/(.+)$/.exec(location);
  if (!m || m[1] !== s.config.storage.bucket) return null;
  return m[2];
}
