// Who calls the Data API: a client of the service's machine identity provider, bound to the
// workspace, presenting a bearer JWT whose `aud` includes DATA_API_AUDIENCE and whose `scope`
// names the endpoints it may call (`data-api:<endpoint>`, or `data-api:*` for all of the
// workspace's). Verified tokens are remembered (by SHA-256, until they expire) so a consumer
// calling often pays the signature check once.
import { createHash } from 'node:crypto';
import type { Services } from '../services.js';
import type { Config } from '../config/index.js';
import { idpIssuer } from '../config/index.js';
import { machines } from '../idp/state.js';
import { verifyOwnToken } from '../idp/tokens.js';
import { bearerToken } from '../catalog/gate.js';
import { DomainError, forbidden } from '../errors.js';
import { TtlCache } from '../util/ttl-cache.js';

export const DATA_API_AUDIENCE = 'svc-data-api';
export const SCOPE_PREFIX = 'data-api:';
export const ALL_ENDPOINTS = `${SCOPE_PREFIX}*`;

export interface Consumer {
  clientId: string;
  workspace: string;
  /** Endpoint names the token may call; `*` for all. */
  endpoints: Set<string>;
  /** The token's grant in one string (sorted endpoints): part of every response-cache key. */
  access: string;
  /** Seconds since the epoch. */
  exp: number;
}

/** The Data API's base URL: data_api.public_url, else the idp issuer, else catalog.public_url. */
export function dataApiPublicUrl(cfg: Config): string {
  const own = cfg.data_api.public_url;
  return own !== undefined && own !== '' ? own.replace(/\/+$/, '') : idpIssuer(cfg);
}

export const tokenEndpoint = (cfg: Config) => `${dataApiPublicUrl(cfg)}/oauth/token`;

export function mayCall(c: Consumer, endpoint: string): boolean {
  return c.endpoints.has('*') || c.endpoints.has(endpoint);
}

export class UnauthorizedConsumer extends DomainError {
  constructor(message: string, readonly presented: boolean) { super('unauthorized', message); }
}

const VERIFIED_MAX = 10_000;
const verifiedCaches = new WeakMap<Services, TtlCache<string, Consumer>>();

function consumerOf(p: Record<string, unknown>): Consumer {
  const scopes = typeof p.scope === 'string' ? p.scope.split(' ') : [];
  const endpoints = new Set(scopes.filter((s) => s.startsWith(SCOPE_PREFIX)).map((s) => s.slice(SCOPE_PREFIX.length)));
  return {
    clientId: typeof p.client_id === 'string' ? p.client_id : String(p.sub),
    workspace: typeof p.workspace === 'string' ? p.workspace : '',
    endpoints, access: [...endpoints].sort().join(' '), exp: Number(p.exp),
  };
}

/** The consumer a request's bearer token names for workspace `ws`; 401 without a valid token, 403 for another workspace. */
export async function authenticateConsumer(s: Services, authorization: string | undefined, ws: string): Promise<Consumer> {
  const token = bearerToken(authorization);
  if (!token) throw new UnauthorizedConsumer(`a bearer token is required: get one from ${tokenEndpoint(s.config)} with the client credentials of a Data API client`, false);
  let cache = verifiedCaches.get(s);
  if (!cache) { cache = new TtlCache(VERIFIED_MAX, 300_000, () => s.clock.now().getTime(), { max: 8 * 1024 * 1024, sizeOf: (k, c) => 200 + k.length + c.access.length * 2 + c.clientId.length * 2 }); verifiedCaches.set(s, cache); }
  const key = createHash('sha256').update(token).digest('base64url');
  let c = cache.get(key);
  if (c && c.exp * 1000 <= s.clock.now().getTime()) { cache.delete(key); c = undefined; }
  if (!c) {
    const m = machines(s);
    try {
      c = consumerOf(await verifyOwnToken(m.keys, s.clock, m.issuer, token, DATA_API_AUDIENCE) as Record<string, unknown>);
    } catch (err) {
      const e = err as { code?: string; claim?: string; name?: string };
      const why = e.code === 'ERR_JWT_EXPIRED' ? 'the token has expired'
        : e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'aud' ? `the token's aud does not include ${DATA_API_AUDIENCE}`
        : e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'iss' ? `the token was not issued by ${m.issuer}`
        : e.name === 'UnknownKeyError' ? 'the token was not signed by a key of this service'
        : 'not a valid token of this service';
      throw new UnauthorizedConsumer(`invalid token: ${why}`, true);
    }
    cache.set(key, c);
  }
  if (c.workspace !== ws) throw forbidden(`this token is not for workspace ${ws}: its client belongs to ${c.workspace || 'no workspace'}`);
  return c;
}
