// The lakehouse on the embedded engine (docs/engines.md "The lakehouse"): what the engine needs to
// read and write the workspace's catalog tables as `iceberg.<namespace>.<table>`. One per process:
// the catalog's records (lakehouse/catalog.ts), the `iceberg` stubs DuckDB shows (stubs.ts), the
// file cache each workspace's database reads (file-cache.ts) and the decoded manifests planning
// reads (bounded in bytes, shared: a manifest location names the same bytes for ever).
import type { Logger } from 'pino';
import type { Db } from '../../db/index.js';
import type { ObjectStore } from '../../storage/object-store.js';
import { ManifestCache, manifestIO, type ManifestIO } from '../../iceberg/cache.js';
import { QueryFailure } from '../types.js';
import { LakehouseCatalog } from './catalog.js';
import { FileCache } from './file-cache.js';
import { Stubs } from './stubs.js';

/** Decoded manifests kept per process. */
export const MANIFEST_CACHE_BYTES = 64 * 1024 * 1024;
/** A manifest or manifest list read whole is at most this large. */
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

export interface LakehouseOptions {
  db: Db;
  store: ObjectStore;
  /** catalog.warehouse */
  warehouse: string;
  /** Folder of the file cache (one subfolder per workspace). */
  cacheDir: string;
  /** engines.embedded_cache_bytes */
  cacheBytes: number;
  log: Logger;
}

export class Lakehouse {
  readonly catalog: LakehouseCatalog;
  readonly stubs: Stubs;
  readonly files: FileCache;
  private readonly manifestCache = new ManifestCache(MANIFEST_CACHE_BYTES);

  constructor(private readonly o: LakehouseOptions) {
    this.catalog = new LakehouseCatalog(o.db, o.warehouse, o.store.bucket);
    this.stubs = new Stubs(this.catalog);
    this.files = new FileCache(o.cacheDir, o.cacheBytes, (location, workspaceId) => this.open(workspaceId, location), o.log);
  }

  /** What planning reads for a workspace: only objects inside its warehouse root. */
  manifests(workspaceId: string): ManifestIO {
    return manifestIO(async (location) => {
      const key = await this.catalog.keyOf(workspaceId, location);
      const head = await this.o.store.head(key);
      if (!head) throw new QueryFailure('failed', `a metadata file of the table is missing from the object store: ${location}`);
      if (head.size > MAX_MANIFEST_BYTES) throw new QueryFailure('refused', `a manifest of ${head.size} bytes is larger than ${MAX_MANIFEST_BYTES}`);
      const bytes = await this.o.store.get(key);
      if (!bytes) throw new QueryFailure('failed', `a metadata file of the table is missing from the object store: ${location}`);
      return bytes;
    }, this.manifestCache);
  }

  private async open(workspaceId: string, location: string) {
    const key = await this.catalog.keyOf(workspaceId, location);
    const obj = await this.o.store.getStream(key);
    return obj ? { body: obj.body, size: obj.size } : null;
  }

  async close(): Promise<void> { this.manifestCache.clear(); }
}
