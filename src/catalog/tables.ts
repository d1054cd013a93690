// Tables of a warehouse: list, create (and stage-create), load, drop, rename, register. The
// metadata JSON is written to the object store under the table location as the Iceberg spec lays
// it out (`metadata/NNNNN-<uuid>.metadata.json`) and kept beside its location in PostgreSQL so a
// load reads no object. Creating, dropping and renaming are governance events.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { Db } from '../db/index.js';
import { recordGovernance } from '../audit/governance.js';
import { isUniqueViolation } from '../errors.js';
import { alreadyExists, badRequest, IcebergError, noSuchNamespace, noSuchTable, noSuchView } from './errors.js';
import { checkName, dotted } from './names.js';
import { decodeToken, encodeToken, findNamespace, getNamespace, pageSize } from './namespaces.js';
import { applyUpdates, createUpdates, emptyMetadata, type Json, type TableMetadata } from './metadata.js';
import { parseJson, stringifyJson } from './json.js';
import { locationKey, storageKey, warehouseStore, type Warehouse } from './warehouse.js';
import type { CatalogCaller } from './access.js';
import { enqueuePurge, filesOutside, locationOf } from './purge.js';
import { authorize } from '../storage/ownership.js';

export type Kind = 'table' | 'view';
export interface TableRow { id: string; namespace_id: string; name: string; kind: Kind; metadata_location: string; metadata: string }

const missing = (kind: Kind, ns: string[], name: string) => (kind === 'table' ? noSuchTable(ns, name) : noSuchView(ns, name));

/**
 * The table (or view) row, or undefined; the namespace must exist (else NoSuchNamespace). One
 * query (the namespace left-joined to the table): a load is on every engine's hot path.
 */
export async function findTable(db: Db, wh: Warehouse, levels: string[], name: string): Promise<TableRow | undefined> {
  const row = await db.selectFrom('catalog_namespaces as n')
    .leftJoin('catalog_tables as t', (j) => j.onRef('t.namespace_id', '=', 'n.id').on('t.name', '=', name))
    .select(['t.id', 'n.id as ns_id', 't.name', 't.kind', 't.metadata_location', 't.metadata'])
    .where('n.workspace_id', '=', wh.id).where('n.levels', '=', sql<string[]>`${levels}::text[]`).executeTakeFirst();
  if (!row) throw noSuchNamespace(levels);
  if (row.id === null) return undefined;
  return { id: row.id, namespace_id: row.ns_id, name: row.name!, kind: row.kind as Kind, metadata_location: row.metadata_location!, metadata: row.metadata as string };
}

/**
 * A table's row id and current metadata location, without its metadata text (scan planning keeps
 * parsed metadata by location and reads the text only when it has not parsed it yet).
 */
export async function getTableRef(db: Db, wh: Warehouse, levels: string[], name: string): Promise<{ id: string; metadata_location: string }> {
  const row = await db.selectFrom('catalog_namespaces as n')
    .leftJoin('catalog_tables as t', (j) => j.onRef('t.namespace_id', '=', 'n.id').on('t.name', '=', name))
    .select(['t.id', 't.kind', 't.metadata_location'])
    .where('n.workspace_id', '=', wh.id).where('n.levels', '=', sql<string[]>`${levels}::text[]`).executeTakeFirst();
  if (!row) throw noSuchNamespace(levels);
  if (row.id === null || row.kind !== 'table') throw noSuchTable(levels, name);
  return { id: row.id, metadata_location: row.metadata_location! };
}

export async function getTable(db: Db, wh: Warehouse, levels: string[], name: string, kind: Kind): Promise<TableRow> {
  const row = await findTable(db, wh, levels, name);
  if (!row || row.kind !== kind) throw missing(kind, levels, name);
  return row;
}

export async function listTables(db: Db, wh: Warehouse, levels: string[], kind: Kind, token: string | undefined, size: number | undefined) {
  const limit = pageSize(size);
  const after = decodeToken(token, (v): v is string => typeof v === 'string');
  const ns = await getNamespace(db, wh, levels);
  let q = db.selectFrom('catalog_tables').select('name').where('namespace_id', '=', ns.id).where('kind', '=', kind);
  if (after !== undefined) q = q.where('name', '>', after);
  const rows = await q.orderBy('name').limit(limit + 1).execute();
  const page = rows.slice(0, limit).map((r) => ({ namespace: levels, name: r.name }));
  return { identifiers: page, ...(rows.length > limit ? { 'next-page-token': encodeToken(page[page.length - 1].name) } : {}) };
}

/**
 * A location the client names (or a metadata file names) must lie inside the workspace's
 * warehouse and the bucket, and the storage rule must let the workspace work there.
 */
