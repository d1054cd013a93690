// Scan planning for a workspace's tables, over the object store: the reader every plan (the REST
// planning routes and the embedded engine) reads manifests with, and the per-replica cache of
// decoded manifests (bounded by catalog.manifest_cache_bytes, keyed by immutable location).
//
// Tenancy: a table's metadata is a document (register, import); its manifest list, manifests and
// files may name any location. The reader reads only inside the workspace's warehouse root, and a
// plan naming a data or delete file outside it fails: nothing of another workspace is read, cached
// or returned, whatever a metadata file says.
import type { Services } from '../services.js';
import { manifestIO, type ManifestCache, type ManifestIO, type ReadBytes } from '../iceberg/cache.js';
import { planScan, prepareScan, planFiles, type ScanOptions, type ScanPlan, type Prepared, type ManifestSlice } from '../iceberg/planner.js';
import { invalid } from '../iceberg/errors.js';
import { storageKey, warehouseStore, type Warehouse } from './warehouse.js';

/**
 * The replica's cache of decoded manifests (shared by every workspace: keys are full locations;
 * the embedded engine reads catalog tables through the same one, see services.ts).
 */
export function manifestCache(s: Services): ManifestCache {
  return s.manifests;
}

/** Whether `location` lies inside the workspace's warehouse (and the configured bucket). */
export function inWarehouse(s: Services, wh: Warehouse, location: string): boolean {
  return typeof location === 'string' && location.startsWith(`${wh.root}/`) && storageKey(s, location) !== null && !location.split('/').includes('..');
}

/**
 * Reads an object of the workspace's warehouse. A location outside it, or a missing object, is a
 * 400 naming the location (the table's metadata is what is wrong, not the server).
 */
export function warehouseReader(s: Services, wh: Warehouse): ReadBytes {
  return async (location) => {
    if (!inWarehouse(s, wh, location)) throw invalid(`the table names ${location.slice(0, 300)}, outside the warehouse ${wh.root}/; svc reads only the workspace's own files`);
    const bytes = await warehouseStore(s, wh).get(storageKey(s, location)!);
    if (!bytes) throw invalid(`the table names ${location.slice(0, 300)}, which does not exist in the object store`);
    return bytes;
  };
}

/**
 * Decoded manifests of the workspace's warehouse, through the replica's cache. The cache is keyed
 * by location and shared by every workspace, so the location is decided before the cache is asked:
 * a hit left by another workspace's plan must not let a table naming that location read it.
 */
export function warehouseIO(s: Services, wh: Warehouse): ManifestIO {
  const io = manifestIO(warehouseReader(s, wh), manifestCache(s));
  const guard = (location: string) => {
    if (!inWarehouse(s, wh, location)) throw invalid(`the table names ${location.slice(0, 300)}, outside the warehouse ${wh.root}/; svc reads only the workspace's own files`);
  };
  return {
    manifestList: async (location) => { guard(location); return io.manifestList(location); },
    manifest: async (location, spec) => { guard(location); return io.manifest(location, spec); },
  };
}

function checkFiles(s: Services, wh: Warehouse, plan: ScanPlan): ScanPlan {
  for (const t of plan.tasks) {
    if (!inWarehouse(s, wh, t.file.path)) throw invalid(`the table's manifests name the data file ${t.file.path.slice(0, 300)}, outside the warehouse ${wh.root}/`);
  }
  for (const d of plan.deleteFiles) {
    if (!inWarehouse(s, wh, d.file.path)) throw invalid(`the table's manifests name the delete file ${d.file.path.slice(0, 300)}, outside the warehouse ${wh.root}/`);
  }
  return plan;
}

/**
 * Plans a scan of a table of workspace `wh` (its metadata as the catalog holds it): what the
 * embedded engine calls. Every file of the plan lies inside the warehouse.
 */
export async function planTable(s: Services, wh: Warehouse, metadata: Record<string, unknown>, opts: ScanOptions = {}): Promise<ScanPlan> {
  return checkFiles(s, wh, await planScan(metadata, opts, warehouseIO(s, wh)));
}

/** The two steps of planTable, for the REST routes' plan tasks. */
export async function prepareTableScan(s: Services, wh: Warehouse, metadata: Record<string, unknown>, opts: ScanOptions): Promise<Prepared> {
  return prepareScan(metadata, opts, warehouseIO(s, wh));
}

export async function planTableFiles(s: Services, wh: Warehouse, p: Prepared, slices?: ManifestSlice[], signal?: AbortSignal): Promise<ScanPlan> {
  return checkFiles(s, wh, await planFiles(p, warehouseIO(s, wh), { slices, signal }));
}
