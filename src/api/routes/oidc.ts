// Single sign-on through an OpenID Connect provider (SPEC 4.1, 5.1): the login redirect, the
// callback that signs the person in, and back-channel logout. The routes are always declared (so
// `svc openapi` lists them) and answer 404 while `oidc.enabled` is false.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import type { Config } from '../../config/index.js';
import { setSessionCookies } from '../plugins/auth.js';
import { errorSchema } from '../schemas.js';
import { clientAddress } from '../../auth/rate-limit.js';
import { LogoutTokenError, OidcClient, SignInError } from '../../auth/oidc.js';
import {
  STATE_COOKIE_MAX_AGE_SECS, openState, sameString, sealState, stateCookieKey,
} from '../../auth/state-cookie.js';
import { stateCookie } from '../../auth/cookies.js';
import {
  SsoAccountConflict, SsoClaimsError, profileFromClaims, recordSessionSid, revokeSessionsBySid, syncSsoUser,
} from '../../identity/sso.js';
import { DomainError, badRequest, notFound } from '../../errors.js';

const NOT_ENABLED = 'single sign-on is not enabled';
const START_AGAIN = 'The sign-in request expired or was already used. Start again.';

const htmlPage = z.string().describe('HTML page "Sign-in failed" saying what went wrong');

export function oidcRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    // Built on first use from the configuration, then kept for the life of the process.
    let rp: OidcClient | undefined;
    let key: Buffer | undefined;
    const relyingParty = (cfg: Config) => (rp ??= new OidcClient({
      issuerUrl: cfg.oidc.issuer_url, clientId: cfg.oidc.client_id, clientSecret: cfg.oidc.client_secret,
      redirectUrl: cfg.oidc.redirect_url, scopes: cfg.oidc.scopes,
    }, ctx.services().logging.module('svc::auth')));
    const stateKey = (cfg: Config) => (key ??= stateCookieKey(cfg.security.secret_key));
    const log = () => ctx.services().logging.module('svc::auth');

    app.get('/api/auth/oidc/login', {
      schema: {
        tags: ['auth'],
        summary: 'Starts single sign-on: redirects to the identity provider (authorization code, PKCE S256) and sets the encrypted state cookie',
        querystring: z.object({ return_to: z.string().max(2048).optional().describe('a path on this origin to land on after sign-in; default oidc.post_login_redirect') }),
        response: { 302: z.null().describe('to the provider\'s authorization endpoint'), 404: errorSchema, 500: htmlPage, 502: htmlPage },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const cfg = s.config;
      if (!cfg.oidc.enabled) throw notFound(NOT_ENABLED);
      let request;
      try {
        request = await relyingParty(cfg).authorizationRequest();
      } catch (err) {
        return failure(reply, cfg, asSignInError(err, log()));
      }
      const sealed = sealState(stateKey(cfg), {
        state: request.state, nonce: request.nonce, codeVerifier: request.codeVerifier,
        createdAt: s.clock.now().getTime(),
        returnTo: safeReturnPath(req.query.return_to) ?? cfg.oidc.post_login_redirect,
      });
      reply.setCookie(stateCookie(cfg.session.secure).name, sealed, { ...stateCookieOptions(cfg), maxAge: STATE_COOKIE_MAX_AGE_SECS });
      reply.header('cache-control', 'no-store');
      return reply.redirect(request.url.href, 302);
    });

    app.get('/api/auth/oidc/callback', {
      // The query carries the authorization code: keep the request line out of the info log, and
      // out of every line that names the request (framework errors log `req` with its URL).
      logLevel: 'warn',
      logSerializers: { req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url.split('?', 1)[0] }) },
      // Whatever the provider sends, the person gets the failure page, never a JSON 400.
      attachValidation: true,
      config: { inputGuard: false },
      schema: {
        tags: ['auth'],
        summary: 'Completes single sign-on: checks state, exchanges the code, validates the ID token, syncs the user and groups, sets the session and CSRF cookies, redirects to oidc.post_login_redirect',
        querystring: z.object({
          code: z.string().optional(), state: z.string().optional(), iss: z.string().optional(),
          error: z.string().optional(), error_description: z.string().optional(),
        }).loose(),
        response: { 302: z.null().describe('to oidc.post_login_redirect, with session and CSRF cookies'), 400: htmlPage, 404: errorSchema, 500: htmlPage, 502: htmlPage },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const cfg = s.config;
      if (!cfg.oidc.enabled) throw notFound(NOT_ENABLED);
      // One use only: the state cookie is cleared whatever happens next.
      const cookieName = stateCookie(cfg.session.secure).name;
      reply.clearCookie(cookieName, stateCookieOptions(cfg));
      const opened = openState(stateKey(cfg), req.cookies?.[cookieName], s.clock.now().getTime());
      if (!opened.ok) {
        log().warn({ reason: `state cookie ${opened.reason}` }, 'single sign-on failed');
        return failure(reply, cfg, new SignInError('invalid_response', 400, START_AGAIN));
      }
      const remembered = opened.value;
      const rawQuery = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
      const params = new URLSearchParams(rawQuery);
      const returnedState = params.getAll('state');
      if (returnedState.length !== 1 || !sameString(returnedState[0], remembered.state)) {
        log().warn({ reason: returnedState.length ? 'state mismatch' : 'no state' }, 'single sign-on failed');
        return failure(reply, cfg, new SignInError('invalid_response', 400, 'The sign-in response does not belong to the sign-in this browser started. Start again.'));
      }
      // The current URL is the configured redirect URL with the provider's query, never one made
      // from Host headers.
      const currentUrl = new URL(cfg.oidc.redirect_url);
      currentUrl.search = rawQuery;
      currentUrl.hash = '';
      try {
        const claims = await relyingParty(cfg).exchange(currentUrl, remembered);
        const { profile, ignoredGroups } = profileFromClaims(claims, cfg.oidc.groups_claim);
        const sync = await syncSsoUser(s, profile);
        // A browser that was signed in as someone else ends that session first.
        if (req.principal) await s.sessions.revoke(req.principal.sessionToken);
        const ip = clientAddress(req.headers, req.socket.remoteAddress);
        const session = await s.sessions.create(sync.userId, profile.sub, { ip, userAgent: req.headers['user-agent'] });
        if (typeof claims.sid === 'string' && claims.sid.length > 0 && claims.sid.length <= 255) {
          await recordSessionSid(s.db, session.token, claims.sid);
        }
        log().info({
          user: sync.userId, created: sync.created, updated: sync.updated, groups_added: sync.groupsAdded.length,
          groups_removed: sync.groupsRemoved.length, groups_ignored: ignoredGroups,
        }, 'signed in through single sign-on');
        setSessionCookies(reply, cfg, session);
        reply.header('cache-control', 'no-store');
        reply.header('referrer-policy', 'no-referrer');
        return reply.redirect(landing(cfg, remembered.returnTo), 302);
      } catch (err) {
        return failure(reply, cfg, asSignInError(err, log()));
      }
    });

    app.post('/api/auth/oidc/backchannel-logout', {
      config: { csrf: false },
      attachValidation: true,
      schema: {
        tags: ['auth'],
        summary: 'Back-channel logout (OpenID Connect Back-Channel Logout 1.0): revokes every session of the token\'s sub',
        consumes: ['application/x-www-form-urlencoded'],
        body: z.object({ logout_token: z.string().describe('the logout token, a JWT signed by the provider') }).loose(),
        response: { 200: z.object({}).describe('processed (also when the subject is unknown)'), 400: errorSchema, 404: errorSchema, 503: errorSchema },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const cfg = s.config;
      if (!cfg.oidc.enabled) throw notFound(NOT_ENABLED);
      reply.header('cache-control', 'no-store');
      const token = (req.body as { logout_token?: unknown } | undefined)?.logout_token;
      if (req.validationError || typeof token !== 'string' || token === '') {
        throw badRequest('invalid logout token: send it in the logout_token form field');
      }
      let subject;
      try {
        subject = await relyingParty(cfg).verifyLogoutToken(token);
      } catch (err) {
        if (err instanceof LogoutTokenError) {
          log().warn({ reason: err.reason }, 'back-channel logout refused');
          throw badRequest(err.message);
        }
        log().warn({ reason: err instanceof SignInError ? err.detail : (err as Error)?.message }, 'back-channel logout: cannot read the provider\'s keys');
        throw new DomainError('unavailable', 'cannot verify the logout token now: the identity provider\'s keys could not be read');
      }
      const revoked = subject.sub
        ? await s.sessions.revokeAllForSub(subject.sub)
        : await revokeSessionsBySid(s.db, s.sessions, subject.sid!);
      log().info({ revoked, by: subject.sub ? 'sub' : 'sid' }, 'back-channel logout');
      return {};
    });
  };
}

