// Table types of data apps (migrations/0022_apps.sql).
import type { ColumnType, Selectable } from 'kysely';

type Ts = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTs = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface AppsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  created_by: string | null;
  created_at: Ts;
  draft_updated_at: Ts;
  published_version: ColumnType<number | null, number | null | undefined, number | null>;
  published_at: NullableTs;
}

export type AppRow = Selectable<AppsTable>;
export interface AppTables { apps: AppsTable }
