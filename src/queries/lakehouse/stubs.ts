// The `iceberg` catalog DuckDB shows: an in-memory database attached to each workspace's DuckDB
// database, holding one schema per namespace and one empty table (or view) per catalog table, with
// the table's current columns and types. It makes information_schema, SHOW TABLES FROM
// iceberg.<ns>, DESCRIBE and the duckdb_* catalog functions list catalog tables as DuckDB's own;
// no statement ever reads these empty tables (every reference to one is rewritten into a scan of
// the table's files, lakehouse/rewrite.ts) and none writes them (writes go to the catalog). They
// follow the catalog: before a statement that names `iceberg` or reads metadata, the workspace's
// catalog version is compared with the one the stubs were made at, and what changed is made again.
import type { DuckDBConnection } from '@duckdb/node-api';
import { tableInfo } from '../../iceberg/table.js';
import { parseSchema } from '../../iceberg/types.js';
import { quoteIdent } from '../sql/lexer.js';
import { CATALOG, duckType, schemaOf } from './names.js';
import type { CatalogEntry, LakehouseCatalog } from './catalog.js';

type Json = Record<string, unknown>;

interface Synced { version: string; entries: Map<string, string>; schemas: Set<string>; running?: Promise<void> }

const key = (e: { levels: string[]; name: string }) => `${schemaOf(e.levels)}\u0000${e.name}`;
const target = (levels: string[], name: string) => `${CATALOG}.${quoteIdent(schemaOf(levels))}.${quoteIdent(name)}`;

export class Stubs {
  /** By DuckDB database (one per workspace and open instance). */
  private readonly synced = new WeakMap<object, Synced>();

  constructor(private readonly catalog: LakehouseCatalog) {}

  /** Brings the `iceberg` stubs of `db` up to the workspace's catalog; syncs of one database take turns. */
  async sync(db: object, conn: DuckDBConnection, workspaceId: string): Promise<void> {
    let s = this.synced.get(db);
    if (!s) { s = { version: '', entries: new Map(), schemas: new Set() }; this.synced.set(db, s); }
    const state = s;
    const previous = state.running ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.apply(state, conn, workspaceId));
    state.running = run;
    try { await run; } finally { if (state.running === run) state.running = undefined; }
  }

  private async apply(s: Synced, conn: DuckDBConnection, workspaceId: string): Promise<void> {
    const version = await this.catalog.version(workspaceId);
    if (version === s.version) return;
    const [namespaces, entries] = await Promise.all([this.catalog.namespaces(workspaceId), this.catalog.list(workspaceId)]);
    const want = new Map(entries.map((e) => [key(e), e]));
    for (const [k, loc] of s.entries) {
      const e = want.get(k);
      if (e && e.metadataLocation === loc) continue;
      const [schema, name] = k.split('\u0000') as [string, string];
      // a stub's kind is not kept: drop whichever it is
      await conn.run(`DROP TABLE IF EXISTS ${CATALOG}.${quoteIdent(schema)}.${quoteIdent(name)}`).catch(() => conn.run(`DROP VIEW IF EXISTS ${CATALOG}.${quoteIdent(schema)}.${quoteIdent(name)}`));
      s.entries.delete(k);
    }
    const schemas = new Set(namespaces.map(schemaOf));
    for (const name of s.schemas) {
      if (schemas.has(name)) continue;
      await conn.run(`DROP SCHEMA IF EXISTS ${CATALOG}.${quoteIdent(name)} CASCADE`);
      s.schemas.delete(name);
    }
    for (const name of schemas) {
      if (s.schemas.has(name)) continue;
      await conn.run(`CREATE SCHEMA IF NOT EXISTS ${CATALOG}.${quoteIdent(name)}`);
      s.schemas.add(name);
    }
    for (const e of entries) {
      if (s.entries.get(key(e)) === e.metadataLocation) continue;
      const loaded = await this.catalog.load(workspaceId, e.levels, e.name);
      if (!loaded) continue;
      const columns = columnsOf(loaded.kind, loaded.metadata);
      if (columns === null) continue;
      const cols = columns.map((c) => `${quoteIdent(c.name)} ${c.type}`).join(', ');
      const stmt = e.kind === 'table'
        ? `CREATE OR REPLACE TABLE ${target(e.levels, e.name)} (${cols})`
        : `CREATE OR REPLACE VIEW ${target(e.levels, e.name)} AS SELECT ${columns.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdent(c.name)}`).join(', ')} WHERE false`;
      await conn.run(stmt);
      s.entries.set(key(e), e.metadataLocation);
    }
    s.version = version;
  }
}

/** The current columns of a table or view, or null when its schema cannot be shown (an unreadable type). */
export function columnsOf(kind: 'table' | 'view', metadata: Json): Array<{ name: string; type: string }> | null {
  try {
    if (kind === 'table') {
      const t = tableInfo(metadata);
      return t.schemas.get(t.currentSchemaId)!.struct.fields.map((f) => ({ name: f.name, type: duckType(f.type) }));
    }
    const versions = (metadata.versions ?? []) as Json[];
    const current = versions.find((v) => String(v['version-id']) === String(metadata['current-version-id']));
    const schemas = (metadata.schemas ?? []) as Json[];
    const schema = schemas.find((x) => String(x['schema-id']) === String(current?.['schema-id'])) ?? schemas[0];
    if (!schema) return null;
    return parseSchema(schema, 2, true).struct.fields.map((f) => ({ name: f.name, type: duckType(f.type) }));
  } catch {
    return null;
  }
}

export type { CatalogEntry };
