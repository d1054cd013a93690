// The embedded engine (SPEC 8, docs/engines.md): DuckDB in this process, one sandboxed database
// per workspace (embedded-db.ts), so a fresh install runs SQL with no container. What a statement
// does is read from DuckDB's parse trees (sql/), and the role decides whether it runs; one
// statement per query; rows are read up to max_rows + 1 and the result up to max_bytes, to know
// whether it was truncated; the timeout and cancellation interrupt the connection.
import type { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import type { Logger } from 'pino';
import type { EngineDriver, EngineRun, EngineResult, QueryColumn } from './types.js';
import type { ScalarQuery } from './sql/parser.js';
import { QueryFailure, hasParams, withoutSqlContext } from './types.js';
import { Semaphore } from './semaphore.js';
import { Databases, loadDuckDB, type Db } from './embedded-db.js';
import { limitZero } from './sql/build.js';
import { prepareStatement } from './embedded-statement.js';
import { ParserDb } from './embedded-parser.js';
import type { Lakehouse } from './lakehouse/lakehouse.js';
import { ST } from './sql/authorize.js';
import { valueBytes } from './bytes.js';
import { unreachableDependency } from '../errors.js';

export { loadDuckDB };

export interface EmbeddedOptions {
  /** Directory of one `<workspace id>.duckdb` file per workspace; '' keeps them in memory. */
  dataDir: string;
  memoryLimit: string;
  threads: number;
  maxDatabases: number;
  /** Queries running at once on this replica; the others wait their turn (within their timeout). */
  concurrency: number;
}

export class EmbeddedEngine implements EngineDriver {
  readonly kind = 'embedded';
  private readonly databases: Databases;
  private readonly slots: Semaphore;
  private readonly parsers: ParserDb;

  constructor(opts: EmbeddedOptions, private readonly log: Logger, private readonly lakehouse?: () => Lakehouse | undefined) {
    this.slots = new Semaphore(opts.concurrency);
    this.parsers = new ParserDb(opts.memoryLimit, opts.concurrency, log);
    this.databases = new Databases({ ...opts, idleConnections: opts.concurrency, readable: (id) => (lakehouse?.() ? [lakehouse()!.files.dir(id)] : []) }, log);
  }

  /** Workspace databases open now (for tests and metrics). */
  openDatabases(): string[] { return this.databases.open(); }

  async run(q: EngineRun): Promise<EngineResult> {
    return this.session(q, (conn, db, parse, stopped) => this.execute(conn, db, parse, q, stopped));
  }

  /**
   * The columns a query would answer, nothing computed: only a SELECT (as a viewer reads) is
   * described, run as `SELECT * FROM (<its tree>) LIMIT 0` built on the parse tree with the values
   * bound, so the engine types every column and parameter.
   */
  async describe(q: EngineRun): Promise<QueryColumn[]> {
    const asViewer = { ...q, role: 'ws_viewer' as const };
    return this.session(asViewer, async (conn, db, parse) => {
      const { statement, parser, release } = await prepareStatement(conn, db, parse, asViewer, this.lakehouse?.());
      let prepared: DuckDBPreparedStatement | undefined;
      try {
        if (statement.kind !== 'select') throw new QueryFailure('refused', 'only a SELECT can be described');
        prepared = await conn.prepare(await parser.print(limitZero(statement.tree)));
        if (prepared.statementType !== ST.SELECT) throw new QueryFailure('refused', 'only a SELECT can be described');
        if (prepared.parameterCount > 0 || hasParams(q.params)) prepared.bind(q.params as never);
        const result = await prepared.run();
        return result.columnNames().map((name, i) => ({ name, type: result.columnType(i).toString() }));
      } finally {
        prepared?.destroySync();
        release();
      }
    });
  }

  /**
   * A slot, the workspace's database and a connection for `fn`, within the query's timeout and
   * signal; `parse` runs the parser's statements on the parser database (embedded-parser.ts).
   */
  private async session<T>(q: EngineRun, fn: (conn: DuckDBConnection, db: Db, parse: ScalarQuery, stopped: () => boolean) => Promise<T>): Promise<T> {
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
    // the parser database's connection while a parse of this query runs there
    let parsing: DuckDBConnection | undefined;
    let timer: NodeJS.Timeout | undefined;
    let why: 'timeout' | 'cancelled' | undefined;
    let again: NodeJS.Timeout | undefined;
    // DuckDB clears a connection's interrupt flag when a statement begins, so an interrupt landing
    // while the database opens or the statement is prepared would be lost: repeat it until the
    // run settles, and check `why` before executing.
    const interrupt = (reason: 'timeout' | 'cancelled') => {
      why ??= reason;
      conn?.interrupt();
      parsing?.interrupt();
      again ??= setInterval(() => { conn?.interrupt(); parsing?.interrupt(); }, 25);
    };
    const onAbort = () => interrupt('cancelled');
    // Listening from the start: an abort while the database opens is not missed.
    q.signal?.addEventListener('abort', onAbort, { once: true });
    let reusable = true;
    try {
      const left = deadline - Date.now();
      if (left <= 0) throw timeoutError();
      timer = setTimeout(() => interrupt('timeout'), left);
      if (q.signal?.aborted) onAbort();
      db = await this.databases.acquire(q.workspaceId);
      conn = db.idle.pop() ?? await db.instance.connect();
      if (why) throw new Error(why);
      const parse: ScalarQuery = (sql, arg) => this.parsers.scalar(sql, arg, (c) => {
        parsing = c;
        if (why) c?.interrupt();
      });
      return await fn(conn, db, parse, () => why !== undefined);
    } catch (err) {
      // A connection whose statement failed midway is not trusted with the next query.
      reusable = err instanceof QueryFailure && err.kind === 'refused';
      if (why === 'timeout') throw timeoutError();
      if (why === 'cancelled') throw new QueryFailure('cancelled', 'query was cancelled');
      if (err instanceof QueryFailure) throw err;
      // the object store (a catalog table's files) or the database not answering is an outage to
      // retry, not the statement's failure: its address is for the log only
      const dependency = unreachableDependency(err);
      if (dependency) {
        this.log.warn({ dependency, workspace: q.workspaceId, err: (err as Error).message }, `${dependency} cannot be reached: the query is answered busy`);
        throw new QueryFailure('busy', 'temporarily unavailable: a service this query needs cannot be reached; retry shortly');
      }
      throw new QueryFailure('failed', oneLine((err as Error).message));
    } finally {
      clearTimeout(timer);
      clearInterval(again);
      q.signal?.removeEventListener('abort', onAbort);
      if (db) this.databases.release(db, conn, reusable);
      release();
    }
  }

  private async execute(conn: DuckDBConnection, db: Db, parse: ScalarQuery, q: EngineRun, stopped: () => boolean): Promise<EngineResult> {
    const { JsonDuckDBValueConverter } = await loadDuckDB();
    const lh = this.lakehouse?.();
    const { sql, auth, release, write, rewritten, statement } = await prepareStatement(conn, db, parse, q, lh);
    // EXPLAIN ANALYZE prints the statement it ran and the files each scan read: of a rewritten
    // one, the person's text stands in for svc's, and the cache folder's paths (which the rules keep
    // from SQL, as current_query) are blanked where the plan's boxes wrapped them
    const shown = rewritten && statement.kind === 'explain' ? hidePaths(sql, q.sql, lh?.files.dir(q.workspaceId)) : undefined;
    // DuckDB quotes the line of the SQL it ran around an error: of a rewritten statement, that is
    // svc's text (file paths of the workspace's private cache folder, internal names), not the person's.
    const own = (err: unknown) => (rewritten && !(err instanceof QueryFailure) && err instanceof Error && !unreachableDependency(err) ? new QueryFailure('failed', oneLine(withoutSqlContext(err.message))) : err);
    if (write) {
      try { return await write(); } catch (err) { throw own(err); } finally { release(); }
    }
    let prepared: DuckDBPreparedStatement;
    try {
      prepared = await conn.prepare(sql);
    } catch (err) {
      release();
      if (/Cannot prepare multiple statements/.test((err as Error).message)) throw new QueryFailure('refused', 'send one statement per query');
      throw own(err);
    }
    try {
      // What DuckDB will run must be what the rules allowed (defence in depth: they read the same text).
      if (prepared.statementType !== auth.type) throw new QueryFailure('refused', 'the statement was not understood the same way by the engine and was not run');
      if (prepared.parameterCount > 0 || hasParams(q.params)) prepared.bind(q.params as never);
      if (stopped()) throw new Error('stopped before it started');
      const result = await prepared.stream();
      const columns = result.columnNames().map((name, i) => ({ name, type: result.columnType(i).toString() }));
      const rows: unknown[][] = [];
      let bytes = 0;
      for (;;) {
        if (stopped()) throw new Error('stopped between chunks');
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) break;
        // Row by row, so that neither the rows nor the bytes bound is passed by a whole chunk.
        for (let i = 0; i < chunk.rowCount; i++) {
          if (rows.length >= q.maxRows) return { columns, rows, truncated: true };
          const values = chunk.convertRowValues(i, JsonDuckDBValueConverter);
          const row = shown ? values.map(shown) : values;
          bytes += valueBytes(row);
          if (bytes > q.maxBytes) return { columns, rows, truncated: true, truncatedBy: 'bytes' };
          rows.push(row);
        }
      }
      return { columns, rows, truncated: false };
    } catch (err) {
      throw own(err);
    } finally {
      prepared.destroySync();
      release();
    }
  }

  async close(): Promise<void> {
    await this.databases.close();
    this.parsers.close();
  }
}

/** EXPLAIN output of `ran` as the person sent `sent`: each word that is a piece of a file path `ran` names (or of `dir`) is blanked. */
function hidePaths(ran: string, sent: string, dir: string | undefined): (v: unknown) => unknown {
  const paths = [...ran.matchAll(/'([^']*\.parquet)'/g)].map((m) => m[1]!);
  if (dir) paths.push(dir);
  const piece = (w: string) => w.length >= 4 && paths.some((p) => p.includes(w));
  return (v) => (typeof v === 'string' ? v.split(ran).join(sent).replace(/[^\s\u2502,]+/g, (w) => (piece(w) ? '…'.padEnd(w.length) : w)) : v);
}

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').slice(0, 2000);
