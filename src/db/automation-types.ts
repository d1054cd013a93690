// Table types of alerts and reports (migrations/0018_automation.sql, 0025_automation_run_as.sql).
import type { ColumnType, Selectable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTs = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T = unknown> = ColumnType<T, string | undefined, string>;
type JsonNullable<T = unknown> = ColumnType<T | null, string | null | undefined, string | null>;

export type AutomationKind = 'alert' | 'report';
export type AlertState = 'ok' | 'triggered' | 'error';
export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'refused';

export interface AutomationsTable {
  id: string;
  workspace_id: string;
  kind: AutomationKind;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  engine: string;
  sql: ColumnType<string, string | undefined, string>;
  spec: Json<Record<string, unknown>>;
  cron: string;
  timezone: ColumnType<string, string | undefined, string>;
  grace_secs: ColumnType<number, number | undefined, number>;
  recipients: Json<unknown[]>;
  signing_secret: string;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  state: ColumnType<AlertState, AlertState | undefined, AlertState>;
  state_since: Timestamp;
  last_notified_at: NullableTs;
  last_evaluated_at: NullableTs;
  next_fire_at: NullableTs;
  last_fired_at: NullableTs;
  created_by: string | null;
  /** Who last set what it produces or where it goes; a screenshot renders as them (migrations/0025). */
  run_as: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface AutomationEvaluationsTable {
  id: string;
  automation_id: string;
  scheduled_for: Date | string;
  manual: ColumnType<boolean, boolean | undefined, boolean>;
  started_at: Timestamp;
  ended_at: NullableTs;
  outcome: string | null;
  value: JsonNullable;
  error: string | null;
  notification: string | null;
}

export interface AutomationDeliveriesTable {
  id: string;
  automation_id: string;
  evaluation_id: string | null;
  channel: 'webhook' | 'slack';
  target: string;
  recipient: number;
  event: string;
  payload: Json<Record<string, unknown>>;
  status: DeliveryStatus;
  attempts: ColumnType<number, number | undefined, number>;
  http_status: number | null;
  error: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface AutomationTables {
  automations: AutomationsTable;
  automation_evaluations: AutomationEvaluationsTable;
  automation_deliveries: AutomationDeliveriesTable;
}
export type AutomationRow = Selectable<AutomationsTable>;
export type EvaluationRow = Selectable<AutomationEvaluationsTable>;
export type DeliveryRow = Selectable<AutomationDeliveriesTable>;