export function checkLocation(s: Services, wh: Warehouse, location: string): string {
  const loc = location.replace(/\/+$/, '');
  if (!loc.startsWith(`${wh.root}/`) || storageKey(s, loc) === null || loc.split('/').includes('..')) {
    throw badRequest(`location must lie inside the warehouse ${wh.root}/`);
  }
  authorize(s.storage.layout, { tenant: wh }, { name: 'Vend', prefix: `${locationKey(s, loc)}/` });
  return loc;
}

/** `metadata/NNNNN-<uuid>.metadata.json` under the table location; NNNNN follows the previous. */
export function nextMetadataLocation(location: string, previous: string | null): string {
  const m = previous ? /\/(\d+)-[^/]*\.metadata\.json$/.exec(previous) : null;
  const n = m ? Number(m[1]) + 1 : 0;
  return `${location}/metadata/${String(n).padStart(5, '0')}-${randomUUID()}.metadata.json`;
}

export async function writeMetadata(s: Services, wh: Warehouse, location: string, text: string): Promise<void> {
  const key = storageKey(s, location);
  if (key === null) throw badRequest(`metadata location is outside the bucket ${s.config.storage.bucket}: ${location}`);
  await warehouseStore(s, wh).put(key, text, 'application/json');
}

export interface Created { location: string | null; text: string; metadata: TableMetadata }

export async function createTable(s: Services, wh: Warehouse, caller: CatalogCaller, levels: string[], req: Json): Promise<Created> {
  const name = checkName(req.name, 'table name');
  const ns = await getNamespace(s.db, wh, levels);
  const existing = await s.db.selectFrom('catalog_tables').select('kind').where('namespace_id', '=', ns.id).where('name', '=', name).executeTakeFirst();
  if (existing) throw alreadyExists(`${existing.kind === 'table' ? 'Table' : 'View with same name'} already exists: ${dotted(levels, name)}`);
  const now = s.clock.now().getTime();
  const fresh = emptyMetadata('', now);
  const location = typeof req.location === 'string' && req.location !== '' ? checkLocation(s, wh, req.location) : `${wh.root}/${ns.id}/${fresh['table-uuid']}`;
  const metadata = applyUpdates(undefined, null, createUpdates(req, location), () => fresh, now);
  const text = stringifyJson(metadata);
  if (req['stage-create'] === true) return { location: null, text, metadata };
  const metadataLocation = nextMetadataLocation(location, null);
  await writeMetadata(s, wh, metadataLocation, text);
  await insertTable(s.db, wh, caller, ns.id, levels, name, 'table', metadataLocation, text);
  return { location: metadataLocation, text, metadata };
}

export async function insertTable(db: Db, wh: Warehouse, caller: CatalogCaller, namespaceId: string, levels: string[], name: string, kind: Kind, location: string, text: string): Promise<void> {
  await db.transaction().execute((tx) => insertTableRow(tx, wh, caller, namespaceId, levels, name, kind, location, text));
}

/** The row and its governance event, inside the caller's transaction. */
export async function insertTableRow(tx: Db, wh: Warehouse, caller: CatalogCaller, namespaceId: string, levels: string[], name: string, kind: Kind, location: string, text: string): Promise<void> {
  try {
    await tx.insertInto('catalog_tables').values({ namespace_id: namespaceId, name, kind, metadata_location: location, metadata: text }).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw alreadyExists(`${kind === 'table' ? 'Table' : 'View'} already exists: ${dotted(levels, name)}`);
    throw err;
  }
  await recordGovernance(tx, { action: `catalog.${kind}.create`, actorId: caller.actorId, actor: caller.actor, target: `${kind}:${dotted(levels, name)}`, workspace: wh.slug, details: { location } });
}

/**
 * Drops a table or view; with `purge` a job then removes the table's files (purge.ts). The job
 * is queued after the row is gone (a job that ran first would find the table live and keep its
 * files); when queueing fails the drop stands and the error is the answer (a 500: the files stay).
 */
