// svc's own DuckDB for the parser's statements (json_serialize_sql, json_deserialize_sql: sql/parser.ts),
// apart from the workspaces' databases. Both are pure functions of their argument (DuckDB's parser
// reads no catalog, and the workspaces' databases load no extension and change no parser option:
// their configuration is locked), so where they run does not change the tree the rules read; the
// statement that runs is still parsed again, prepared and checked on the workspace's database.
// Why apart: a workspace's database runs with engines.embedded_threads, and each statement on it
// wakes DuckDB's worker threads; on a database of one thread the parse of a small query took
// 0.12 ms instead of 0.19 ms (issue 27 point 10, docs/engines.md "Overhead").
// It never runs SQL a person sent, only passes it to those functions; it is sandboxed all the same.
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { Logger } from 'pino';
import { loadDuckDB, NO_EXTENSIONS, scalarOn } from './embedded-db.js';

export class ParserDb {
  private instance: Promise<DuckDBInstance> | undefined;
  private readonly idle: DuckDBConnection[] = [];
  private closed = false;

  /** `maxIdle`: connections kept between calls (the engine's slots: one parse per running query). */
  constructor(private readonly memoryLimit: string, private readonly maxIdle: number, private readonly log: Logger) {}

  /**
   * Runs one of the parser's one-row statements (scalarOn) on a connection of this database;
   * `using` is told the connection while the call runs, so that a timeout or cancel can interrupt it.
   */
  async scalar(sql: string, arg: string, using?: (conn: DuckDBConnection | undefined) => void): Promise<string> {
    if (this.closed) throw new Error('the embedded engine is shutting down');
    const conn = this.idle.pop() ?? await (await this.open()).connect();
    using?.(conn);
    let reusable = false;
    try {
      const value = await scalarOn(conn, sql, arg);
      reusable = true;
      return value;
    } finally {
      using?.(undefined);
      // an interrupted or failed call leaves nothing to trust on its connection
      if (reusable && !this.closed && this.idle.length < this.maxIdle) this.idle.push(conn);
      else this.discard(conn);
    }
  }

  private open(): Promise<DuckDBInstance> {
    this.instance ??= loadDuckDB().then(({ DuckDBInstance }) => DuckDBInstance.create(':memory:', {
      threads: '1',
      memory_limit: this.memoryLimit,
      // nothing spills: no folder of the process is written (the default is ./.tmp)
      temp_directory: '',
      enable_external_access: 'false',
      ...NO_EXTENSIONS,
      lock_configuration: 'true',
    })).catch((err: Error) => { this.instance = undefined; throw err; });
    return this.instance;
  }

  private discard(conn: DuckDBConnection): void {
    try { conn.closeSync(); } catch (err) { this.log.warn({ err: (err as Error).message }, 'closing a parser connection failed'); }
  }

  close(): void {
    this.closed = true;
    for (const c of this.idle.splice(0)) this.discard(c);
    const instance = this.instance;
    this.instance = undefined;
    void instance?.then((i) => i.closeSync()).catch((err: Error) => this.log.warn({ err: err.message }, 'closing the parser database failed'));
  }
}
