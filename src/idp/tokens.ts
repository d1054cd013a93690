// Access tokens minted by the machine identity provider: JWTs (RFC 7519) signed with the client's
// algorithm's active key. Claims: iss (the idp issuer), sub (the client, or the person for a
// delegated token), aud, exp, iat, jti, client_id, scope, and for delegated tokens act
// {sub: <client_id>} (RFC 8693 4.1), nested when a delegated token is exchanged again. A client
// bound to a workspace adds `workspace`.
//
// Signing is node:crypto on the compact JWS (RFC 7515 7.1) rather than jose's SignJWT (~160 µs
// through WebCrypto), on libuv's thread pool for both algorithms: an ES256 signature (~30 µs) was
// still the largest single cost of a client-credentials grant on the event loop, and a 2048-bit
// RSA one (~0.3 ms) would stall it. Off the loop, grants rose from 0.25-0.27 to 0.34-0.36 of
// /healthz's throughput (bench/token-endpoint.ts). Verification stays with jose.
import { randomUUID, sign } from 'node:crypto';
import { jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { ACCESS_TOKEN_TTL_SECS, SIGNING_ALGS, type ActiveKey, type SigningAlg, type SigningKeys } from './keys.js';
import type { ActClaim } from './exchange.js';

export interface MintInput {
  sub: string;
  audiences: string[];
  clientId: string;
  scope: string;
  act?: ActClaim;
  workspace?: string | null;
  /** `exp` in seconds since the epoch when earlier than iat + ACCESS_TOKEN_TTL_SECS (a delegated token never outlives its subject). */
  exp?: number;
  /** Person claims carried over from a subject token (email, name, preferred_username). */
  extra?: Record<string, string>;
  /** The client's token_signing_alg (default ES256). */
  alg?: SigningAlg;
}

export interface Minted { token: string; expiresIn: number; jti: string; kid: string }

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** The encoded protected header of each key: the same for every token it signs. */
const headers = new WeakMap<ActiveKey['key'], string>();

/** The compact JWS of `claims`, signed with `k` (on the thread pool). */
export function signJwt(k: ActiveKey, claims: Record<string, unknown>): Promise<string> {
  let header = headers.get(k.key);
  if (header === undefined) {
    // typ "JWT" rather than RFC 9068's "at+jwt": JOSE libraries' default type checks accept it.
    header = b64({ alg: k.alg, kid: k.kid, typ: 'JWT' });
    headers.set(k.key, header);
  }
  const input = `${header}.${b64(claims)}`;
  const data = Buffer.from(input);
  // ES256: JWS wants the raw r||s form (RFC 7518 3.4), not DER.
  const key = k.alg === 'ES256' ? { key: k.key, dsaEncoding: 'ieee-p1363' as const } : k.key;
  return new Promise((resolve, reject) => {
    sign('sha256', data, key, (err, sig) => (err ? reject(err) : resolve(`${input}.${sig.toString('base64url')}`)));
  });
}

export async function mintAccessToken(keys: SigningKeys, clock: Clock, issuer: string, input: MintInput): Promise<Minted> {
  const active = keys.active(input.alg ?? 'ES256');
  const k = 'then' in active ? await active : active;
  const iat = Math.floor(clock.now().getTime() / 1000);
  const exp = Math.min(iat + ACCESS_TOKEN_TTL_SECS, input.exp ?? Infinity);
  const jti = randomUUID();
  const claims: Record<string, unknown> = { ...(input.extra ?? {}), client_id: input.clientId, scope: input.scope };
  if (input.act) claims.act = input.act;
  if (input.workspace) claims.workspace = input.workspace;
  Object.assign(claims, {
    iss: issuer, sub: input.sub, aud: input.audiences.length === 1 ? input.audiences[0] : input.audiences, iat, exp, jti,
  });
  const token = await signJwt(k, claims);
  return { token, expiresIn: exp - iat, jti, kid: k.kid };
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
    algorithms: [...SIGNING_ALGS],
    currentDate: clock.now(),
    requiredClaims: ['exp', 'iat', 'sub'],
  });
  return payload;
}

export class UnknownKeyError extends Error {
  override name = 'UnknownKeyError';
}
