// The lakehouse on the embedded engine (docs/engines.md "The lakehouse"): what the engine needs to
// read and write the workspace's catalog tables as `iceberg.<namespace>.<table>`. One per process:
// the catalog's records (lakehouse/catalog.ts), the `iceberg` stubs DuckDB shows (stubs.ts), the
// file cache each workspace's database reads (file-cache.ts) and the decoded manifests planning
// reads (bounded in bytes, shared: a manifest location names the same bytes for ever).
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../config/index.js';
import type { Db } from '../../db/index.js';
import type { Storage } from '../../storage/tenant-store.js';
import { StorageRefused, authorize } from '../../storage/ownership.js';
import { ManifestCache, manifestIO, type ManifestIO } from '../../iceberg/cache.js';
import { QueryFailure } from '../types.js';
import { LakehouseCatalog } from './catalog.js';
import { FileCache } from './file-cache.js';
import { Stubs } from './stubs.js';
import { EnginePolicies } from '../../policy/workspace-policies.js';
import { aggregateFunctions } from './policy-sql.js';
import type { ScalarQuery } from '../sql/parser.js';
import type { CatalogWrites } from './catalog-writes.js';

/** Decoded manifests kept per process when none is handed in (services hand in the catalog's). */
export const MANIFEST_CACHE_BYTES = 64 * 1024 * 1024;
/** A manifest or manifest list read whole is at most this large. */
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

export interface LakehouseOptions {
  db: Db;
  /** The bucket through the storage rule: a workspace reads only what it owns. */
  storage: Storage;
  /** Folder of the file cache (one subfolder per workspace). */
  cacheDir: string;
  /** engines.embedded_cache_bytes */
  cacheBytes: number;
  /** The cache folder goes with the process (no embedded_data_dir). */
  temporary: boolean;
  /** Decoded manifests, shared with the catalog's scan planning (catalog.manifest_cache_bytes). */
  manifests?: ManifestCache;
  /** policy_service.enabled: the workspace's policies apply to every statement. */
  policies: boolean;
  /** The catalog's write operations (catalog/engine-writes.ts); absent, catalog tables are read only. */
  writes?: CatalogWrites;
  log: Logger;
}

/** A storage refusal as the query's: the statement reads no object its workspace does not own. */
async function owned<T>(f: () => Promise<T>): Promise<T> {
  try { return await f(); } catch (err) {
    if (err instanceof StorageRefused) throw new QueryFailure('refused', err.message);
    throw err;
  }
}

/** A stream's bytes, refused (`tooLarge`) past `max` whether its announced `size` says so or its body does. */
export async function readBounded(body: NodeJS.ReadableStream, size: number, max: number, tooLarge: (n: number) => Error): Promise<Uint8Array> {
  const destroy = () => (body as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  if (size > max) { destroy(); throw tooLarge(size); }
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    n += b.length;
    if (n > max) { destroy(); throw tooLarge(n); }
    chunks.push(b);
  }
  return Buffer.concat(chunks, n);
}

/** Where the file cache lives and how large it may grow, from the configuration. */
export function lakehouseCache(config: Config): { cacheDir: string; cacheBytes: number; temporary: boolean } {
  const dir = config.engines.embedded_data_dir;
  return dir
    ? { cacheDir: path.join(dir, 'cache'), cacheBytes: config.engines.embedded_cache_bytes, temporary: false }
    : { cacheDir: path.join(tmpdir(), `svc-cache-${process.pid}-${randomUUID().slice(0, 8)}`), cacheBytes: config.engines.embedded_cache_bytes, temporary: true };
}

export class Lakehouse {
  readonly catalog: LakehouseCatalog;
  readonly stubs: Stubs;
  readonly files: FileCache;
  private readonly manifestCache: ManifestCache;
  /** The workspace's policies for the embedded engine, or null when the policy service is off. */
  readonly policies: EnginePolicies | null;
  private aggregateNames: Promise<Set<string>> | undefined;
  readonly writes: CatalogWrites | undefined;

  constructor(private readonly o: LakehouseOptions) {
    this.manifestCache = o.manifests ?? new ManifestCache(MANIFEST_CACHE_BYTES);
    this.writes = o.writes;
    this.catalog = new LakehouseCatalog(o.db, o.storage.layout.bucket);
    this.stubs = new Stubs(this.catalog);
    this.files = new FileCache(o.cacheDir, o.cacheBytes, (location, workspaceId) => this.open(workspaceId, location), o.log);
    this.policies = o.policies ? new EnginePolicies(o.db, Date.now) : null;
  }

  /** DuckDB's aggregate functions (a policy expression may not aggregate), read once. */
  aggregates(scalar: ScalarQuery): Promise<Set<string>> {
    this.aggregateNames ??= aggregateFunctions(scalar).catch((err: Error) => { this.aggregateNames = undefined; throw err; });
    return this.aggregateNames;
  }

  /**
   * What planning reads for a workspace: only objects the workspace owns. The cache is shared by
   * every workspace (and the catalog), keyed by location: the storage rule decides each location
   * before the cache is asked, so another workspace's cached manifest is never served. One GET
   * per manifest (its length bounded from the answer's Content-Length, then while reading): a
   * HEAD first doubled the object-store round trips of a cold scan's planning.
   */
  manifests(workspaceId: string): ManifestIO {
    const io = this.manifestIO(workspaceId);
    const guard = async (location: string) => {
      const tenant = await this.catalog.tenant(workspaceId);
      await owned(async () => authorize(this.o.storage.layout, { tenant }, { name: 'GetObject', key: this.catalog.keyOf(location) }));
    };
    return {
      manifestList: async (location) => { await guard(location); return io.manifestList(location); },
      manifest: async (location, spec) => { await guard(location); return io.manifest(location, spec); },
    };
  }

  private manifestIO(workspaceId: string): ManifestIO {
    return manifestIO(async (location) => {
      const store = await this.store(workspaceId);
      const obj = await owned(() => store.getStream(this.catalog.keyOf(location)));
      if (!obj) throw new QueryFailure('failed', `a metadata file of the table is missing from the object store: ${location}`);
      return readBounded(obj.body, obj.size, MAX_MANIFEST_BYTES, (n) => new QueryFailure('refused', `a manifest of ${n} bytes is larger than ${MAX_MANIFEST_BYTES}`));
    }, this.manifestCache);
  }

  private async store(workspaceId: string) {
    return this.o.storage.of({ tenant: await this.catalog.tenant(workspaceId) });
  }

  private async open(workspaceId: string, location: string) {
    const store = await this.store(workspaceId);
    const obj = await owned(() => store.getStream(this.catalog.keyOf(location)));
    return obj ? { body: obj.body, size: obj.size } : null;
  }

  async close(): Promise<void> {
    this.manifestCache.clear();
    if (this.o.temporary) await this.files.clear();
  }
}
