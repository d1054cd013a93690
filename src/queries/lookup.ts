// Named engines for runQuery: a workspace's running Trino engine (the engines resource, src/engines)
// is queried through the trino driver at its endpoint. An engine that is not running, or of a kind
// no driver answers here (`olap`: running as each person needs StarRocks users and an account
// that provisioning does not make; see docs/engines.md "What runs SQL on an olap engine"), fails
// the query with the reason.
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import { getEngine } from '../engines/engines.js';
import { engineTlsInsecure } from '../engines/tls.js';
import { QueryFailure, type EngineDriver } from './types.js';
import type { EngineLookup } from './run.js';

const refusing = (kind: QueryFailure['kind'], message: string): EngineDriver => ({
  kind: 'unavailable',
  run: () => Promise.reject(new QueryFailure(kind, message)),
  describe: () => Promise.reject(new QueryFailure(kind, message)),
});

export function engineLookup(db: Db, log: Logger, env: Record<string, string | undefined> = process.env): EngineLookup {
  const insecure = engineTlsInsecure(env);
  return async (workspaceId, name) => {
    const e = await getEngine(db, workspaceId, name);
    if (!e) return undefined;
    if (e.kind !== 'trino') return refusing('refused', `engine ${name} is of kind ${e.kind}: queries run on trino engines and the embedded one`);
    if (e.state !== 'running' || !e.endpoint_url) return refusing('busy', `engine ${name} is ${e.state}, not running`);
    // trino-client (and axios under it) loads with the first query on a Trino engine, not at every start
    const { TrinoDriver } = await import('./trino.js');
    return new TrinoDriver({ server: e.endpoint_url, tlsInsecure: insecure, log });
  };
}