/** The state cookie: HttpOnly, SameSite=Lax; Secure and `__Host-` (Path=/) with session.secure, else only sent to the sign-in routes. */
function stateCookieOptions(cfg: Config) {
  return { path: stateCookie(cfg.session.secure).path, httpOnly: true, sameSite: 'lax' as const, secure: cfg.session.secure };
}

/**
 * A path on this origin (`/...`, not `//host` or `/\host`), with every non-ASCII character
 * percent-encoded as UTF-8 (a Location header carries bytes, so `/café` becomes `/caf%C3%A9`), or
 * undefined: control characters, whitespace, a backslash, a lone surrogate, over 2048 characters.
 */
export function safeReturnPath(v: string | undefined): string | undefined {
  if (!v || v.length > 2048) return undefined;
  if (!v.startsWith('/') || v.startsWith('//') || /[\\\u0000-\u001f\u007f-\u009f\s]/.test(v)) return undefined;
  const encoded = asciiUrl(v);
  return encoded && encoded.length <= 6144 ? encoded : undefined;
}

/** Non-ASCII characters percent-encoded as UTF-8; undefined for a string that is not well-formed Unicode. */
function asciiUrl(v: string): string | undefined {
  try {
    return v.replace(/[^\x00-\x7f]+/g, (run) => encodeURIComponent(run));
  } catch {
    return undefined; // a lone surrogate
  }
}

