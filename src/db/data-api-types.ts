// Table types of the Data API (migrations/0020_data_api.sql).
import type { ColumnType } from 'kysely';

/** A declared parameter of an endpoint (src/data-api/params.ts checks and binds them). */
export interface ParamSpec {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date' | 'timestamp';
  description?: string;
  /** A parameter without a default is required. */
  default?: string | number | boolean;
  /** Numbers: inclusive bounds. */
  minimum?: number;
  maximum?: number;
  /** Strings: at most this many characters (default and ceiling MAX_STRING). */
  max_length?: number;
  /** Strings: the only values accepted. */
  enum?: string[];
}

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
  /** Result columns read at publication (0021); null when the engine could not be asked. */
  columns: ColumnType<Array<{ name: string; type: string }> | null, string | null | undefined, string | null>;
  created_by: string | null;
  created_at: CreatedAt;
}

export interface DataApiTables {
  data_api_endpoints: DataApiEndpointsTable;
  data_api_versions: DataApiVersionsTable;
}
