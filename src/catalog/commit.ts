// Commits: a compare-and-swap on each table's current metadata location. The server reads the
// current metadata, checks every requirement against it (a failed one is 409 CommitFailed),
// applies the updates, writes the new metadata file, then swaps the row only if its location is
// still the one it read. A lost swap re-reads and re-checks (the requirements decide whether the
// change still applies: a lost race under `assert-ref-snapshot-id` is a 409, never a lost update).
// A transaction over several tables swaps all rows in one database transaction, or none.
import type { Services } from '../services.js';
import { recordGovernance } from '../audit/governance.js';
import { badRequest, commitFailed, noSuchTable } from './errors.js';
import { checkName, checkNamespace, dotted } from './names.js';
import { getNamespace } from './namespaces.js';
import { applyUpdates, checkRequirement, emptyMetadata, type Json, type TableMetadata } from './metadata.js';
import { parseJson, stringifyJson } from './json.js';
import { findTable, insertTableRow, nextMetadataLocation, writeMetadata, checkLocation } from './tables.js';
import type { Warehouse } from './warehouse.js';
import type { CatalogCaller } from './access.js';

/** Attempts of one commit against concurrent writers before answering 409. */
export const COMMIT_ATTEMPTS = 8;
export const MAX_TABLE_CHANGES = 100;

export interface Change { namespace: string[]; name: string; requirements: unknown[]; updates: unknown[] }
interface Prepared { change: Change; namespaceId: string; tableId: string | null; base: string | null; location: string; text: string; metadata: TableMetadata }

export function parseChange(body: Json, path?: { namespace: string[]; name: string }): Change {
  const id = body.identifier as Json | undefined;
  let namespace = path?.namespace;
  let name = path?.name;
  if (id !== undefined && id !== null) {
    if (typeof id !== 'object') throw badRequest('identifier must be an object');
    const ns = checkNamespace(id.namespace);
    const n = checkName(id.name, 'table name');
    if (path && (dotted(ns, n) !== dotted(path.namespace, path.name))) throw badRequest('identifier does not match the table in the path');
    namespace = ns; name = n;
  }
  if (!namespace || !name) throw badRequest('each table change needs an identifier');
  if (!Array.isArray(body.requirements ?? [])) throw badRequest('requirements must be an array');
  if (!Array.isArray(body.updates ?? [])) throw badRequest('updates must be an array');
  return { namespace, name, requirements: (body.requirements as unknown[] | undefined) ?? [], updates: (body.updates as unknown[] | undefined) ?? [] };
}

async function prepare(s: Services, wh: Warehouse, c: Change): Promise<Prepared> {
  const row = await findTable(s.db, wh, c.namespace, c.name);
  if (row && row.kind !== 'table') throw badRequest(`${dotted(c.namespace, c.name)} is a view`);
  const base = row ? (parseJson(row.metadata) as TableMetadata) : undefined;
  for (const r of c.requirements) checkRequirement(base, r);
  if (!base && !c.requirements.some((r) => (r as Json | null)?.type === 'assert-create')) {
    throw noSuchTable(c.namespace, c.name);
  }
  const now = s.clock.now().getTime();
  const ns = row ? { id: row.namespace_id } : await getNamespace(s.db, wh, c.namespace);
  const metadata = applyUpdates(base, row?.metadata_location ?? null, c.updates, () => emptyMetadata(`${wh.root}/${ns.id}/pending`, now), now);
  if (!base) {
    // A staged create's commit: the location is the client's (set-location) or the default.
    metadata.location = metadata.location.endsWith('/pending') ? `${wh.root}/${ns.id}/${metadata['table-uuid']}` : checkLocation(s, wh, metadata.location);
  } else if (metadata.location !== base.location) {
    checkLocation(s, wh, metadata.location);
  }
  const text = stringifyJson(metadata);
  const location = nextMetadataLocation(metadata.location, row?.metadata_location ?? null);
  await writeMetadata(s, wh, location, text);
  return { change: c, namespaceId: ns.id, tableId: row?.id ?? null, base: row?.metadata_location ?? null, location, text, metadata };
}

class LostRace extends Error {}

/** Swaps every prepared table in one transaction; throws LostRace when any moved meanwhile. */
async function swap(s: Services, wh: Warehouse, caller: CatalogCaller, all: Prepared[]): Promise<void> {
  await s.db.transaction().execute(async (tx) => {
    for (const p of all) {
      if (p.tableId === null) {
        await insertTableRow(tx, wh, caller, p.namespaceId, p.change.namespace, p.change.name, 'table', p.location, p.text).catch((err: unknown) => {
          if ((err as { type?: string }).type === 'AlreadyExistsException') throw new LostRace();
          throw err;
        });
        continue;
      }
      const r = await tx.updateTable('catalog_tables').set({ metadata_location: p.location, metadata: p.text, updated_at: s.clock.now() })
        .where('id', '=', p.tableId).where('metadata_location', '=', p.base!).executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) throw new LostRace();
    }
    if (all.length > 1) {
      await recordGovernance(tx, { action: 'catalog.transaction.commit', actorId: caller.actorId, actor: caller.actor, target: all.map((p) => `table:${dotted(p.change.namespace, p.change.name)}`).join(','), workspace: wh.slug });
    }
  });
}

/** Commits the changes (one table, or a multi-table transaction): all or nothing. */
export async function commit(s: Services, wh: Warehouse, caller: CatalogCaller, changes: Change[]): Promise<Prepared[]> {
  if (changes.length === 0) throw badRequest('table-changes must not be empty');
  if (changes.length > MAX_TABLE_CHANGES) throw badRequest(`at most ${MAX_TABLE_CHANGES} table changes in one transaction`);
  const names = new Set(changes.map((c) => dotted(c.namespace, c.name)));
  if (names.size !== changes.length) throw badRequest('a transaction names each table once');
  for (let attempt = 1; ; attempt++) {
    const all: Prepared[] = [];
    for (const c of changes) all.push(await prepare(s, wh, c));
    try {
      await swap(s, wh, caller, all);
      return all;
    } catch (err) {
      if (!(err instanceof LostRace)) throw err;
      // The written files stay unreferenced, as after a failed commit of the Java catalogs.
      if (attempt >= COMMIT_ATTEMPTS) throw commitFailed(`Commit failed: ${[...names].join(', ')} changed concurrently ${attempt} times; retry`);
    }
  }
}