/** With `onlyAt`, the table is dropped only while its metadata is still at that location (409 once a commit moved it). */
export async function dropTable(s: Services, wh: Warehouse, caller: CatalogCaller, levels: string[], name: string, kind: Kind, purge: boolean, onlyAt?: string): Promise<TableRow> {
  if (purge && kind === 'table') {
    // The purge may remove only what the workspace owns: decided before anything is dropped.
    const row = await getTable(s.db, wh, levels, name, kind);
    authorize(s.storage.layout, { tenant: wh }, { name: 'DeletePrefix', prefix: `${locationKey(s, locationOf(row.metadata_location, row.metadata))}/` });
  }
  const row = await s.db.transaction().execute(async (tx) => {
    const ns = await getNamespace(tx, wh, levels);
    let del = tx.deleteFrom('catalog_tables').where('namespace_id', '=', ns.id).where('name', '=', name).where('kind', '=', kind);
    if (onlyAt !== undefined) del = del.where('metadata_location', '=', onlyAt);
    const row = await del.returning(['id', 'namespace_id', 'name', 'kind', 'metadata_location', 'metadata']).executeTakeFirst();
    if (!row && onlyAt !== undefined) throw new IcebergError(409, 'CommitFailedException', `${dotted(levels, name)} changed since it was created: it is left as it is`);
    if (!row) throw missing(kind, levels, name);
    await recordGovernance(tx, { action: `catalog.${kind}.drop`, actorId: caller.actorId, actor: caller.actor, target: `${kind}:${dotted(levels, name)}`, workspace: wh.slug, details: { purge, location: row.metadata_location } });
    return row;
  });
  if (purge && kind === 'table') {
    const location = locationOf(row.metadata_location, row.metadata);
    await enqueuePurge(s, {
      tableId: row.id, workspace: wh.slug, table: dotted(levels, name), location, requestedBy: caller.actor,
      files: filesOutside(row.metadata_location, row.metadata, location, wh.root),
    });
  }
  return row;
}

export async function renameTable(s: Services, wh: Warehouse, caller: CatalogCaller, kind: Kind, source: { namespace: string[]; name: string }, dest: { namespace: string[]; name: string }): Promise<void> {
  await s.db.transaction().execute(async (tx) => {
    const from = await getNamespace(tx, wh, source.namespace);
    const to = await findNamespace(tx, wh, dest.namespace);
    if (!to) throw noSuchNamespace(dest.namespace);
    try {
      const r = await tx.updateTable('catalog_tables').set({ namespace_id: to.id, name: dest.name, updated_at: s.clock.now() })
        .where('namespace_id', '=', from.id).where('name', '=', source.name).where('kind', '=', kind).executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) throw missing(kind, source.namespace, source.name);
    } catch (err) {
      if (isUniqueViolation(err)) throw alreadyExists(`${kind === 'table' ? 'Table' : 'View'} already exists: ${dotted(dest.namespace, dest.name)}`);
      throw err;
    }
    await recordGovernance(tx, {
      action: `catalog.${kind}.rename`, actorId: caller.actorId, actor: caller.actor, target: `${kind}:${dotted(source.namespace, source.name)}`,
      workspace: wh.slug, details: { to: dotted(dest.namespace, dest.name) },
    });
  });
}

/**
 * Registers existing metadata (read from the object store) as a table; `overwrite` replaces one.
 * The metadata file and the table location it gives (its folder's parent, else the file's own
 * `location` field) must both lie inside the workspace's warehouse: a location a client wrote into
 * a file decides nothing (issue 24). Files written elsewhere come in by an import, not here.
 */
export async function registerTable(s: Services, wh: Warehouse, caller: CatalogCaller, levels: string[], req: Json): Promise<Created> {
  const name = checkName(req.name, 'table name');
  if (typeof req['metadata-location'] !== 'string') throw badRequest('metadata-location must be a string');
  const location = checkLocation(s, wh, req['metadata-location']);
  const bytes = await warehouseStore(s, wh).get(storageKey(s, location)!);
  if (!bytes) throw badRequest(`no metadata file at ${location}`);
  let metadata: TableMetadata;
  try {
    metadata = parseJson(Buffer.from(bytes).toString('utf8')) as TableMetadata;
  } catch {
    throw badRequest(`not JSON: ${location}`);
  }
  if (typeof metadata !== 'object' || metadata === null || typeof metadata['table-uuid'] !== 'string' || typeof metadata['format-version'] !== 'number') {
    throw badRequest(`not Iceberg table metadata: ${location}`);
  }
  if (typeof metadata.location !== 'string') throw badRequest(`the metadata at ${location} has no location`);
  const text = stringifyJson(metadata);
  for (const loc of [metadata.location, locationOf(location, text)]) {
    try { checkLocation(s, wh, loc); } catch { throw badRequest(`the metadata at ${location} names the table location ${loc}, outside the warehouse ${wh.root}/`); }
  }
  const ns = await getNamespace(s.db, wh, levels);
  if (req.overwrite === true) {
    const r = await s.db.updateTable('catalog_tables').set({ metadata_location: location, metadata: text, updated_at: s.clock.now() })
      .where('namespace_id', '=', ns.id).where('name', '=', name).where('kind', '=', 'table').executeTakeFirst();
    if (Number(r.numUpdatedRows) > 0) return { location, text, metadata };
  }
  await insertTable(s.db, wh, caller, ns.id, levels, name, 'table', location, text);
  return { location, text, metadata };
}
