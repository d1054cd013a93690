// The contract between runQuery and the engines that answer it (docs/engines.md "Running SQL").
import type { QueryColumn } from '../db/query-types.js';

export type { QueryColumn };
export type QueryRole = 'ws_admin' | 'ws_editor' | 'ws_viewer';
/** Positional ($1, ?) or named ($name) parameters: JSON scalars only. */
export type QueryParams = Array<string | number | boolean | null> | Record<string, string | number | boolean | null>;

export interface EngineRun {
  workspaceId: string;
  sql: string;
  params: QueryParams;
  /** The workspace role the query runs with: decides which statements run. */
  role: QueryRole;
  /** Who the query runs for (the engine's user where it has one, e.g. X-Trino-User). */
  user: string;
  maxRows: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface EngineResult {
  columns: QueryColumn[];
  /** At most maxRows rows of JSON values (64-bit integers and decimals as strings). */
  rows: unknown[][];
  /** True when the query produced more than maxRows rows. */
  truncated: boolean;
}

export interface EngineDriver {
  readonly kind: string;
  run(q: EngineRun): Promise<EngineResult>;
}

/**
 * How a query did not succeed. `failed`: the engine's error (the user's SQL); `refused`: a statement
 * the role may not run; `timeout`/`cancelled`: stopped on the engine; `busy`: no capacity now;
 * `disabled`/`not_found`: no such engine here.
 */
export type FailureKind = 'failed' | 'refused' | 'timeout' | 'cancelled' | 'busy' | 'disabled' | 'not_found';

export class QueryFailure extends Error {
  constructor(readonly kind: FailureKind, message: string) {
    super(message);
    this.name = 'QueryFailure';
  }
}
