// The trino driver: a query on a Trino coordinator through the `trino-client` package (the Trino
// client protocol: POST /v1/statement, then follow `nextUri` page by page; cancel by DELETE on
// the current `nextUri`). The person the query runs for is X-Trino-User, so the coordinator's
// access control (the policy service) decides as for them. A fresh client per query: the
// package keeps session and prepared-statement headers on its client, which must never carry
// from one person's query to another's.
import { Trino, type QueryResult } from 'trino-client';
import type { Logger } from 'pino';
import type { EngineDriver, EngineResult, EngineRun, QueryColumn } from './types.js';
import { valueBytes } from './bytes.js';
import { QueryFailure } from './types.js';
import { namedToPositional } from './trino-params.js';

export interface TrinoOptions {
  /** Coordinator URL (http:// or https://). */
  server: string;
  catalog?: string;
  schema?: string;
  /** X-Trino-Source of every query. */
  source?: string;
  /** Skip TLS verification (SVC_ENGINE_TLS_INSECURE; development only). */
  tlsInsecure?: boolean;
  /** Extra headers of every request, e.g. Authorization with the engine's OAuth token. */
  headers?: () => Promise<Record<string, string>>;
  log: Logger;
}

type Requester = { request<T>(cfg: { url: string; method?: string; data?: string; headers?: Record<string, string> }): Promise<T> };

/**
 * The package's protocol client inside a Trino object. Its public iterator follows empty pages
 * on its own, leaving no point to check the timeout or a cancel between them, so pages are
 * followed here with the same client (its headers, TLS and session handling).
 */
function requesterOf(trino: Trino): Requester {
  const client = (trino as unknown as { client?: Requester }).client;
  if (typeof client?.request !== 'function') throw new Error('trino-client changed: Trino.client.request is gone');
  return client;
}

/** A parameter as a Trino literal: strings quoted (quotes doubled), numbers and booleans as is. */
export function trinoLiteral(v: string | number | boolean | null): string {
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new QueryFailure('refused', 'parameters must be finite numbers');
    return Number.isInteger(v) ? String(v) : `DOUBLE '${v}'`;
  }
  return `'${v.replace(/'/g, "''")}'`;
}

export class TrinoDriver implements EngineDriver {
  readonly kind = 'trino';

  constructor(private readonly opts: TrinoOptions) {}

  /**
   * The columns of a query from Trino's own parse and plan, running nothing: `DESCRIBE OUTPUT` of
   * the statement prepared in the X-Trino-Prepared-Statement header (rows: column name, catalog,
   * schema, table, type, type size, aliased).
   */
  async describe(q: EngineRun): Promise<QueryColumn[]> {
    const { sql } = Array.isArray(q.params) ? { sql: q.sql } : namedToPositional(q.sql, q.params);
    const r = await this.run(q, { statement: 'DESCRIBE OUTPUT svc_statement', prepared: `svc_statement=${encodeURIComponent(sql)}` });
    return r.rows.map((row) => ({ name: String(row[0]), type: String(row[4]) }));
  }

