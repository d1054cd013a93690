// The object store as a workspace's code sees it: every call is an operation the storage rule
// (ownership.ts) allows for the scope, or a 403 before anything reaches the bucket. Catalog
// metadata, purges, query results, app content and workflow files all go through here, so a key
// built from a wrong id, a client's path or a client's location cannot reach another workspace.
// Only src/storage touches the raw store (test/architecture.test.ts checks it).
import type { Readable } from 'node:stream';
import type { Config } from '../config/schema.js';
import type { ObjectStore } from './object-store.js';
import { storageLayout, tenantRoot, type Family, type StorageLayout, type Tenant } from './layout.js';
import { authorize, type StorageScope } from './ownership.js';

export type TenantStore = Omit<ObjectStore, 'bucket' | 'checkBucket' | 'close'>;

export function tenantStore(raw: ObjectStore, layout: StorageLayout, scope: StorageScope): TenantStore {
  const check = (op: Parameters<typeof authorize>[2]) => { authorize(layout, scope, op); };
  return {
    async put(key, body, contentType) { check({ name: 'PutObject', key }); return raw.put(key, body, contentType); },
    async putStream(key, body: Readable, contentType) { check({ name: 'PutObject', key }); return raw.putStream(key, body, contentType); },
    async get(key) { check({ name: 'GetObject', key }); return raw.get(key); },
    async getStream(key) { check({ name: 'GetObject', key }); return raw.getStream(key); },
    async head(key) { check({ name: 'HeadObject', key }); return raw.head(key); },
    async delete(key) { check({ name: 'DeleteObject', key }); return raw.delete(key); },
    async list(prefix, max, startAfter) { check({ name: 'ListObjectsV2', prefix }); return raw.list(prefix, max, startAfter); },
    async deletePrefix(prefix) { check({ name: 'DeletePrefix', prefix }); return raw.deletePrefix(prefix); },
  };
}

/** The bucket of a Services object: its layout and a tenant store per scope. */
export interface Storage {
  readonly layout: StorageLayout;
  of(scope: StorageScope): TenantStore;
  /** The key prefix the tenant owns in a family (ending in '/'); throws when it owns none there. */
  root(family: Family, tenant: Tenant): string;
}

export function createStorage(raw: ObjectStore, config: Config): Storage {
  const layout = storageLayout(config);
  return {
    layout,
    of: (scope) => tenantStore(raw, layout, scope),
    root(family, tenant) {
      const r = tenantRoot(layout, family, tenant);
      if (r === null) throw new Error(`workspace ${tenant.slug ?? tenant.id} has no ${family} storage in the bucket ${layout.bucket}`);
      return r;
    },
  };
}
