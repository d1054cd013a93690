// runQuery: the one way SQL runs in this service. The query API records and runs queries through
// it; the data-apps gateway, the Data API and alerts call it directly with their own bounds.
// It picks the engine, clamps the bounds to engine.max_rows and engine.query_timeout_secs, and
// answers rows or throws a QueryFailure (docs/engines.md "Running SQL").
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { chooseProvisioner } from '../engines/choice.js';
import { EmbeddedEngine } from './embedded.js';
import type { Lakehouse } from './lakehouse/lakehouse.js';
import { QueryFailure, type EngineDriver, type EngineResult, type EngineRun, type QueryColumn, type QueryParams, type QueryRole } from './types.js';

export const EMBEDDED = 'embedded';
export const MAX_SQL_BYTES = 256 * 1024;
export const MAX_PARAMS = 100;

export interface RunQueryInput {
  /** Workspace id (uuid). */
  workspace: string;
  /** `embedded` or the name of one of the workspace's engines. */
  engine: string;
  sql: string;
  params?: QueryParams;
  /** Who runs it and with which workspace role. */
  principal: { name: string; role: QueryRole; groups?: string[] };
  /** Default and ceiling: engine.query_timeout_secs. */
  timeoutMs?: number;
  /** Default and ceiling: engine.max_rows. */
  maxRows?: number;
  /** Default and ceiling: engine.max_result_bytes. */
  maxBytes?: number;
  /** Aborting it cancels the query on the engine. */
  signal?: AbortSignal;
}

/** Finds a workspace's named engine (the engines resource); undefined when there is none. */
export type EngineLookup = (workspaceId: string, name: string) => Promise<EngineDriver | undefined>;

/** The engines a replica can run SQL on: the embedded one when offered, and named engines through a lookup. */
export class QueryEngines {
  private embeddedEngine: EmbeddedEngine | undefined;
  private lookup: EngineLookup = async () => undefined;
  /** Why the embedded engine is not offered, or null when it is. */
  readonly embeddedDisabled: string | null;

  constructor(private readonly config: Config, private readonly log: Logger, private readonly env: Record<string, string | undefined> = process.env) {
    this.embeddedDisabled = embeddedDisabled(config, env);
    const c = embeddedConcurrency(config, env);
    if (!this.embeddedDisabled && c.slots < config.engine.concurrency) {
      log.warn({ concurrency: config.engine.concurrency, slots: c.slots, UV_THREADPOOL_SIZE: c.pool },
        `the embedded engine runs ${c.slots} queries at once, not engine.concurrency ${config.engine.concurrency}: libuv's thread pool of ${c.pool} keeps ${POOL_RESERVE} for sign-in, token signing and files; set UV_THREADPOOL_SIZE=${config.engine.concurrency + POOL_RESERVE}`);
    }
  }

  /** Lets the engines resource answer for named engines. */
  setLookup(lookup: EngineLookup): void { this.lookup = lookup; }

  /** Lets the embedded engine read and write the catalog's tables (made on first use). */
  setLakehouse(make: () => Lakehouse): void { this.makeLakehouse = make; }
  private makeLakehouse: (() => Lakehouse) | undefined;
  private lakehouseInstance: Lakehouse | undefined;
  private lakehouse = (): Lakehouse | undefined => (this.lakehouseInstance ??= this.makeLakehouse?.());

  embedded(): EmbeddedEngine {
    if (this.embeddedDisabled) throw new QueryFailure('disabled', this.embeddedDisabled);
    const c = this.config;
    return (this.embeddedEngine ??= new EmbeddedEngine({
      dataDir: c.engines.embedded_data_dir, memoryLimit: c.engines.embedded_memory_limit, threads: c.engines.embedded_threads,
      maxDatabases: c.engines.embedded_max_databases, concurrency: embeddedConcurrency(c, this.env).slots,
    }, this.log, this.lakehouse));
  }

  async driver(workspaceId: string, engine: string): Promise<EngineDriver> {
    if (engine === EMBEDDED) return this.embedded();
    const d = await this.lookup(workspaceId, engine);
    if (!d) throw new QueryFailure('not_found', `engine does not exist: ${engine}`);
    return d;
  }