  async run(q: EngineRun, as: { statement: string; prepared?: string } = this.statement(q)): Promise<EngineResult> {
    if (q.signal?.aborted) throw new QueryFailure('cancelled', 'query was cancelled');
    const secs = Math.max(1, Math.ceil(q.timeoutMs / 1000));
    const extra = (await this.opts.headers?.()) ?? {};
    const { statement, prepared } = as;
    const raw = requesterOf(Trino.create({
      server: this.opts.server, catalog: this.opts.catalog, schema: this.opts.schema, source: this.opts.source ?? 'svc',
      // the coordinator enforces the timeout too, so a query is stopped even if this process dies
      session: { query_max_run_time: `${secs}s` },
      ssl: this.opts.tlsInsecure ? { rejectUnauthorized: false } : undefined,
      // every request of the query (the POST and each nextUri) names the person it runs for
      extraHeaders: { ...extra, 'X-Trino-User': q.user, ...(prepared ? { 'X-Trino-Prepared-Statement': prepared } : {}) },
    }));
    const deadline = Date.now() + q.timeoutMs;
    let page: QueryResult | undefined;
    const stop = async (why: 'timeout' | 'cancelled' | 'truncated') => {
      const uri = page?.nextUri;
      if (!uri) return;
      try {
        await raw.request({ url: uri, method: 'DELETE' });
      } catch (err) {
        this.opts.log.warn({ query: page?.id, err: (err as Error).message, why }, 'trino did not take the cancel: its query_max_run_time still stops it');
      }
    };
    try {
      page = await raw.request<QueryResult>({ method: 'POST', url: '/v1/statement', data: statement });
      const columns: EngineResult['columns'] = [];
      const rows: unknown[][] = [];
      let truncated = false;
      let truncatedBy: 'bytes' | undefined;
      let bytes = 0;
      for (;;) {
        if (page.error) throw this.failure(page);
        if (columns.length === 0 && page.columns) for (const c of page.columns) columns.push({ name: c.name, type: c.type });
        for (const r of page.data ?? []) {
          if (rows.length === q.maxRows) { truncated = true; break; }
          bytes += valueBytes(r);
          if (bytes > q.maxBytes) { truncated = true; truncatedBy = 'bytes'; break; }
          rows.push(r);
        }
        if (truncated) { await stop('truncated'); break; }
        if (!page.nextUri) break;
        if (q.signal?.aborted) { await stop('cancelled'); throw new QueryFailure('cancelled', 'query was cancelled'); }
        if (Date.now() >= deadline) { await stop('timeout'); throw this.timeout(q); }
        page = await raw.request<QueryResult>({ url: page.nextUri });
      }
      return { columns, rows, truncated, ...(truncatedBy ? { truncatedBy } : {}) };
    } catch (err) {
      if (err instanceof QueryFailure) throw err;
      throw new QueryFailure('failed', describe(err));
    }
  }

  /**
   * Parameters run as EXECUTE of a prepared statement: positional ones as given, named ones
   * (`$name`) turned positional first (Trino has only `?`; src/queries/trino-params.ts).
   */
  private statement(q: EngineRun): { statement: string; prepared?: string } {
    const { sql, values } = Array.isArray(q.params) ? { sql: q.sql, values: q.params } : namedToPositional(q.sql, q.params);
    if (values.length === 0) return { statement: sql };
    return {
      statement: `EXECUTE svc_statement USING ${values.map(trinoLiteral).join(', ')}`,
      prepared: `svc_statement=${encodeURIComponent(sql)}`,
    };
  }

  private failure(page: QueryResult): QueryFailure {
    const e = page.error!;
    if (e.errorName === 'EXCEEDED_TIME_LIMIT') return new QueryFailure('timeout', `query exceeded its timeout on the engine: ${e.message}`);
    if (e.errorName === 'USER_CANCELED' || e.errorName === 'USER_CANCELLED') return new QueryFailure('cancelled', 'query was cancelled');
    if (e.errorName === 'PERMISSION_DENIED') return new QueryFailure('refused', e.message);
    return new QueryFailure('failed', `${e.errorName}: ${e.message}`.replace(/\s*\n\s*/g, ' ').slice(0, 2000));
  }

  private timeout(q: EngineRun): QueryFailure {
    return new QueryFailure('timeout', `query exceeded its timeout of ${Math.ceil(q.timeoutMs / 1000)} s (engine.query_timeout_secs) and was cancelled`);
  }
}

/** An HTTP or network failure in one line, without URLs or headers (they may carry tokens). */
function describe(err: unknown): string {
  const e = err as { response?: { status?: number }; code?: string; message?: string };
  if (e.response?.status) return `the engine answered HTTP ${e.response.status}`;
  if (e.code) return `the engine is unreachable (${e.code})`;
  return 'the engine request failed';
}
