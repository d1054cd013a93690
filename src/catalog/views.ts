// Views of a warehouse: create and replace (a commit of view updates, compare-and-swap on the
// metadata location like tables), the rest (list, load, drop, rename) shared with tables.ts.
// Views and tables share a namespace's names, as the Iceberg REST specification asks.
import type { Services } from '../services.js';
import { alreadyExists, commitFailed } from './errors.js';
import { checkName, dotted } from './names.js';
import { getNamespace } from './namespaces.js';
import type { Json } from './metadata.js';
import { applyViewUpdates, checkViewRequirement, createViewUpdates, emptyView, type ViewMetadata } from './view-metadata.js';
import { parseJson, stringifyJson } from './json.js';
import { checkLocation, getTable, insertTable, nextMetadataLocation, writeMetadata, type Created } from './tables.js';
import { COMMIT_ATTEMPTS, parseChange } from './commit.js';
import type { Warehouse } from './warehouse.js';
import type { CatalogCaller } from './access.js';

export async function createView(s: Services, wh: Warehouse, caller: CatalogCaller, levels: string[], req: Json): Promise<Created> {
  const name = checkName(req.name, 'view name');
  const ns = await getNamespace(s.db, wh, levels);
  const existing = await s.db.selectFrom('catalog_tables').select('kind').where('namespace_id', '=', ns.id).where('name', '=', name).executeTakeFirst();
  if (existing) throw alreadyExists(`${existing.kind === 'view' ? 'View' : 'Table with same name'} already exists: ${dotted(levels, name)}`);
  const now = s.clock.now().getTime();
  const fresh = emptyView('');
  const location = typeof req.location === 'string' && req.location !== '' ? checkLocation(s, wh, req.location) : `${wh.root}/${ns.id}/${fresh['view-uuid']}`;
  const metadata = applyViewUpdates(undefined, createViewUpdates(req, location), () => fresh, now);
  const text = stringifyJson(metadata);
  const metadataLocation = nextMetadataLocation(location, null);
  await writeMetadata(s, wh, metadataLocation, text);
  await insertTable(s.db, wh, caller, ns.id, levels, name, 'view', metadataLocation, text);
  return { location: metadataLocation, text, metadata: metadata as never };
}

/** Replaces a view: requirements (assert-view-uuid) and updates, compare-and-swap. */
export async function commitView(s: Services, wh: Warehouse, levels: string[], name: string, body: Json): Promise<{ location: string; text: string }> {
  const change = parseChange(body, { namespace: levels, name });
  for (let attempt = 1; ; attempt++) {
    const row = await getTable(s.db, wh, levels, name, 'view');
    const base = parseJson(row.metadata) as ViewMetadata;
    for (const r of change.requirements) checkViewRequirement(base, r);
    const metadata = applyViewUpdates(base, change.updates, () => base, s.clock.now().getTime());
    if (metadata.location !== base.location) checkLocation(s, wh, metadata.location);
    const text = stringifyJson(metadata);
    const location = nextMetadataLocation(metadata.location, row.metadata_location);
    await writeMetadata(s, wh, location, text);
    const r = await s.db.updateTable('catalog_tables').set({ metadata_location: location, metadata: text, updated_at: s.clock.now() })
      .where('id', '=', row.id).where('metadata_location', '=', row.metadata_location).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 1) return { location, text };
    if (attempt >= COMMIT_ATTEMPTS) throw commitFailed(`Commit failed: ${dotted(levels, name)} changed concurrently ${attempt} times; retry`);
  }
}
