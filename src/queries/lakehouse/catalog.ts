// What the embedded engine reads of the workspace's catalog (src/catalog keeps it in PostgreSQL,
// the metadata JSON beside its location): the list of namespaces, tables and views for the
// `iceberg` names DuckDB shows, one entry's metadata to plan a scan, and the warehouse root the
// workspace owns. Parsed metadata is kept by metadata location (a location is written once),
// bounded in bytes. Which objects the workspace may read is the storage rule's decision
// (src/storage), from svc's records, never from a location a metadata file names.
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import { parseJson } from '../../catalog/json.js';
import { TtlCache } from '../../util/ttl-cache.js';
import { QueryFailure } from '../types.js';

type Json = Record<string, unknown>;
export type EntryKind = 'table' | 'view';
export interface CatalogEntry { levels: string[]; name: string; kind: EntryKind; metadataLocation: string }
export interface LoadedEntry extends CatalogEntry { metadata: Json; updatedAt: Date }

/** Bytes of parsed metadata kept per replica (a parsed document counts three times its text). */
export const METADATA_CACHE_BYTES = 64 * 1024 * 1024;

export class LakehouseCatalog {
  private readonly parsed = new TtlCache<string, Json>(10_000, 10 * 60_000, Date.now, { max: METADATA_CACHE_BYTES, sizeOf: (k, v) => 3 * ((v as { __bytes?: number }).__bytes ?? k.length) });
  private readonly slugs = new TtlCache<string, string | null>(10_000, 5_000);

  constructor(private readonly db: Db, private readonly bucket: string) {}

  /** The workspace as the storage rule knows it (its slug keys the warehouse). */
  async tenant(workspaceId: string): Promise<{ id: string; slug: string }> {
    let slug = this.slugs.get(workspaceId);
    if (slug === undefined) {
      slug = (await this.db.selectFrom('workspaces').select('slug').where('id', '=', workspaceId).executeTakeFirst())?.slug ?? null;
      this.slugs.set(workspaceId, slug);
    }
    if (!slug) throw new QueryFailure('not_found', 'the workspace does not exist');
    return { id: workspaceId, slug };
  }

  /** The object key of an `s3://<bucket>/<key>` location (whether the workspace owns it is the storage rule's decision). */
  keyOf(location: string): string {
    const m = /^s3a?:\/\/([^/]+)\/(.+)$/.exec(location);
    if (!m || m[1] !== this.bucket) throw new QueryFailure('refused', `a file of the table is not in the bucket ${this.bucket}: ${location.slice(0, 300)}`);
    return m[2]!;
  }

  /** A change marker of the workspace's catalog: it moves when a namespace, table or view is added, changed or dropped. */
  async version(workspaceId: string): Promise<string> {
    const r = await sql<{ v: string }>`
      SELECT (SELECT count(*) || ':' || coalesce(max(updated_at)::text, '') FROM catalog_namespaces WHERE workspace_id = ${workspaceId})
        || '/' || (SELECT count(*) || ':' || coalesce(max(t.updated_at)::text, '') FROM catalog_tables t JOIN catalog_namespaces n ON n.id = t.namespace_id WHERE n.workspace_id = ${workspaceId}) AS v`.execute(this.db);
    return r.rows[0]!.v;
  }

  async namespaces(workspaceId: string): Promise<string[][]> {
    const rows = await this.db.selectFrom('catalog_namespaces').select('levels').where('workspace_id', '=', workspaceId).orderBy('levels').execute();
    return rows.map((r) => r.levels);
  }

  async list(workspaceId: string): Promise<CatalogEntry[]> {
    const rows = await this.db.selectFrom('catalog_tables as t').innerJoin('catalog_namespaces as n', 'n.id', 't.namespace_id')
      .select(['n.levels', 't.name', 't.kind', 't.metadata_location']).where('n.workspace_id', '=', workspaceId).orderBy('n.levels').orderBy('t.name').execute();
    return rows.map((r) => ({ levels: r.levels, name: r.name, kind: r.kind as EntryKind, metadataLocation: r.metadata_location }));
  }

  /**
   * One table or view with its parsed metadata, or null. The metadata text (tens of KB for a table
   * with history) is read only when its location is not parsed yet: every scan loads its tables.
   */
  async load(workspaceId: string, levels: string[], name: string): Promise<LoadedEntry | null> {
    const entry = this.db.selectFrom('catalog_tables as t').innerJoin('catalog_namespaces as n', 'n.id', 't.namespace_id')
      .where('n.workspace_id', '=', workspaceId).where('n.levels', '=', sql<string[]>`${levels}::text[]`).where('t.name', '=', name);
    const head = await entry.select(['t.kind', 't.metadata_location', 't.updated_at']).executeTakeFirst();
    if (!head) return null;
    const known = this.parsed.get(head.metadata_location);
    if (known) return { levels, name, kind: head.kind as EntryKind, metadataLocation: head.metadata_location, metadata: known, updatedAt: head.updated_at };
    const row = await entry.select(['t.kind', 't.metadata_location', 't.metadata', 't.updated_at']).executeTakeFirst();
    if (!row) return null;
    return { levels, name, kind: row.kind as EntryKind, metadataLocation: row.metadata_location, metadata: this.parse(row.metadata_location, row.metadata as string), updatedAt: row.updated_at };
  }

  /** Metadata of a location, parsed once (64-bit ids intact). */
  parse(location: string, text: string): Json {
    const hit = this.parsed.get(location);
    if (hit) return hit;
    const doc = parseJson(text) as Json;
    Object.defineProperty(doc, '__bytes', { value: text.length, enumerable: false });
    this.parsed.set(location, doc);
    return doc;
  }
}
