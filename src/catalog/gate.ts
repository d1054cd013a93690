// The gate in front of /catalog/* (SPEC 5.2.2, 5.2.3): an engine presents a bearer JWT minted by
// this service whose `aud` includes oidc.catalog_audience (signature by a published key of this
// service, `iss` equal to the idp issuer, not expired by the service clock); an administrator
// presents the static catalog.auth_token (compared in constant time). Anything else is refused.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Services } from '../services.js';
import { machines } from '../idp/state.js';
import { verifyOwnToken } from '../idp/tokens.js';
import { TtlCache } from '../util/ttl-cache.js';

export type CatalogPrincipal =
  | { kind: 'admin' }
  | {
    kind: 'token'; sub: string; clientId: string | null; actor: string | null; scope: string;
    /** The workspace of the client the token was issued to, when the client is bound to one. */
    workspace: string | null;
    /** The person's email carried by a delegated token. */
    email: string | null;
  };

export class CatalogAuthError extends Error {
  override name = 'CatalogAuthError';
  /** Whether a token was presented (RFC 6750: error="invalid_token" then). */
  constructor(message: string, readonly presented: boolean) { super(message); }
}

/** Constant-time equality of two secrets of any length (compares their SHA-256). */
export function secretEquals(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

export function bearerToken(authorization: string | undefined): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m ? m[1] : null;
}

// Verified tokens, for a short while: an engine sends the same token on every call, and the
// ECDSA verification is most of a table load's CPU. An entry never outlives the token's `exp`
// (checked on the service clock), and lives at most VERIFIED_TTL_MS, so a signing key retired by
// rotation stops being honoured within that time. Bounded in count and bytes.
const VERIFIED_TTL_MS = 30_000;
type Verified = { principal: CatalogPrincipal; expMs: number };
const verifiedCaches = new WeakMap<Services, TtlCache<string, Verified>>();
function verifiedCache(s: Services): TtlCache<string, Verified> {
  let c = verifiedCaches.get(s);
  if (!c) {
    c = new TtlCache<string, Verified>(4096, VERIFIED_TTL_MS, () => s.clock.now().getTime(), { max: 8 * 1024 * 1024, sizeOf: (k) => 2 * k.length + 512 });
    verifiedCaches.set(s, c);
  }
  return c;
}

export async function authenticateCatalog(s: Services, authorization: string | undefined): Promise<CatalogPrincipal> {
  const token = bearerToken(authorization);
  if (!token) throw new CatalogAuthError('a bearer token is required: a JWT of this service for the catalog audience, or the catalog administration token', false);
  const adminToken = s.config.catalog.auth_token;
  if (adminToken && secretEquals(token, adminToken)) return { kind: 'admin' };
  const m = machines(s);
  const audience = s.config.oidc.catalog_audience;
  const cache = verifiedCache(s);
  const hit = cache.get(token);
  if (hit && hit.expMs > s.clock.now().getTime()) return hit.principal;
  try {
    const p = await verifyOwnToken(m.keys, s.clock, m.issuer, token, audience);
    const act = p.act as { sub?: unknown } | undefined;
    const principal: CatalogPrincipal = {
      kind: 'token', sub: String(p.sub),
      clientId: typeof p.client_id === 'string' ? p.client_id : null,
      actor: typeof act?.sub === 'string' ? act.sub : null,
      scope: typeof p.scope === 'string' ? p.scope : '',
      workspace: typeof p.workspace === 'string' ? p.workspace : null,
      email: typeof p.email === 'string' ? p.email : null,
    };
    if (typeof p.exp === 'number') cache.set(token, { principal, expMs: p.exp * 1000 });
    return principal;
  } catch (err) {
    const e = err as { code?: string; claim?: string; message?: string; name?: string };
    const why = e.code === 'ERR_JWT_EXPIRED' ? 'the token has expired'
      : e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'aud' ? `the token's aud does not include ${audience}`
      : e.code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && e.claim === 'iss' ? `the token was not issued by ${m.issuer}`
      : e.name === 'UnknownKeyError' ? 'the token was not signed by a key of this service'
      : e.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' ? 'bad signature'
      : 'not a valid token of this service';
    throw new CatalogAuthError(`invalid token: ${why}`, true);
  }
}
