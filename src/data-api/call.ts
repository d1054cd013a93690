// One call of a Data API endpoint: the version (latest or pinned), the bound parameters, one page
// of rows from runQuery. The query runs with the ws_viewer role (reads only), whatever SQL was
// published, and with the caller's values bound as named parameters.
import type { Services } from '../services.js';
import { badRequest, DomainError } from '../errors.js';
import { runQuery } from '../queries/run.js';
import { QueryFailure } from '../queries/types.js';
import { findVersion, type EndpointVersion } from './endpoints.js';
import { bindParams, normalise, type ParamValue } from './params.js';
import type { Consumer } from './consumer.js';
import type { Page } from './respond.js';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 10_000;

export interface CallInput {
  workspaceId: string;
  endpoint: string;
  consumer: Consumer;
  /** Query-string values (GET) or the JSON body's (POST); limit, offset and version among them. */
  given: Record<string, unknown>;
  signal?: AbortSignal;
}

export interface Prepared {
  workspaceId: string;
  ep: EndpointVersion;
  values: Record<string, ParamValue>;
  limit: number;
  offset: number;
  /** Endpoint version, normalised values and page: with the caller's access, the cache key. */
  key: string;
}

function intOf(name: string, raw: unknown, min: number, max: number, dflt: number): number {
  if (raw === undefined || raw === null) return dflt;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw badRequest(`invalid parameter ${name}: must be an integer from ${min} to ${max}`);
  return n;
}

/** Resolves the version and checks every value; throws 400/404 naming what is wrong. */
export async function prepare(s: Services, input: CallInput): Promise<Prepared> {
  const g = input.given;
  for (const k of ['version', 'limit', 'offset']) if (Array.isArray(g[k])) throw badRequest(`invalid parameter ${k}: given more than once`);
  const version = g.version === undefined ? undefined : intOf('version', g.version, 1, 2_147_483_647, 1);
  const maxRows = s.config.engine.max_rows;
  const limit = intOf('limit', g.limit, 1, Math.min(MAX_PAGE, maxRows), Math.min(DEFAULT_PAGE, maxRows));
  const offset = intOf('offset', g.offset, 0, maxRows, 0);
  const ep = await findVersion(s.db, input.workspaceId, input.endpoint, version);
  const values = bindParams(ep.params, g);
  return { workspaceId: input.workspaceId, ep, values, limit, offset, key: `${ep.id}:${ep.version}:${limit}:${offset}:${normalise(values)}` };
}

/** Runs a prepared call; a failure is a 4xx/503 in the error shape, never the engine's internals beyond its one-line message. */
export async function execute(s: Services, p: Prepared, consumer: Consumer, signal?: AbortSignal): Promise<Page> {
  const maxRows = Math.min(p.offset + p.limit + 1, s.config.engine.max_rows);
  try {
    const r = await runQuery(s.queryEngines, s.config, {
      workspace: p.workspaceId, engine: p.ep.engine, sql: p.ep.sql, params: p.values,
      // the client as policy items and the catalog name it: its client id
      principal: { name: consumer.clientId, role: 'ws_viewer' }, maxRows, signal,
    });
    const end = p.offset + p.limit;
    return {
      endpoint: p.ep.name, version: p.ep.version, columns: r.columns, rows: r.rows.slice(p.offset, end), limit: p.limit, offset: p.offset,
      more: r.rows.length > end, truncated: r.truncated && r.rows.length <= end,
    };
  } catch (err) {
    if (!(err instanceof QueryFailure)) throw err;
    switch (err.kind) {
      // The consumer's values are checked before the query runs, so a query that fails or is
      // refused now is the endpoint's own failure: the operator's log has the engine's message,
      // the consumer a 502 that names neither the SQL nor the engine's internals.
      case 'failed': case 'refused':
        s.log.warn({ workspace: p.workspaceId, endpoint: p.ep.name, version: p.ep.version, kind: err.kind, err: err.message }, 'a Data API endpoint failed on its engine');
        throw new DomainError('bad_gateway', `endpoint ${p.ep.name} failed on its engine; its publishers can see why in the server log and test it in the console`);
      case 'timeout': throw new DomainError('unavailable', `the query did not end in time: ${err.message}`, 1);
      case 'busy': throw new DomainError('unavailable', `the engine is busy: ${err.message}`, 1);
      case 'cancelled': throw new DomainError('unavailable', 'the query was cancelled');
      default: throw new DomainError('unavailable', `the endpoint's engine is not available: ${err.message}`);
    }
  }
}

