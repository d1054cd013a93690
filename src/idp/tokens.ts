// Access tokens minted by the machine identity provider: JWTs signed with the active key.
// Claims: iss (the idp issuer), sub (the client, or the person for a delegated token), aud,
// exp, iat, jti, client_id, scope, and for delegated tokens act {sub: <client_id>} (RFC 8693 4.1),
// nested when a delegated token is exchanged again. A client bound to a workspace adds `workspace`.
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { ACCESS_TOKEN_TTL_SECS, type SigningKeys } from './keys.js';
import type { ActClaim } from './exchange.js';

export interface MintInput {
  sub: string;
  audiences: string[];
  clientId: string;
  scope: string;
  act?: ActClaim;
  /** `exp` in seconds since the epoch when earlier than iat + ACCESS_TOKEN_TTL_SECS (a delegated token never outlives its subject). */
  exp?: number;
  workspace?: string | null;
  /** Person claims carried over from a subject token (email, name, preferred_username). */
  extra?: Record<string, string>;
}

export interface Minted { token: string; expiresIn: number; jti: string; kid: string }

export async function mintAccessToken(keys: SigningKeys, clock: Clock, issuer: string, input: MintInput): Promise<Minted> {
  const { kid, alg, key } = await keys.active();
  const iat = Math.floor(clock.now().getTime() / 1000);
  const exp = Math.min(iat + ACCESS_TOKEN_TTL_SECS, input.exp ?? Infinity);
  const jti = randomUUID();
  const claims: JWTPayload & Record<string, unknown> = {
    ...(input.extra ?? {}),
    client_id: input.clientId,
    scope: input.scope,
  };
  if (input.act) claims.act = input.act;
  if (input.workspace) claims.workspace = input.workspace;
  const token = await new SignJWT(claims)
    // typ "JWT" rather than RFC 9068's "at+jwt": JOSE libraries' default type checks accept it.
    .setProtectedHeader({ alg, kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(input.sub)
    .setAudience(input.audiences.length === 1 ? input.audiences[0] : input.audiences)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(jti)
    .sign(key);
  return { token, expiresIn: exp - iat, jti, kid };
}

/**
 * Verifies a token this service minted: signature by a published key, `iss` equal to the issuer,
 * `exp` by the service clock, and (when given) an `aud` that includes `audience`.
 */
export async function verifyOwnToken(keys: SigningKeys, clock: Clock, issuer: string, token: string, audience?: string): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, async (header) => {
    const key = await keys.publicKey(header.kid);
    if (!key) throw new UnknownKeyError(`unknown or retired signing key ${header.kid ?? '(no kid)'}`);
    return key;
  }, {
    issuer,
    audience,
    algorithms: ['ES256'],
    currentDate: clock.now(),
    requiredClaims: ['exp', 'iat', 'sub'],
  });
  return payload;
}

export class UnknownKeyError extends Error {
  override name = 'UnknownKeyError';
}
