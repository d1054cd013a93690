// Writing a snapshot of a catalog table (the engine's INSERT, CTAS and DELETE): the format core's
// writer makes the manifests and manifest list under the table's location, and the commit goes
// through the catalog's own commit path (commit.ts: requirements checked, compare-and-swap of the
// metadata location, a governance-visible commit like any client's). A commit that loses to a
// concurrent writer (409 CommitFailedException) is planned again on the new metadata: an append
// always re-applies; a delete or removal whose data files a concurrent commit removed is an
// IcebergConflictError (409), never a lost or doubled change.
import type { Services } from '../services.js';
import { prepareCommit, type SnapshotChange, type WriterIO } from '../iceberg/writer.js';
import { invalid } from '../iceberg/errors.js';
import { commit, COMMIT_ATTEMPTS } from './commit.js';
import { getTable } from './tables.js';
import { parseJson } from './json.js';
import { IcebergError, commitFailed } from './errors.js';
import { inWarehouse, warehouseIO } from './scan.js';
import { storageKey, warehouseStore, type Warehouse } from './warehouse.js';
import { requirePolicies, requireRight, type CatalogCaller } from './access.js';

export interface Committed {
  snapshotId: bigint;
  metadataLocation: string;
  /** commits tried (1 when no concurrent writer interfered) */
  attempts: number;
}

/** Manifests and manifest lists are written under the table location, inside the warehouse. */
function writerIO(s: Services, wh: Warehouse, tableLocation: string): WriterIO {
  return {
    ...warehouseIO(s, wh),
    write: async (location, bytes) => {
      if (!inWarehouse(s, wh, location) || !location.startsWith(`${tableLocation.replace(/\/+$/, '')}/`)) throw invalid(`cannot write ${location.slice(0, 300)}: outside the table location`);
      await warehouseStore(s, wh, storageKey(s, tableLocation.replace(/\/+$/, ''))!).put(storageKey(s, location)!, bytes, 'application/octet-stream');
    },
    now: () => s.clock.now().getTime(),
  };
}

/**
 * Adds files to (or removes them from) table `namespace.name` of `wh` as one Iceberg commit on
 * its main branch. The data and delete files must already be in the object store under the
 * table's location. The caller needs the write right in the workspace, and no policy may deny it
 * a commit on the table (as POST .../tables/{table}).
 */
export async function commitFiles(s: Services, wh: Warehouse, caller: CatalogCaller, namespace: string[], name: string, change: SnapshotChange): Promise<Committed> {
  await requireRight(caller, wh.slug, 'write', 'writing to a table');
  await requirePolicies(s, caller, wh.slug, namespace, name, 'commit');
  for (let attempt = 1; ; attempt++) {
    const row = await getTable(s.db, wh, namespace, name, 'table');
    const metadata = parseJson(row.metadata) as Record<string, unknown>;
    const prepared = await prepareCommit(metadata, change, writerIO(s, wh, String(metadata.location)));
    try {
      const [done] = await commit(s, wh, caller, [{ namespace, name, requirements: prepared.requirements, updates: prepared.updates }]);
      return { snapshotId: prepared.snapshotId, metadataLocation: done.location, attempts: attempt };
    } catch (err) {
      // The files of the lost attempt stay unreferenced, as after a failed commit of the Java writers.
      if (!(err instanceof IcebergError && err.type === 'CommitFailedException')) throw err;
      if (attempt >= COMMIT_ATTEMPTS) throw commitFailed(`Commit failed: ${[...namespace, name].join('.')} changed concurrently ${attempt} times; retry`);
    }
  }
}
