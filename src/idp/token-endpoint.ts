// POST /oauth/token of the machine identity provider, without the web framework: RFC 6749 form
// parameters in, an RFC 6749 JSON answer out (section 5.1 success, 5.2 errors).
// Grants: client_credentials (RFC 6749 4.4) and token exchange (RFC 8693) for per-user
// delegation, under the rules of ./exchange.ts. Client authentication: client_secret_basic or
// client_secret_post.
// Rate limit (rate_limit.token_*): every request counts for `ip:<address>` and, when it names a
// client, `client:<client_id>`, except one presenting a client id and secret this replica verified
// within the window; a blocked key stays blocked for everyone until the lockout ends.
import { decodeJwt, type JWTPayload } from 'jose';
import type { Services } from '../services.js';
import { machines, VerifiedSecrets } from './state.js';
import { authenticateClient, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE, hashSecret, SCOPE_TOKEN_RE, type ClientView } from './clients.js';
import { mintAccessToken, verifyOwnToken } from './tokens.js';
import { ProviderUnavailableError } from './provider.js';
import { delegatedGrant, readAct, type Subject } from './exchange.js';
import { OAuthError } from './oauth-error.js';
import { ACCESS_TOKEN_TTL_SECS } from './keys.js';
import { UnsealError } from '../secrets/seal.js';
import { UNAVAILABLE_RETRY_AFTER_SECS, unreachableDependency } from '../errors.js';

export { OAuthError } from './oauth-error.js';

export const TOKEN_TYPE_ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_TYPE_ID = 'urn:ietf:params:oauth:token-type:id_token';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';
const SUBJECT_TOKEN_TYPES = [TOKEN_TYPE_ID, TOKEN_TYPE_ACCESS, TOKEN_TYPE_JWT];
const REQUESTED_TOKEN_TYPES = [TOKEN_TYPE_ACCESS, TOKEN_TYPE_JWT];

/** Claims of a person carried from a subject token into the delegated token. */
const PERSON_CLAIMS = ['email', 'name', 'preferred_username'] as const;

export interface TokenRequest {
  contentType: string | undefined;
  body: unknown;
  /** The raw query string (without '?'); parameters there are refused. */
  query: string;
  authorization: string | undefined;
  address: string;
}

export interface TokenAnswer { status: number; headers: Record<string, string>; body: Record<string, unknown> }

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

export function errorAnswer(e: OAuthError): TokenAnswer {
  const headers: Record<string, string> = { ...NO_STORE };
  // RFC 6749 5.2: 401 invalid_client carries a WWW-Authenticate challenge for the scheme used;
  // Basic is the scheme both methods can fall back to.
  if (e.error === 'invalid_client') headers['www-authenticate'] = 'Basic realm="svc", charset="UTF-8"';
  if (e.retryAfterSecs !== undefined) headers['retry-after'] = String(e.retryAfterSecs);
  return { status: e.status, headers, body: { error: e.error, error_description: e.description } };
}

type Params = Map<string, string[]>;

function readParams(req: TokenRequest): Params {
  const ct = (req.contentType ?? '').split(';')[0].trim().toLowerCase();
  if (ct !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'the token endpoint takes an application/x-www-form-urlencoded body (RFC 6749 4.4.2)');
  }
  if (req.query) throw new OAuthError('invalid_request', 'parameters go in the request body, not in the query string');
  const params: Params = new Map();
  const body = (req.body ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(body)) {
    const values = (Array.isArray(v) ? v : [v]).map(String);
    params.set(k, values);
  }
  return params;
}

/** A parameter that may appear at most once (RFC 6749 3.2); empty counts as absent. */
function single(p: Params, name: string): string | undefined {
  const v = p.get(name);
  if (!v) return undefined;
  if (v.length > 1) throw new OAuthError('invalid_request', `parameter ${name} is given more than once`);
  return v[0] === '' ? undefined : v[0];
}

function required(p: Params, name: string): string {
  const v = single(p, name);
  if (v === undefined) throw new OAuthError('invalid_request', `parameter ${name} is required`);
  return v;
}

/** application/x-www-form-urlencoded decoding of the Basic credentials (RFC 6749 2.3.1). */
function formDecode(s: string): string {
  return decodeURIComponent(s.replace(/\+/g, ' '));
}

interface Credentials { clientId: string; secret: string }

