// The data-apps query gateway (SPEC 8 apps.max_rows, apps.timeout_secs): an app runs SQL with the
// rights its viewer has at the moment of the call (re-read on every call, so a revoked grant ends
// access at once), bounded by the apps keys, through the shared runQuery contract.
import type { Config } from '../config/index.js';
import { allows, roleOf, type AccessResolver, type AccessSnapshot } from '../access/access.js';
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
  // The session's own right first (an edit session needs ws_editor now), then the role it acts with.
  const snap = await d.access.forUser(b.userId);
  if (!allowedNow(snap, b)) throw noLongerAllowed(b);
  const role = roleOf(snap, b.workspace)!;
  try {
    return await runQuery(d.engines, d.config, {
      workspace: b.workspaceId, engine: q.engine, sql: q.sql, params: q.params, principal: { name: snap.user.email, role, groups: snap.groups.map((g) => g.name) },
      timeoutMs: d.config.apps.timeout_secs * 1000, maxRows: d.config.apps.max_rows,
    });
  } catch (err) {
    if (!(err instanceof QueryFailure)) throw err;
    const [code, what] = FAILURES[err.kind] ?? ['bad_request', 'query failed'];
    // The engine names its own key; when the apps key was the tighter limit, name that one.
    const apps = d.config.apps.timeout_secs;
    if (err.kind === 'timeout' && apps <= d.config.engine.query_timeout_secs) throw new DomainError(code, `${what}: past ${apps} s (apps.timeout_secs), cancelled`);
    throw new DomainError(code, `${what}: ${err.message}`);
  }
}

/**
 * Whether the person of an app session may still open it now: a member of its workspace for run
 * mode, ws_editor for edit mode. Read on redemption and on every request to the app (the snapshot
 * is cached and dropped on any grant change), so a removed member's open app ends at once, not
 * when the token idles out.
 */
export async function mayStillOpen(access: AccessResolver, b: AppBinding): Promise<boolean> {
  return allowedNow(await access.forUser(b.userId), b);
}

/**
 * The one rule of every request of an app session (the proxy, WebSockets, both gateway doors):
 * ws_editor for an edit session, membership for a run session, judged on the person's access now.
 */
function allowedNow(snap: AccessSnapshot, b: AppBinding): snap is AccessSnapshot & { user: NonNullable<AccessSnapshot['user']> } {
  return snap.user !== null && allows(snap, { workspace: b.workspace, role: b.mode === 'edit' ? 'ws_editor' : 'ws_viewer' });
}

export const noLongerAllowed = (b: AppBinding) =>
  forbidden(b.mode === 'edit' ? `editing this app requires ws_editor in workspace ${b.workspace}` : `no longer a member of workspace ${b.workspace}`);

