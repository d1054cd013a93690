// The embedded engine (SPEC 8, docs/engines.md): DuckDB in this process, one database per
// workspace, so a fresh install runs SQL with no container. Each database is sandboxed: no file
// system or network (enable_external_access=false), no extension loading, and its configuration
// locked, so SQL cannot lift its own memory or thread limits. Which statements run depends on the
// role the query runs with; one statement per query; rows are read up to max_rows + 1 to know
// whether the result was truncated; the timeout and cancellation interrupt the connection.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBInstance, DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from 'pino';
import type { EngineDriver, EngineRun, EngineResult } from './types.js';
import { QueryFailure } from './types.js';
import { Semaphore } from './semaphore.js';

type DuckDB = typeof import('@duckdb/node-api');
// DuckDB is a native module: loaded on the first query, never by commands that run none.
let duckdbModule: Promise<DuckDB> | undefined;
export const loadDuckDB = (): Promise<DuckDB> => (duckdbModule ??= import('@duckdb/node-api'));

export interface EmbeddedOptions {
  /** Directory of one `<workspace id>.duckdb` file per workspace; '' keeps them in memory. */
  dataDir: string;
  memoryLimit: string;
  threads: number;
  maxDatabases: number;
  /** Queries running at once on this replica; the others wait their turn (within their timeout). */
  concurrency: number;
}

// DuckDB statement types (duckdb_statement_type): what each role may run.
const ST = { SELECT: 1, INSERT: 2, UPDATE: 3, EXPLAIN: 4, DELETE: 5, CREATE: 7, ALTER: 9, ANALYZE: 12, CREATE_FUNC: 14, DROP: 15, MERGE_INTO: 30 } as const;
const READ = new Set<number>([ST.SELECT, ST.EXPLAIN]);
const WRITE = new Set<number>([...READ, ST.INSERT, ST.UPDATE, ST.DELETE, ST.CREATE, ST.ALTER, ST.ANALYZE, ST.CREATE_FUNC, ST.DROP, ST.MERGE_INTO]);

/** Statement kinds a role may run on the embedded engine: viewers read, editors and admins also change their workspace's database. */
export function allowedStatement(role: EngineRun['role'], type: number): boolean {
  return (role === 'ws_viewer' ? READ : WRITE).has(type);
}

// Idle connections are kept per database (at most engine.concurrency): a connection costs a
// thread-pool hop to open. Statements that would leave state on a connection (SET, SET VARIABLE,
// transactions, PREPARE) are never allowed, so a reused connection carries nothing over.
interface Db { instance: DuckDBInstance; active: number; lastUsed: number; idle: DuckDBConnection[] }

export class EmbeddedEngine implements EngineDriver {
  readonly kind = 'embedded';
  private readonly dbs = new Map<string, Db>();
  private readonly opening = new Map<string, Promise<Db>>();
  private readonly slots: Semaphore;
  private closed = false;

  constructor(private readonly opts: EmbeddedOptions, private readonly log: Logger) {
    this.slots = new Semaphore(opts.concurrency);
  }

  /** Workspace databases open now (for tests and metrics). */
  openDatabases(): string[] { return [...this.dbs.keys()]; }