function readCredentials(p: Params, authorization: string | undefined): { creds: Credentials | null; namedClient: string | undefined } {
  const bodyId = single(p, 'client_id');
  const bodySecret = single(p, 'client_secret');
  if (authorization !== undefined) {
    const m = /^Basic\s+([A-Za-z0-9+/=._~-]+)\s*$/i.exec(authorization);
    if (!m) throw new OAuthError('invalid_client', 'unsupported Authorization header: use HTTP Basic with the client id and secret');
    const decoded = Buffer.from(m[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError('invalid_client', 'malformed Basic credentials: expected client_id:client_secret');
    let clientId: string;
    let secret: string;
    try {
      clientId = formDecode(decoded.slice(0, colon));
      secret = formDecode(decoded.slice(colon + 1));
    } catch {
      throw new OAuthError('invalid_client', 'malformed Basic credentials: bad percent-encoding');
    }
    if (bodySecret !== undefined) throw new OAuthError('invalid_request', 'use one client authentication method: client_secret_basic or client_secret_post, not both');
    if (bodyId !== undefined && bodyId !== clientId) throw new OAuthError('invalid_request', 'client_id in the body differs from the one in the Authorization header');
    return { creds: { clientId, secret }, namedClient: clientId };
  }
  if (bodyId !== undefined && bodySecret !== undefined) return { creds: { clientId: bodyId, secret: bodySecret }, namedClient: bodyId };
  return { creds: null, namedClient: bodyId };
}

function rateKeys(address: string, clientId: string | undefined): string[] {
  return clientId === undefined ? [`ip:${address}`] : [`ip:${address}`, `client:${clientId}`];
}

function tooMany(retryAfterSecs: number): OAuthError {
  return new OAuthError('too_many_requests', 'too many token requests; try again later', retryAfterSecs);
}

/** Rate limiting and client authentication; the client, or an OAuthError. */
async function authenticate(s: Services, p: Params, req: TokenRequest, rate: { counted: boolean }): Promise<ClientView> {
  const m = machines(s);
  const { creds, namedClient } = readCredentials(p, req.authorization);
  const keys = rateKeys(req.address, namedClient);
  rate.counted = true;
  if (!creds) {
    const d = s.tokenLimiter.hit(keys);
    if (!d.allowed) throw tooMany(d.retryAfterSecs);
    throw new OAuthError('invalid_client', 'client authentication is required (client_secret_basic or client_secret_post)');
  }
  // One SHA-256 of the presented secret serves both the comparison and the verified-secret memory.
  const presented = hashSecret(creds.secret);
  const pair = VerifiedSecrets.key(creds.clientId, presented);
  const repeat = m.verified.has(pair);
  const d = repeat ? s.tokenLimiter.blocked(keys) : s.tokenLimiter.hit(keys);
  if (!d.allowed) throw tooMany(d.retryAfterSecs);
  const client = await authenticateClient(s.db, creds.clientId, presented, m.clients);
  if (!client) {
    if (repeat) {
      // The secret was rotated or the client deleted since: this attempt counts after all.
      m.verified.delete(pair);
      s.tokenLimiter.hit(keys);
    }
    throw new OAuthError('invalid_client', 'unknown client or wrong client secret');
  }
  m.verified.add(pair);
  return client;
}

/** The scopes the request asks for (each well-formed and allowed for the client), or undefined when it names none. */
function askedScopes(p: Params, client: ClientView): string[] | undefined {
  const raw = single(p, 'scope');
  if (raw === undefined) return undefined;
  const asked = [...new Set(raw.split(' ').filter((x) => x !== ''))];
  for (const sc of asked) if (!SCOPE_TOKEN_RE.test(sc)) throw new OAuthError('invalid_scope', `malformed scope ${JSON.stringify(sc)}`);
  if (client.scopes.length > 0) {
    const denied = asked.filter((sc) => !client.scopes.includes(sc));
    if (denied.length) throw new OAuthError('invalid_scope', `scope not allowed for this client: ${denied.join(' ')}`);
  }
  return asked;
}

/**
 * `audience` (RFC 8693) and `resource` (RFC 8707) values, each of which must be an allowed
 * audience of the client (matched exactly); none: the client's only audience, if it has one.
 */
function grantedAudiences(p: Params, client: ClientView): string[] {
  const asked = [...new Set([...(p.get('audience') ?? []), ...(p.get('resource') ?? [])].filter((a) => a !== ''))];
  if (asked.length === 0) {
    if (client.audiences.length === 1) return client.audiences;
    throw new OAuthError('invalid_request', `parameter audience is required: this client may ask for ${client.audiences.join(', ')}`);
  }
  const denied = asked.filter((a) => !client.audiences.includes(a));
  if (denied.length) throw new OAuthError('invalid_target', `audience not allowed for this client: ${denied.join(', ')}`);
  return asked;
}

function success(body: Record<string, unknown>): TokenAnswer {
  return { status: 200, headers: { ...NO_STORE }, body };
}

async function clientCredentials(s: Services, p: Params, client: ClientView): Promise<TokenAnswer> {
  const scope = (askedScopes(p, client) ?? client.scopes).join(' ');
  const audiences = grantedAudiences(p, client);
  const m = machines(s);
  const t = await mintAccessToken(m.keys, s.clock, m.issuer, { sub: client.client_id, audiences, clientId: client.client_id, scope, workspace: client.workspace, alg: client.token_signing_alg });
  m.issued.info({ grant: 'client_credentials', client_id: client.client_id, aud: audiences, jti: t.jti, kid: t.kid }, 'token issued');
  return success({ access_token: t.token, token_type: 'Bearer', expires_in: t.expiresIn, ...(scope ? { scope } : {}) });
}

/**
 * Verifies the person's token: one this service minted for a person (its rights then bound the
 * new token), or one of the configured OpenID provider that names this service in `aud`.
 */
async function verifySubject(s: Services, token: string): Promise<{ payload: JWTPayload; subject: Subject }> {
  let unverified: JWTPayload;
  try {
    unverified = decodeJwt(token);
  } catch {
    throw new OAuthError('invalid_grant', 'subject_token is not a JWT');
  }
  const m = machines(s);
  const oidc = s.config.oidc;
  try {
    if (unverified.iss === m.issuer) {
      const payload = await verifyOwnToken(m.keys, s.clock, m.issuer, token);
      if (payload.act === undefined) throw new OAuthError('invalid_grant', 'subject_token is a client\'s own token; token exchange acts for a person');
      const act = readAct(payload.act);
      if (!act || typeof payload.client_id !== 'string') throw new OAuthError('invalid_grant', 'subject_token has a malformed act or client_id claim');
      const aud = payload.aud === undefined ? [] : [payload.aud].flat();
      return {
        payload,
        subject: {
          exp: payload.exp!,
          issuedHere: {
            clientId: payload.client_id, audiences: aud, act,
            scopes: typeof payload.scope === 'string' ? payload.scope.split(' ').filter((x) => x !== '') : [],
            workspace: typeof payload.workspace === 'string' ? payload.workspace : null,
          },
        },
      };
    }
    if (oidc.issuer_url && unverified.iss === oidc.issuer_url) {
      const audiences = s.config.idp.subject_token_audiences.length ? s.config.idp.subject_token_audiences : [oidc.client_id];
      const payload = await m.provider.verify(token, { issuer: oidc.issuer_url, audiences });
      return { payload, subject: { exp: payload.exp! } };
    }
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    if (err instanceof ProviderUnavailableError) throw new OAuthError('temporarily_unavailable', err.message);
    if (err instanceof UnsealError) throw err;
    throw new OAuthError('invalid_grant', `subject_token rejected: ${describeJoseError(err)}`);
  }
  throw new OAuthError('invalid_grant', `subject_token issuer ${JSON.stringify(unverified.iss ?? null)} is not trusted: expected ${m.issuer}${oidc.issuer_url ? ` or ${oidc.issuer_url}` : ''}`);
}

function describeJoseError(err: unknown): string {
  const e = err as { code?: string; message?: string; claim?: string };
  switch (e.code) {
    case 'ERR_JWT_EXPIRED': return 'the token has expired';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED': return 'bad signature';
    case 'ERR_JWKS_NO_MATCHING_KEY': return 'no key of the issuer matches the token';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': return `claim ${e.claim ?? ''} check failed: ${e.message ?? ''}`.replace(/\s+/g, ' ');
    default: return e.message ?? 'invalid token';
  }
}

async function tokenExchange(s: Services, p: Params, client: ClientView): Promise<TokenAnswer> {
  const subjectToken = required(p, 'subject_token');
  const subjectType = required(p, 'subject_token_type');
  if (!SUBJECT_TOKEN_TYPES.includes(subjectType)) {
    throw new OAuthError('invalid_request', `unsupported subject_token_type: use ${SUBJECT_TOKEN_TYPES.join(', ')}`);
  }
  const requested = single(p, 'requested_token_type');
  if (requested !== undefined && !REQUESTED_TOKEN_TYPES.includes(requested)) {
    throw new OAuthError('invalid_request', `unsupported requested_token_type: this service issues ${TOKEN_TYPE_ACCESS}`);
  }
  if (single(p, 'actor_token') !== undefined || single(p, 'actor_token_type') !== undefined) {
    throw new OAuthError('invalid_request', 'actor_token is not supported: the authenticated client is the actor');
  }
  const asked = { scopes: askedScopes(p, client), audiences: grantedAudiences(p, client) };
  const { payload, subject } = await verifySubject(s, subjectToken);
  const now = Math.floor(s.clock.now().getTime() / 1000);
  const grant = delegatedGrant(subject, { clientId: client.client_id, scopes: client.scopes, workspace: client.workspace }, asked, now, ACCESS_TOKEN_TTL_SECS);
  const extra: Record<string, string> = {};
  for (const c of PERSON_CLAIMS) if (typeof payload[c] === 'string') extra[c] = payload[c] as string;
  const m = machines(s);
  const scope = grant.scopes.join(' ');
  const t = await mintAccessToken(m.keys, s.clock, m.issuer, {
    sub: payload.sub!, audiences: grant.audiences, clientId: client.client_id, scope, workspace: grant.workspace,
    act: grant.act, exp: grant.exp, extra, alg: client.token_signing_alg,
  });
  m.issued.info({ grant: 'token_exchange', client_id: client.client_id, sub: payload.sub, subject_iss: payload.iss, aud: grant.audiences, jti: t.jti, kid: t.kid }, 'token issued');
  return success({
    access_token: t.token, issued_token_type: TOKEN_TYPE_ACCESS, token_type: 'Bearer', expires_in: t.expiresIn,
    ...(scope ? { scope } : {}),
  });
}

/** The whole endpoint: never throws; every failure is an RFC 6749 error answer. */
export async function handleTokenRequest(s: Services, req: TokenRequest): Promise<TokenAnswer> {
  const rate = { counted: false };
  try {
    const p = readParams(req);
    const grantType = single(p, 'grant_type');
    if (grantType === undefined) throw new OAuthError('invalid_request', 'parameter grant_type is required');
    const client = await authenticate(s, p, req, rate);
    if (grantType !== GRANT_CLIENT_CREDENTIALS && grantType !== GRANT_TOKEN_EXCHANGE) {
      throw new OAuthError('unsupported_grant_type', `unsupported grant_type ${JSON.stringify(grantType)}: use ${GRANT_CLIENT_CREDENTIALS} or ${GRANT_TOKEN_EXCHANGE}`);
    }
    if (!client.grant_types.includes(grantType)) {
      throw new OAuthError('unauthorized_client', `this client may not use grant_type ${grantType}`);
    }
    return grantType === GRANT_CLIENT_CREDENTIALS ? await clientCredentials(s, p, client) : await tokenExchange(s, p, client);
  } catch (err) {
    if (!rate.counted) {
      // A request refused before client authentication (malformed) still counts for its address.
      const d = s.tokenLimiter.hit(rateKeys(req.address, undefined));
      if (!d.allowed) return errorAnswer(tooMany(d.retryAfterSecs));
    }
    if (err instanceof OAuthError) return errorAnswer(err);
    if (err instanceof UnsealError) {
      s.log.error({ err: err.message }, 'token endpoint: cannot unseal the signing key');
      return errorAnswer(new OAuthError('temporarily_unavailable', `${err.message}; run \`svc idp rotate-key\` to create a key under the configured master key`));
    }
    const dependency = unreachableDependency(err);
    if (dependency) {
      s.log.warn({ dependency, err: (err as Error).message }, `token endpoint: ${dependency} cannot be reached: answered 503`);
      return errorAnswer(new OAuthError('temporarily_unavailable', 'temporarily unavailable; retry shortly', UNAVAILABLE_RETRY_AFTER_SECS));
    }
    s.log.error({ err }, 'token endpoint failed');
    return errorAnswer(new OAuthError('server_error', 'internal error'));
  }
}
