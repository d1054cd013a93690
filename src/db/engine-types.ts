// Table types of query engines (migrations/0014_engines.sql).
import type { ColumnType, Generated, Selectable } from 'kysely';

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** jsonb: read as a value, written as JSON text. */
type Json<T = unknown> = ColumnType<T, string | undefined, string>;

export type EngineKind = 'trino' | 'olap';
export type EngineState = 'provisioning' | 'running' | 'stopping' | 'stopped' | 'failed';
export type EngineDesired = 'running' | 'stopped' | 'deleted';
export interface EngineResources { cpu: string; memory: string }

export interface EnginesTable {
  id: Generated<string>;
  workspace_id: string;
  name: string;
  kind: EngineKind;
  version: string | null;
  image: string;
  resources: Json<EngineResources>;
  provisioner: 'cluster' | 'local_container';
  state: EngineState;
  desired: EngineDesired;
  generation: Generated<number>;
  config_hash: string;
  running_config_hash: string | null;
  running_config: ColumnType<Record<string, string> | null, string | null | undefined, string | null>;
  endpoint_url: string | null;
  error: string | null;
  oauth_client_id: string | null;
  client_secret_sealed: string | null;
  idp_issuer: string;
  lease_token: string | null;
  lease_until: Date | null;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
  state_changed_at: Timestamp;
}

export type EngineRow = Selectable<EnginesTable>;
export interface EngineTables { engines: EnginesTable }
