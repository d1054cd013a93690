// The data-apps query gateway (SPEC 8 apps.max_rows, apps.timeout_secs): an app runs SQL with the
// rights its viewer has at the moment of the call (re-read on every call, so a revoked grant ends
// access at once), bounded by the apps keys, through the shared runQuery contract.
import type { Config } from '../config/index.js';
import type { AccessResolver } from '../access/access.js';
import { runQuery, type QueryEngines } from '../queries/run.js';
import { QueryFailure } from '../queries/types.js';
import type { EngineResult, QueryParams } from '../queries/types.js';
import { DomainError, forbidden } from '../errors.js';
import type { AppBinding } from './tickets.js';

export interface GatewayDeps { engines: QueryEngines; config: Config; access: AccessResolver }

const FAILURES: Record<string, [ConstructorParameters<typeof DomainError>[0], string]> = {
  failed: ['bad_request', 'query failed'], refused: ['bad_request', 'query refused'], timeout: ['unavailable', 'query timed out'],
  cancelled: ['unavailable', 'query cancelled'], busy: ['unavailable', 'engine busy'], disabled: ['disabled', 'engine disabled'], not_found: ['not_found', 'no such engine'],
};

export async function gatewayQuery(d: GatewayDeps, b: AppBinding, q: { engine: string; sql: string; params?: QueryParams }): Promise<EngineResult> {
  const snap = await d.access.forUser(b.userId);
  const role = snap.platformAdmin ? 'ws_admin' : snap.workspaces.get(b.workspace);
  if (!snap.user || !role) throw forbidden(`no longer a member of workspace ${b.workspace}`);
  try {
    return await runQuery(d.engines, d.config, {
      workspace: b.workspaceId, engine: q.engine, sql: q.sql, params: q.params, principal: { name: snap.user.email, role },
      timeoutMs: d.config.apps.timeout_secs * 1000, maxRows: d.config.apps.max_rows,
    });
  } catch (err) {
    if (!(err instanceof QueryFailure)) throw err;
    const [code, what] = FAILURES[err.kind] ?? ['bad_request', 'query failed'];
    throw new DomainError(code, `${what}: ${err.message}`);
  }
}