  async run(q: EngineRun): Promise<EngineResult> {
    const deadline = Date.now() + q.timeoutMs;
    const timeoutError = () => new QueryFailure('timeout', `query exceeded its timeout of ${Math.ceil(q.timeoutMs / 1000)} s (engine.query_timeout_secs) and was cancelled`);
    if (q.signal?.aborted) throw new QueryFailure('cancelled', 'query was cancelled');
    const release = await this.slots.acquire(q.timeoutMs, q.signal).catch((err: Error) => {
      if (q.signal?.aborted) throw new QueryFailure('cancelled', 'query was cancelled');
      if (err.message === 'timeout') throw timeoutError();
      throw err;
    });
    let db: Db | undefined;
    let conn: DuckDBConnection | undefined;
    let timer: NodeJS.Timeout | undefined;
    let why: 'timeout' | 'cancelled' | undefined;
    let again: NodeJS.Timeout | undefined;
    // DuckDB clears a connection's interrupt flag when a statement begins, so an interrupt landing
    // while the database opens or the statement is prepared would be lost: repeat it until the
    // run settles, and check `why` before executing.
    const interrupt = (reason: 'timeout' | 'cancelled') => {
      why ??= reason;
      conn?.interrupt();
      again ??= setInterval(() => conn?.interrupt(), 25);
    };
    const onAbort = () => interrupt('cancelled');
    // Listening from the start: an abort while the database opens is not missed.
    q.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const left = deadline - Date.now();
      if (left <= 0) throw timeoutError();
      timer = setTimeout(() => interrupt('timeout'), left);
      if (q.signal?.aborted) onAbort();
      db = await this.database(q.workspaceId);
      conn = db.idle.pop() ?? await db.instance.connect();
      if (why) throw new Error(why);
      return await this.execute(conn, q, () => why !== undefined);
    } catch (err) {
      if (why === 'timeout') throw timeoutError();
      if (why === 'cancelled') throw new QueryFailure('cancelled', 'query was cancelled');
      if (err instanceof QueryFailure) throw err;
      throw new QueryFailure('failed', oneLine((err as Error).message));
    } finally {
      clearTimeout(timer);
      clearInterval(again);
      q.signal?.removeEventListener('abort', onAbort);
      if (db) {
        db.active--;
        db.lastUsed = Date.now();
        if (conn && this.dbs.get(q.workspaceId) === db && db.idle.length < this.opts.concurrency) db.idle.push(conn);
        else this.discard(conn);
      }
      release();
    }
  }

  private async execute(conn: DuckDBConnection, q: EngineRun, stopped: () => boolean): Promise<EngineResult> {
    const { JsonDuckDBValueConverter } = await loadDuckDB();
    // prepare() takes exactly one statement and runs nothing: the one-statement rule for free
    const prepared = await conn.prepare(q.sql).catch((err: Error) => {
      if (/Cannot prepare multiple statements/.test(err.message)) throw new QueryFailure('refused', 'send one statement per query');
      if (/No statement to prepare/.test(err.message)) throw new QueryFailure('refused', 'the query has no statement');
      throw err;
    });
    try {
      if (!allowedStatement(q.role, prepared.statementType)) {
        throw new QueryFailure('refused', q.role === 'ws_viewer'
          ? 'ws_viewer may only run SELECT and EXPLAIN on the embedded engine'
          : 'this statement is not allowed on the embedded engine (allowed: SELECT, EXPLAIN, INSERT, UPDATE, DELETE, MERGE, CREATE, ALTER, DROP, ANALYZE)');
      }
      if (prepared.parameterCount > 0 || hasParams(q.params)) prepared.bind(q.params as never);
      if (stopped()) throw new Error('stopped before it started');
      const result = await prepared.stream();
      const columns = result.columnNames().map((name, i) => ({ name, type: result.columnType(i).toString() }));
      const rows: unknown[][] = [];
      let truncated = false;
      for (;;) {
        if (stopped()) throw new Error('stopped between chunks');
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        const got = chunk.convertRows(JsonDuckDBValueConverter);
        const room = q.maxRows - rows.length;
        if (got.length > room) {
          for (let i = 0; i < room; i++) rows.push(got[i]!);
          truncated = true;
          break;
        }
        for (const r of got) rows.push(r);
      }
      return { columns, rows, truncated };
    } finally {
      prepared.destroySync();
    }
  }

  private discard(conn: DuckDBConnection | undefined): void {
    try { conn?.closeSync(); } catch (err) { this.log.warn({ err: (err as Error).message }, 'closing an embedded connection failed'); }
  }

  /** The workspace's database, opened on first use; the least recently used idle one is closed beyond max_databases. */
  private async database(workspaceId: string): Promise<Db> {
    if (this.closed) throw new QueryFailure('failed', 'the embedded engine is shutting down');
    const open = this.dbs.get(workspaceId);
    if (open) { open.active++; this.dbs.delete(workspaceId); this.dbs.set(workspaceId, open); return open; }
    let pending = this.opening.get(workspaceId);
    if (!pending) {
      pending = this.openDatabase(workspaceId).finally(() => this.opening.delete(workspaceId));
      this.opening.set(workspaceId, pending);
    }
    const db = await pending;
    db.active++;
    return db;
  }

  private async openDatabase(workspaceId: string): Promise<Db> {
    if (!/^[0-9a-f-]{36}$/.test(workspaceId)) throw new QueryFailure('failed', 'invalid workspace id');
    this.evict();
    if (this.dbs.size >= this.opts.maxDatabases) {
      throw new QueryFailure('busy', `all ${this.opts.maxDatabases} embedded databases are busy (engines.embedded_max_databases); retry shortly`);
    }
    const { DuckDBInstance } = await loadDuckDB();
    let file = ':memory:';
    if (this.opts.dataDir) {
      await mkdir(this.opts.dataDir, { recursive: true });
      file = path.join(this.opts.dataDir, `${workspaceId}.duckdb`);
    }
    // Options apply in order: lock_configuration last, after the limits it protects.
    const instance = await DuckDBInstance.create(file, {
      memory_limit: this.opts.memoryLimit,
      threads: String(this.opts.threads),
      enable_external_access: 'false',
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      allow_community_extensions: 'false',
      lock_configuration: 'true',
    });
    const db: Db = { instance, active: 0, lastUsed: Date.now(), idle: [] };
    this.dbs.set(workspaceId, db);
    this.log.info({ workspace: workspaceId, persistent: file !== ':memory:' }, 'embedded database opened');
    return db;
  }

  /** Closes idle databases, least recently used first, until one more fits. */
  private evict(): void {
    for (const [id, db] of this.dbs) {
      if (this.dbs.size < this.opts.maxDatabases) return;
      if (db.active > 0) continue;
      this.dbs.delete(id);
      this.closeInstance(id, db);
    }
  }

  private closeInstance(id: string, db: Db): void {
    for (const c of db.idle.splice(0)) this.discard(c);
    try { db.instance.closeSync(); } catch (err) { this.log.warn({ workspace: id, err: (err as Error).message }, 'closing an embedded database failed'); }
    this.log.info({ workspace: id }, 'embedded database closed');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const [id, db] of this.dbs) this.closeInstance(id, db);
    this.dbs.clear();
  }
}

const hasParams = (p: EngineRun['params']) => (Array.isArray(p) ? p.length > 0 : Object.keys(p).length > 0);
const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').slice(0, 2000);
