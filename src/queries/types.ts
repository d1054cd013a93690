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
  /** The identity-provider groups of who it runs for (policy items may name groups). */
  groups: string[];
  maxRows: number;
  /** Most bytes of rows (as JSON) the result holds: engine.max_result_bytes. */
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface EngineResult {
  columns: QueryColumn[];
  /** At most maxRows rows of JSON values (64-bit integers and decimals as strings). */
  rows: unknown[][];
  /** True when the query produced more than maxRows rows, or more than maxBytes of them. */
  truncated: boolean;
  /** Set when the bytes bound cut the result (the rows bound otherwise). */
  truncatedBy?: 'bytes';
}

export interface EngineDriver {
  readonly kind: string;
  run(q: EngineRun): Promise<EngineResult>;
  /**
   * The columns a read-only query answers, from the engine's own parse and plan, running nothing;
   * a statement that is not one query fails as `refused` or `failed`.
   */
  describe(q: EngineRun): Promise<QueryColumn[]>;
}

/**
 * How a query did not succeed. `failed`: the engine's error (the user's SQL); `refused`: a statement
 * the role may not run; `timeout`/`cancelled`: stopped on the engine; `busy`: no capacity now;
 * `disabled`/`not_found`: no such engine here.
 */
export type FailureKind = 'failed' | 'refused' | 'timeout' | 'cancelled' | 'busy' | 'disabled' | 'not_found';

/** Whether a run carries parameters to bind. */
export const hasParams = (p: QueryParams): boolean => (Array.isArray(p) ? p.length > 0 : Object.keys(p).length > 0);

export class QueryFailure extends Error {
  constructor(readonly kind: FailureKind, message: string) {
    super(message);
    this.name = 'QueryFailure';
  }
}

/** A DuckDB error's message without the `LINE n: <sql>` excerpt and caret it ends with (of SQL svc wrote, not the person's). */
export const withoutSqlContext = (s: string) => s.replace(/\s*\n\s*LINE \d+:[\s\S]*$/, '');
