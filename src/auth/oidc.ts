// The OpenID Connect relying party: discovery (cached per process, discovered again after a
// failure), the authorization request (code flow, PKCE S256, state, nonce), the code exchange with
// ID token validation, and back-channel logout tokens (OpenID Connect Back-Channel Logout 1.0).
// No fastify here: the routes translate SignInError and LogoutTokenError into pages and bodies.
import * as client from 'openid-client';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Logger } from 'pino';

export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** Asymmetric algorithms only: a provider's key set never verifies an HMAC or `none` token. */
const LOGOUT_TOKEN_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const CLOCK_TOLERANCE_SECS = 60;

export interface OidcSettings {
  issuerUrl: string;
  clientId: string;
  clientSecret: string;
  redirectUrl: string;
  scopes: string[];
  /** Seconds for each request to the provider. */
  timeoutSecs?: number;
}

/**
 * Why a sign-in failed, in a sentence fit for the person signing in (no tokens, codes or
 * secrets), with the HTTP status of the failure page. `detail` is for the log only.
 */
export class SignInError extends Error {
  constructor(
    readonly reason: 'unreachable' | 'misconfigured' | 'provider_error' | 'rejected_code' | 'invalid_id_token' | 'invalid_response',
    readonly status: number,
    readonly userMessage: string,
    readonly detail?: string,
  ) {
    super(userMessage);
    this.name = 'SignInError';
  }
}

/** A logout token that must be answered 400; `reason` names the failed check, never the token. */
export class LogoutTokenError extends Error {
  constructor(readonly reason: string) {
    super(`invalid logout token: ${reason}`);
    this.name = 'LogoutTokenError';
  }
}

export interface AuthorizationRequest {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface IdTokenClaims {
  iss: string;
  sub: string;
  [claim: string]: unknown;
}

export interface LogoutSubject { sub?: string; sid?: string }

interface Discovered {
  config: client.Configuration;
  jwks: ReturnType<typeof createRemoteJWKSet>;
}

export class OidcClient {
  private discovered: Promise<Discovered> | undefined;

  constructor(private readonly settings: OidcSettings, private readonly log?: Logger) {}

  private get insecure(): boolean {
    return new URL(this.settings.issuerUrl).protocol === 'http:';
  }

  /** The discovered configuration, discovered once per process; a failure is not cached. */
  private discover(): Promise<Discovered> {
    if (!this.discovered) {
      const p = this.performDiscovery();
      this.discovered = p;
      p.catch(() => { if (this.discovered === p) this.discovered = undefined; });
    }
    return this.discovered;
  }

  /** Forgets the discovered configuration, so the next request discovers again. */
  forget(): void {
    this.discovered = undefined;
  }

  private async performDiscovery(): Promise<Discovered> {
    const s = this.settings;
    let issuer: URL;
    try {
      issuer = new URL(s.issuerUrl);
    } catch {
      throw new SignInError('misconfigured', 500, 'Single sign-on is misconfigured on this service. Tell your administrator.', 'oidc.issuer_url is not a URL');
    }
    const timeout = s.timeoutSecs ?? 10;
    const execute = this.insecure ? [client.allowInsecureRequests] : [];
    let found: client.Configuration;
    try {
      found = await client.discovery(issuer, s.clientId, undefined, undefined, { execute, timeout });
    } catch (err) {
      throw classify(err, 'discovery');
    }
    const meta = found.serverMetadata();
    // The ID token's `iss` must equal oidc.issuer_url exactly; a provider that publishes a
    // different spelling (a trailing slash) can never sign anyone in, so say so at once.
    if (meta.issuer !== s.issuerUrl) {
      throw new SignInError('misconfigured', 502,
        'Single sign-on is misconfigured: the identity provider\'s issuer does not match this service\'s configuration. Tell your administrator.',
        `provider issuer ${JSON.stringify(meta.issuer)} is not exactly oidc.issuer_url ${JSON.stringify(s.issuerUrl)}`);
    }
    if (!meta.jwks_uri) {
      throw new SignInError('misconfigured', 502, 'The identity provider publishes no signing keys (jwks_uri). Tell your administrator.', 'discovery has no jwks_uri');
    }
    const config = new client.Configuration(meta, s.clientId, s.clientSecret ? { client_secret: s.clientSecret } : undefined, clientAuth(meta, s.clientSecret));
    config.timeout = timeout;
    if (this.insecure) client.allowInsecureRequests(config);
    const jwks = createRemoteJWKSet(new URL(meta.jwks_uri), { timeoutDuration: timeout * 1000 });
    this.log?.info({ issuer: meta.issuer }, 'discovered the OpenID provider');
    return { config, jwks };
  }

