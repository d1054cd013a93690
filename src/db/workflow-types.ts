// Table types of the workflow engine (migrations/0004_workflows.sql).
import type { ColumnType, Generated } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTs = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** jsonb: read as a value, written as JSON text. */
type Json<T = unknown> = ColumnType<T, string | undefined, string>;
type JsonNullable<T = unknown> = ColumnType<T | null, string | null | undefined, string | null>;

export type ExecutionState = 'CREATED' | 'RUNNING' | 'SUCCESS' | 'FAILED' | 'KILLING' | 'KILLED';
export type TaskRunState = 'CREATED' | 'QUEUED' | 'RUNNING' | 'RETRYING' | 'SUCCESS' | 'FAILED' | 'KILLED' | 'SKIPPED';

export interface FlowsTable {
  workspace_id: string;
  namespace: string;
  flow_id: string;
  revision: number;
  source: string;
  definition: Json;
  uses_secrets: boolean;
  deleted: Generated<boolean>;
  created_at: CreatedAt;
  updated_at: Timestamp;
  updated_by: string | null;
}

export interface FlowRevisionsTable {
  workspace_id: string;
  namespace: string;
  flow_id: string;
  revision: number;
  source: string;
  deleted: Generated<boolean>;
  created_at: CreatedAt;
  created_by: string | null;
}

export interface ExecutionsTable {
  id: string;
  workspace_id: string;
  namespace: string;
  flow_id: string;
  flow_revision: number;
  state: ExecutionState;
  inputs: Json<Record<string, unknown>>;
  outputs: Json<Record<string, unknown>>;
  trigger: JsonNullable<Record<string, unknown>>;
  error: string | null;
  kill_requested_at: NullableTs;
  files_pruned_at: NullableTs;
  /** bumped by every orchestration step and kill request (bigint, read as a string) */
  version: ColumnType<string, never, string>;
  created_at: CreatedAt;
  started_at: NullableTs;
  ended_at: NullableTs;
  /** in a finished iteration of an outermost foreach: left out of a step's read */
  settled: Generated<boolean>;
  /** of a foreach run: how many of its first iterations are settled */
  settled_iterations: Generated<number>;
}

export interface TaskRunsTable {
  id: string;
  execution_id: string;
  parent_id: string | null;
  task_id: string;
  path: string;
  iteration: JsonNullable;
  state: TaskRunState;
  attempt: Generated<number>;
  outputs: Json<Record<string, unknown>>;
  error: string | null;
  lease_token: string | null;
  lease_until: NullableTs;
  dispatched_at: NullableTs;
  created_at: CreatedAt;
  started_at: NullableTs;
  ended_at: NullableTs;
}

export interface TaskRunAttemptsTable {
  task_run_id: string;
  attempt: number;
  state: string;
  worker: string | null;
  reason: string | null;
  log_lines: Generated<number>;
  log_bytes: ColumnType<string, number | undefined, number>;
  withheld: Generated<number>;
  task_bytes: ColumnType<string, number | undefined, number>;
  started_at: Timestamp;
  ended_at: NullableTs;
}

export interface TaskLogsTable {
  id: Generated<string>;
  execution_id: string;
  task_run_id: string | null;
  attempt: number;
  at: Timestamp;
  level: string;
  line: string;
}

export interface WorkflowSecretsTable {
  workspace_id: string;
  name: string;
  sealed: string;
  updated_at: Timestamp;
  updated_by: string | null;
}

export interface TriggerStatesTable {
  workspace_id: string;
  namespace: string;
  flow_id: string;
  trigger_id: string;
  next_fire_at: NullableTs;
  last_fired_at: NullableTs;
}

export interface DataApiAccessLogTable {
  id: Generated<string>;
  at: Timestamp;
  workspace_id: string | null;
  client: string | null;
  method: string;
  path: string;
  status: number;
  /** Data API calls (migrations/0020_data_api.sql). */
  endpoint: ColumnType<string | null, string | null | undefined, string | null>;
  version: ColumnType<number | null, number | null | undefined, number | null>;
  rows: ColumnType<number | null, number | null | undefined, number | null>;
  bytes: ColumnType<string | null, number | null | undefined, number | null>;
  duration_ms: ColumnType<number | null, number | null | undefined, number | null>;
}

/** Idempotency keys of execution starts, kept 24 h (migrations/0026_execution_idempotency.sql). */
export interface ExecutionIdempotencyTable {
  workspace_id: string;
  namespace: string;
  flow_id: string;
  key: string;
  execution_id: string;
  created_at: ColumnType<Date, Date | string, never>;
}

export interface WorkflowTables {
  execution_idempotency: ExecutionIdempotencyTable;
  flows: FlowsTable;
  flow_revisions: FlowRevisionsTable;
  executions: ExecutionsTable;
  task_runs: TaskRunsTable;
  task_run_attempts: TaskRunAttemptsTable;
  task_logs: TaskLogsTable;
  workflow_secrets: WorkflowSecretsTable;
  trigger_states: TriggerStatesTable;
  data_api_access_log: DataApiAccessLogTable;
}