  async close(): Promise<void> {
    await this.embeddedEngine?.close();
    await this.lakehouseInstance?.close();
  }
}

/** Threads of libuv's pool never given to DuckDB: sign-in (argon2), token signing, files and DNS use them. */
export const POOL_RESERVE = 4;

/**
 * How many embedded queries run at once: engine.concurrency, but never more than libuv's thread
 * pool leaves after POOL_RESERVE. Each running DuckDB call holds a pool thread, so without the
 * bound four long queries held the whole default pool of 4 and every sign-in and token signature
 * waited for them (docs/engines.md "Thread pool").
 */
export function embeddedConcurrency(config: Config, env: Record<string, string | undefined>): { slots: number; pool: number } {
  const n = Number(env.UV_THREADPOOL_SIZE);
  const pool = Number.isInteger(n) && n > 0 ? Math.min(n, 1024) : 4;
  return { slots: Math.max(1, Math.min(config.engine.concurrency, pool - POOL_RESERVE)), pool };
}

/**
 * Why the embedded engine is not offered, or null when it is: `engines.embedded` on offers it,
 * off refuses it, auto offers it when the resolved provisioner is none (a fresh install).
 */
export function embeddedDisabled(config: Config, env: Record<string, string | undefined>, exists?: (path: string) => boolean): string | null {
  const mode = config.engines.embedded;
  if (mode === 'on') return null;
  if (mode === 'off') return 'the embedded engine is disabled (engines.embedded = off)';
  const choice = chooseProvisioner(config, env, exists);
  if (choice.provisioner === 'none') return null;
  return `the embedded engine is disabled: engines.embedded is auto and ${choice.reason}; set engines.embedded = on to offer it anyway`;
}

/** Checks the input's sizes; throws QueryFailure('refused') naming the bound. */
export function checkQueryInput(sql: string, params: QueryParams | undefined): void {
  if (sql.trim() === '') throw new QueryFailure('refused', 'sql must not be empty');
  if (Buffer.byteLength(sql) > MAX_SQL_BYTES) throw new QueryFailure('refused', `sql is longer than ${MAX_SQL_BYTES} bytes`);
  const n = params === undefined ? 0 : Array.isArray(params) ? params.length : Object.keys(params).length;
  if (n > MAX_PARAMS) throw new QueryFailure('refused', `at most ${MAX_PARAMS} parameters`);
}

/** Bounds of a run: the caller's, never above the configured ceilings. */
export function boundsOf(config: Config, input: { timeoutMs?: number; maxRows?: number; maxBytes?: number }): { timeoutMs: number; maxRows: number; maxBytes: number } {
  const maxTimeout = config.engine.query_timeout_secs * 1000;
  return {
    timeoutMs: Math.max(1, Math.min(input.timeoutMs ?? maxTimeout, maxTimeout)),
    maxRows: Math.max(1, Math.min(input.maxRows ?? config.engine.max_rows, config.engine.max_rows)),
    maxBytes: Math.max(1, Math.min(input.maxBytes ?? config.engine.max_result_bytes, config.engine.max_result_bytes)),
  };
}

export async function runQuery(engines: QueryEngines, config: Config, input: RunQueryInput): Promise<EngineResult> {
  checkQueryInput(input.sql, input.params);
  const driver = await engines.driver(input.workspace, input.engine);
  return driver.run(engineRun(config, input));
}

/** The columns a read-only query would answer, as its engine parses it; nothing runs (the Data API's publication check). */
export async function describeQuery(engines: QueryEngines, config: Config, input: RunQueryInput): Promise<QueryColumn[]> {
  checkQueryInput(input.sql, input.params);
  const driver = await engines.driver(input.workspace, input.engine);
  return driver.describe(engineRun(config, { ...input, principal: { ...input.principal, role: 'ws_viewer' } }));
}

const engineRun = (config: Config, input: RunQueryInput): EngineRun => ({
  workspaceId: input.workspace, sql: input.sql, params: input.params ?? [], role: input.principal.role,
  user: input.principal.name, groups: input.principal.groups ?? [], signal: input.signal, ...boundsOf(config, input),
});
