// Table types of the Data API (migrations/0020_data_api.sql).
import type { ColumnType } from 'kysely';
import type { ParamSpec } from '../data-api/params.js';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T = unknown> = ColumnType<T, string | undefined, string>;

export interface DataApiEndpointsTable {
  id: string;
  workspace_id: string;
  name: string;
  latest_version: number;
  created_at: CreatedAt;
  updated_at: UpdatedAt;
}

export interface DataApiVersionsTable {
  endpoint_id: string;
  version: number;
  engine: string;
  sql: string;
  params: Json<ParamSpec[]>;
  description: ColumnType<string, string | undefined, string>;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface DataApiTables {
  data_api_endpoints: DataApiEndpointsTable;
  data_api_versions: DataApiVersionsTable;
}
