// Table types of recorded queries (migrations/0016_queries.sql).
import type { ColumnType, Selectable } from 'kysely';
/** The role the query ran with (decides the statements it may run). */
type WorkspaceRole = 'ws_admin' | 'ws_editor' | 'ws_viewer';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type NullableTs = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T = unknown> = ColumnType<T, string | undefined, string>;
type JsonNullable<T = unknown> = ColumnType<T | null, string | null | undefined, string | null>;
/** bigint columns are read as strings (src/db/index.ts) and written as numbers. */
type BigNullable = ColumnType<string | null, number | null | undefined, number | null>;

export type QueryState = 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
export interface QueryColumn { name: string; type: string }

export interface QueriesTable {
  id: string;
  workspace_id: string;
  engine: string;
  sql: string;
  params: Json<unknown[] | Record<string, unknown>>;
  principal: string | null;
  principal_role: WorkspaceRole;
  state: QueryState;
  error: string | null;
  rows: BigNullable;
  truncated: ColumnType<boolean, boolean | undefined, boolean>;
  columns: JsonNullable<QueryColumn[]>;
  preview: JsonNullable<unknown[][]>;
  result_key: string | null;
  result_bytes: BigNullable;
  max_rows: number;
  timeout_ms: number;
  cancel_requested_at: NullableTs;
  created_at: CreatedAt;
  started_at: NullableTs;
  ended_at: NullableTs;
}

export interface QueryTables { queries: QueriesTable }
export type QueryRow = Selectable<QueriesTable>;