  /** Step 1 of the sign-in: the provider's authorization URL and what the callback must check. */
  async authorizationRequest(): Promise<AuthorizationRequest> {
    const { config } = await this.discover();
    const codeVerifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUrl,
      scope: this.settings.scopes.join(' '),
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, state, nonce, codeVerifier };
  }

  /**
   * Step 2: the authorization response (`currentUrl` is oidc.redirect_url with the query the
   * provider sent) is checked, the code exchanged, and the ID token validated (signature, `iss`
   * equal to oidc.issuer_url, `aud`, `exp`, `iat`, nonce). Returns the ID token's claims.
   */
  async exchange(currentUrl: URL, expected: { state: string; nonce: string; codeVerifier: string }): Promise<IdTokenClaims> {
    const { config } = await this.discover();
    let claims: client.IDToken | undefined;
    try {
      const tokens = await client.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: expected.codeVerifier,
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (err) {
      const e = classify(err, 'exchange');
      if (e.reason === 'unreachable') this.forget();
      throw e;
    }
    if (!claims) throw new SignInError('invalid_id_token', 400, 'The identity provider sent no ID token. Tell your administrator.', 'no id_token in the token response');
    if (claims.iss !== this.settings.issuerUrl) {
      throw new SignInError('invalid_id_token', 400, 'The identity provider\'s ID token has the wrong issuer. Tell your administrator.', `iss ${JSON.stringify(claims.iss)} is not oidc.issuer_url`);
    }
    if (typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 255) {
      throw new SignInError('invalid_id_token', 400, 'The identity provider\'s ID token has no usable subject (sub).', 'bad sub');
    }
    return claims as IdTokenClaims;
  }

  /**
   * Verifies a back-channel logout token: signature against the provider's key set, `iss` equal
   * to oidc.issuer_url, `aud` containing the client id, `exp`, `iat`, `jti`, the back-channel
   * logout event, no `nonce`, and a `sub` or `sid`.
   */
  async verifyLogoutToken(token: string): Promise<LogoutSubject> {
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token) || token.length > 16_384) {
      throw new LogoutTokenError('not a signed JWT');
    }
    const { jwks } = await this.discover();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer: this.settings.issuerUrl,
        audience: this.settings.clientId,
        algorithms: LOGOUT_TOKEN_ALGS,
        requiredClaims: ['iat', 'exp', 'jti'],
        clockTolerance: CLOCK_TOLERANCE_SECS,
      }));
    } catch (err) {
      throw logoutTokenProblem(err);
    }
    const events = payload.events;
    if (events === undefined) throw new LogoutTokenError('missing "events" claim');
    if (typeof events !== 'object' || events === null || Array.isArray(events)) throw new LogoutTokenError('"events" claim is not an object');
    const event = (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT];
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw new LogoutTokenError(`"events" claim lacks ${BACKCHANNEL_LOGOUT_EVENT}`);
    }
    if ('nonce' in payload) throw new LogoutTokenError('"nonce" claim is not allowed');
    const sub = payload.sub;
    const sid = payload.sid;
    if (sub !== undefined && (typeof sub !== 'string' || sub.length === 0)) throw new LogoutTokenError('"sub" claim is not a string');
    if (sid !== undefined && (typeof sid !== 'string' || sid.length === 0)) throw new LogoutTokenError('"sid" claim is not a string');
    if (sub === undefined && sid === undefined) throw new LogoutTokenError('neither "sub" nor "sid" claim');
    return { sub: sub as string | undefined, sid: sid as string | undefined };
  }
}

/**
 * Client authentication at the token endpoint: none without a secret (a public client relying on
 * PKCE); otherwise client_secret_basic, the method every provider must support (RFC 6749 2.3.1),
 * unless the provider lists only client_secret_post.
 */