/** Where the browser goes after sign-in: the remembered path, checked again, else oidc.post_login_redirect. */
function landing(cfg: Config, remembered: string): string {
  return safeReturnPath(remembered) ?? asciiUrl(cfg.oidc.post_login_redirect) ?? '/';
}

function asSignInError(err: unknown, log: Logger): SignInError {
  if (err instanceof SignInError) return err;
  if (err instanceof SsoClaimsError) return new SignInError('invalid_id_token', 400, err.message, 'unusable claims');
  if (err instanceof SsoAccountConflict) {
    return new SignInError('invalid_response', 400,
      'An account with this email already exists in this service, so this sign-in cannot be linked to it. Ask your administrator.',
      'email belongs to another account');
  }
  log.error({ err }, 'single sign-on failed with an internal error');
  return new SignInError('invalid_response', 500, 'Sign-in failed because of an internal error. Try again in a moment.', 'internal error');
}

function failure(reply: FastifyReply, cfg: Config, e: SignInError): FastifyReply {
  if (e.detail) reply.request.log.warn({ reason: e.reason, detail: e.detail }, 'single sign-on failed');
  reply.clearCookie(stateCookie(cfg.session.secure).name, stateCookieOptions(cfg));
  return reply.status(e.status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    .send(failurePage(e.userMessage));
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function failurePage(message: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in failed</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;line-height:1.5;color:#1f2328}h1{font-size:1.5rem}a{color:#0969da}</style>
</head>
<body>
<main>
<h1>Sign-in failed</h1>
<p>${escapeHtml(message)}</p>
<p><a href="/">Back to the start page</a></p>
</main>
</body>
</html>
`;
}
