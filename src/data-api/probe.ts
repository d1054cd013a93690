// The result columns of a definition, read when it is published: the engine parses and plans the
// statement as written (DuckDB's parse tree and prepared statement, Trino's DESCRIBE OUTPUT), with
// each parameter's default (or a neutral value of its type), and runs nothing. Only one read-only
// query is published: what the engine does not take as one SELECT is refused at publication, not
// at a consumer's first call (text is never wrapped, so nothing in it can close a wrapper); an
// engine that cannot answer now (stopped, busy) leaves the columns unknown.
import type { Services } from '../services.js';
import { badRequest } from '../errors.js';
import { describeQuery } from '../queries/run.js';
import { QueryFailure, type QueryColumn } from '../queries/types.js';
import { checkSpecs, type ParamSpec, type ParamValue } from './params.js';
import type { Definition } from './endpoints.js';

const PROBE_TIMEOUT_MS = 10_000;

function neutral(p: ParamSpec): ParamValue {
  if (p.default !== undefined) return p.default;
  switch (p.type) {
    // 0 when the bounds allow it, else the bound nearest to it.
    case 'integer': case 'number': return Math.min(Math.max(0, p.minimum ?? -Infinity), p.maximum ?? Infinity);
    case 'boolean': return false;
    case 'date': return '2000-01-01';
    case 'timestamp': return '2000-01-01T00:00:00Z';
    case 'string': return p.enum?.[0] ?? '';
  }
}

export async function probeColumns(s: Services, workspaceId: string, def: Definition): Promise<QueryColumn[] | null> {
  const params = checkSpecs(def.params, def.sql);
  const values = Object.fromEntries(params.map((p) => [p.name, neutral(p)]));
  try {
    return await describeQuery(s.queryEngines, s.config, {
      workspace: workspaceId, engine: def.engine, sql: def.sql, params: values, principal: { name: 'data-api publication', role: 'ws_viewer' }, maxRows: 1, timeoutMs: PROBE_TIMEOUT_MS,
    });
  } catch (err) {
    if (err instanceof QueryFailure && (err.kind === 'failed' || err.kind === 'refused')) {
      throw badRequest(`the query does not run as a read-only SELECT: ${err.message}`);
    }
    if (err instanceof QueryFailure) return null;
    throw err;
  }
}
