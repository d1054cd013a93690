// Verification of a person's token from the configured OpenID provider (oidc.issuer_url), for
// token exchange: discovery is read from the issuer, the signature is checked against the keys at
// its jwks_uri (jose's remote key set: cached, refetched on an unknown kid), `iss` must equal the
// issuer exactly, `exp` must lie ahead, and `aud` must name this service (one of
// idp.subject_token_audiences, by default oidc.client_id), for ID tokens and access tokens alike:
// a token the provider issued to another of its clients is not for this service to exchange.
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';

const DISCOVERY_TTL_MS = 3_600_000;
const HTTP_TIMEOUT_MS = 5_000;

/** The provider cannot be reached or publishes no usable discovery document. */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

type KeySet = ReturnType<typeof createRemoteJWKSet>;

export class ProviderVerifier {
  private cached: { issuer: string; at: number; jwks: Promise<KeySet> } | null = null;

  constructor(private readonly clock: Clock) {}

  private keySet(issuer: string): Promise<KeySet> {
    const now = this.clock.now().getTime();
    if (this.cached && this.cached.issuer === issuer && now - this.cached.at < DISCOVERY_TTL_MS) return this.cached.jwks;
    const jwks = discover(issuer);
    const entry = { issuer, at: now, jwks };
    this.cached = entry;
    jwks.catch(() => { if (this.cached === entry) this.cached = null; });
    return jwks;
  }

  async verify(token: string, opts: { issuer: string; audiences: string[] }): Promise<JWTPayload> {
    const jwks = await this.keySet(opts.issuer);
    try {
      const { payload } = await jwtVerify(token, jwks, {
        issuer: opts.issuer,
        audience: opts.audiences,
        currentDate: this.clock.now(),
        requiredClaims: ['sub', 'exp'],
      });
      return payload;
    } catch (err) {
      // jose's own verdicts on the token carry an ERR_J... code; anything else (a timeout or a
      // network error while fetching the key set) is the provider being unreachable.
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && code.startsWith('ERR_J') && code !== 'ERR_JWKS_TIMEOUT' && code !== 'ERR_JWKS_INVALID') throw err;
      throw new ProviderUnavailableError(`cannot read the OpenID provider's key set: ${(err as Error).message}`);
    }
  }
}

async function discover(issuer: string): Promise<KeySet> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let doc: { issuer?: unknown; jwks_uri?: unknown };
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS), headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    doc = await res.json() as typeof doc;
  } catch (err) {
    throw new ProviderUnavailableError(`cannot read the OpenID provider's discovery document at ${url}: ${(err as Error).message}`);
  }
  if (doc.issuer !== issuer) throw new ProviderUnavailableError(`the OpenID provider's discovery document names issuer ${JSON.stringify(doc.issuer)}, not ${issuer}`);
  if (typeof doc.jwks_uri !== 'string') throw new ProviderUnavailableError('the OpenID provider\'s discovery document has no jwks_uri');
  return createRemoteJWKSet(new URL(doc.jwks_uri), { timeoutDuration: HTTP_TIMEOUT_MS });
}
