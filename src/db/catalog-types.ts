// Table types of the embedded Iceberg REST catalog (migrations/0011_catalog.sql).
import type { ColumnType, Generated } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** jsonb: read as a value, written as JSON text. */
type Json<T = unknown> = ColumnType<T, string | undefined, string>;

export interface CatalogNamespacesTable {
  id: Generated<string>;
  workspace_id: string;
  levels: string[];
  properties: Json<Record<string, string>>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface CatalogTablesTable {
  id: Generated<string>;
  namespace_id: string;
  name: string;
  kind: 'table' | 'view';
  metadata_location: string;
  /** The metadata JSON text, exactly as in the object store (int64 ids intact). */
  metadata: string;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface CatalogIdempotencyTable {
  workspace_id: string;
  key: string;
  operation: string;
  status: number;
  body: ColumnType<unknown, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export interface CatalogTables {
  catalog_namespaces: CatalogNamespacesTable;
  catalog_tables: CatalogTablesTable;
  catalog_idempotency: CatalogIdempotencyTable;
  policy_plugins: PolicyPluginsTable;
}

export interface PolicyPluginsTable {
  workspace_id: string;
  plugin_id: string;
  cluster_name: Generated<string>;
  policy_version_held: ColumnType<string | null, number | null | undefined, number | null>;
  policy_polled_at: Date | null;
  tag_version_held: ColumnType<string | null, number | null | undefined, number | null>;
  tag_polled_at: Date | null;
  role_version_held: ColumnType<string | null, number | null | undefined, number | null>;
  role_polled_at: Date | null;
  last_activation_time: Date | null;
  last_poll_at: Timestamp;
}