function clientAuth(meta: client.ServerMetadata, secret: string): client.ClientAuth {
  if (!secret) return client.None();
  const methods = meta.token_endpoint_auth_methods_supported;
  if (methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')) return client.ClientSecretPost(secret);
  return client.ClientSecretBasic(secret);
}

const UNREACHABLE_CODES = new Set(['OAUTH_TIMEOUT', 'ECONNREFUSED', 'ENOTFOUND', 'ECONNRESET', 'ETIMEDOUT']);

/** Turns what openid-client throws into a SignInError with a sentence for the person. */
function classify(err: unknown, stage: 'discovery' | 'exchange'): SignInError {
  if (err instanceof SignInError) return err;
  if (err instanceof client.AuthorizationResponseError) {
    return new SignInError('provider_error', 400, `The identity provider refused the sign-in: ${describeOAuthError(err.error, err.error_description)}`, `authorization error ${err.error}`);
  }
  if (err instanceof client.ResponseBodyError) {
    return new SignInError('rejected_code', 400, `The identity provider did not accept the sign-in: ${describeOAuthError(err.error, err.error_description)}`, `token endpoint ${err.status} ${err.error}`);
  }
  if (err instanceof client.WWWAuthenticateChallengeError) {
    return new SignInError('rejected_code', 400, 'The identity provider did not accept this service\'s credentials. Tell your administrator.', `token endpoint challenge ${err.status}`);
  }
  const code = (err as { code?: string })?.code;
  if (err instanceof TypeError || (code && UNREACHABLE_CODES.has(code)) || (err instanceof Error && err.name === 'TimeoutError')) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return new SignInError('unreachable', 502, 'The identity provider could not be reached. Try again in a moment.', `${stage}: ${(err as Error).message}${cause?.code ? ` (${cause.code})` : ''}`);
  }
  if (stage === 'discovery') {
    return new SignInError('unreachable', 502, 'The identity provider\'s discovery document could not be read. Tell your administrator.', `discovery: ${code ?? ''} ${(err as Error)?.message ?? String(err)}`);
  }
  if (err instanceof client.ClientError) {
    const inner = (err.cause ?? {}) as { cause?: { claim?: unknown; parameter?: unknown; attribute?: unknown } };
    const claim = typeof inner.cause?.claim === 'string' ? inner.cause.claim : undefined;
    const detail = `${err.code ?? ''} ${err.message}${claim ? ` (${claim})` : ''}`;
    switch (err.code) {
      case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
        return new SignInError('invalid_id_token', 400, `The identity provider's ID token did not pass validation (${safeClaim(claim) ?? 'a claim'} did not match).`, detail);
      case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
        return new SignInError('invalid_id_token', 400, `The identity provider's ID token is expired or not yet valid${claim ? ` (${safeClaim(claim)})` : ''}. Check the clocks, then try again.`, detail);
      case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
      case 'OAUTH_INVALID_RESPONSE':
      case 'OAUTH_INVALID_REQUEST':
        return new SignInError('invalid_response', 400, 'The identity provider\'s response did not pass validation. Start again.', detail);
      default:
        return new SignInError('invalid_response', 400, 'The identity provider\'s response could not be validated. Tell your administrator.', detail);
    }
  }
  return new SignInError('invalid_response', 500, 'Sign-in failed because of an internal error. Try again.', `${stage}: ${(err as Error)?.message ?? String(err)}`);
}

function safeClaim(claim: string | undefined): string | undefined {
  return claim && /^[A-Za-z0-9_.:-]{1,40}$/.test(claim) ? claim : undefined;
}

/** The provider's `error` and `error_description`, bounded (the page escapes them). */
function describeOAuthError(error: string, description?: string): string {
  const e = String(error).slice(0, 100);
  const d = description ? String(description).slice(0, 300) : '';
  return d ? `${e} (${d})` : e;
}

function logoutTokenProblem(err: unknown): Error {
  if (err instanceof joseErrors.JWTExpired) return new LogoutTokenError('expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    const claim = safeClaim(err.claim) ?? 'a claim';
    if (err.reason === 'missing') return new LogoutTokenError(`missing "${claim}" claim`);
    return new LogoutTokenError(`"${claim}" claim check failed`);
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return new LogoutTokenError('signature verification failed');
  if (err instanceof joseErrors.JWKSNoMatchingKey) return new LogoutTokenError('no key of the provider matches the token');
  if (err instanceof joseErrors.JWKSMultipleMatchingKeys) return new LogoutTokenError('signature verification failed');
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return new LogoutTokenError('signing algorithm not allowed');
  if (err instanceof joseErrors.JWKSTimeout) return err;
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return new LogoutTokenError('not a valid signed JWT');
  if (err instanceof joseErrors.JOSENotSupported) return new LogoutTokenError('unsupported token');
  if (err instanceof joseErrors.JOSEError) return new LogoutTokenError('verification failed');
  return err instanceof Error ? err : new Error(String(err));
}
