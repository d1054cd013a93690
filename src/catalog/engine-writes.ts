// The catalog side of the embedded engine's writes (src/queries/lakehouse/catalog-writes.ts, the
// port): each operation does what the matching REST route does for the statement's principal,
// with the same right (write to create and commit, manage to drop), the same policy check and the
// same governance records, so a table written from SQL is one written by any Iceberg client.
import { createReadStream } from 'node:fs';
import type { Services } from '../services.js';
import type { CatalogWrites, WriteActor } from '../queries/lakehouse/catalog-writes.js';
import { requirePolicies, requireRight, type CatalogCaller, type CatalogRight, type PolicyOp } from './access.js';
import { createTable, dropTable } from './tables.js';
import { commitFiles } from './table-writes.js';
import { IcebergError } from './errors.js';
import { findWarehouse, storageKey, warehouseStore } from './warehouse.js';

/** The statement's principal as a catalog caller: its role in its own workspace, its policy subject. */
function callerOf(a: WriteActor, slug: string): CatalogCaller {
  return {
    actorId: null, actor: a.user,
    roleIn: async (ws) => (ws === slug ? { role: a.role, why: `${a.user} runs the statement as ${a.role}` } : { role: null, why: `${a.user} has no role in workspace ${ws}` }),
    subject: async () => ({ users: [a.user], groups: a.groups, roles: [a.role] }),
  };
}

export function catalogWrites(services: () => Services): CatalogWrites {
  /** The statement's workspace as the catalog knows it. */
  const warehouseOf = async (a: WriteActor) => {
    const s = services();
    const row = await s.db.selectFrom('workspaces').select('slug').where('id', '=', a.workspaceId).executeTakeFirstOrThrow();
    return { s, wh: await findWarehouse(s, row.slug) };
  };
  /** The warehouse and caller, after the right and policy checks of the matching REST route. */
  const scope = async (a: WriteActor, right: CatalogRight, what: string, levels: string[], name: string, op: PolicyOp) => {
    const { s, wh } = await warehouseOf(a);
    const caller = callerOf(a, wh.slug);
    await requireRight(caller, wh.slug, right, what);
    await requirePolicies(s, caller, wh.slug, levels, name, op);
    return { s, wh, caller };
  };
  const missing = (err: unknown) => err instanceof IcebergError && err.status === 404;
  return {
    async createTable(a, levels, request, ifNotExists) {
      const name = String(request.name);
      const { s, wh, caller } = await scope(a, 'write', 'creating a table', levels, name, 'create');
      try {
        await createTable(s, wh, caller, levels, request);
        return true;
      } catch (err) {
        if (ifNotExists && err instanceof IcebergError && err.type === 'AlreadyExistsException') return false;
        throw err;
      }
    },
    async dropTable(a, levels, name, ifExists) {
      const { s, wh, caller } = await scope(a, 'manage', 'dropping a table', levels, name, 'drop');
      try {
        await dropTable(s, wh, caller, levels, name, 'table', true);
        return true;
      } catch (err) {
        if (ifExists && missing(err)) return false;
        throw err;
      }
    },
    async undoCreate(a, levels, name, metadataLocation) {
      const { s, wh, caller } = await scope(a, 'write', 'undoing the CREATE TABLE ... AS it ran', levels, name, 'create');
      await dropTable(s, wh, caller, levels, name, 'table', true, metadataLocation);
    },
    async mayCommit(a, levels, name) {
      await scope(a, 'write', 'writing to a table', levels, name, 'commit');
    },
    async upload(a, tableLocation, file, localPath) {
      const { s, wh } = await warehouseOf(a);
      const base = tableLocation.replace(/\/+$/, '');
      const location = `${base}/data/${file}`;
      const key = storageKey(s, location);
      const within = storageKey(s, base);
      if (key === null || within === null) throw new IcebergError(400, 'BadRequestException', `the table location ${base.slice(0, 300)} is outside the bucket`);
      // The storage rule decides: the key must lie in the table's location, which the workspace owns.
      await warehouseStore(s, wh, within).putStream(key, createReadStream(localPath), 'application/octet-stream');
      return location;
    },
    async commit(a, levels, name, change) {
      // commitFiles checks the right and the policies itself, as for any caller
      const { s, wh } = await warehouseOf(a);
      const done = await commitFiles(s, wh, callerOf(a, wh.slug), levels, name, change);
      return { snapshotId: done.snapshotId };
    },
  };
}
