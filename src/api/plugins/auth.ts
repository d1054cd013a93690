// The session and CSRF layer of every request, and the one access guard used by every route.
// - A valid session cookie makes `req.principal`.
// - A state-changing request authenticated by that cookie must carry the CSRF header (403 else);
//   routes without a session (back-channel logout, bearer-token routes) are not affected.
// - `guard(...)` decides access through access.allows() and records the decision in the audit log.
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import '@fastify/cookie';
import type { AppContext } from '../context.js';
import { csrfEquals } from '../../auth/sessions.js';
import { secureFlag } from '../../auth/cookies.js';
import { allows, type AccessSnapshot, type Requirement } from '../../access/access.js';
import { DomainError, forbidden, notFound, unauthorized } from '../../errors.js';
import type { Config } from '../../config/index.js';

export interface Principal {
  userId: string;
  sub: string | null;
  via: 'session';
  sessionToken: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    accessSnapshot?: AccessSnapshot;
  }
  interface FastifyContextConfig {
    /** false: exempt from the CSRF check (the route has no session or does its own check). */
    csrf?: boolean;
    /** false: the session cookie is not read at all (liveness must not depend on the database). */
    session?: boolean;
  }
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function installSessionLayer(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (req) => {
    if (req.routeOptions.config?.session === false) return;
    const cfg = ctx.services().config;
    const token = req.cookies?.[cfg.session.cookie_name];
    if (!token) return;
    const s = await ctx.services().sessions.resolve(token);
    if (!s) return;
    req.principal = { userId: s.userId, sub: s.sub, via: 'session', sessionToken: token };
    if (STATE_CHANGING.has(req.method) && req.routeOptions.config?.csrf !== false) {
      const header = req.headers[cfg.csrf.header_name.toLowerCase()];
      if (!csrfEquals(s.csrf, Array.isArray(header) ? header[0] : header)) {
        throw new DomainError('forbidden', `missing or invalid CSRF token: send the ${cfg.csrf.cookie_name} cookie value in the ${cfg.csrf.header_name} header`);
      }
    }
  });
}

/** Requires a signed-in person. */
export function requireUser(req: FastifyRequest): Principal {
  if (!req.principal) throw unauthorized('sign in required');
  return req.principal;
}

/**
 * The access check of every route: `need` derives the requirement from the request. A person
 * with no role at all in the workspace gets 404 (its existence is not disclosed); one with too
 * small a role gets 403.
 */
export function guard(ctx: AppContext, need: (req: FastifyRequest) => Requirement): preHandlerAsyncHookHandler {
  return async (req: FastifyRequest, _reply: FastifyReply) => {
    const p = requireUser(req);
    const services = ctx.services();
    const snap = await services.access.forUser(p.userId);
    req.accessSnapshot = snap;
    const requirement = need(req);
    const ok = allows(snap, requirement);
    services.audit.record({
      action: `${req.method} ${req.routeOptions.url ?? req.url}`,
      actorId: p.userId, actor: snap.user?.email ?? null,
      target: 'workspace' in requirement ? `workspace:${requirement.workspace}` : 'platform',
      workspace: 'workspace' in requirement ? requirement.workspace : null,
      decision: ok ? 'allow' : 'deny',
      details: { requirement },
    });
    if (ok) return;
    if ('workspace' in requirement && !snap.workspaces.has(requirement.workspace)) {
      throw notFound(`workspace does not exist: ${requirement.workspace}`);
    }
    const what = 'platform' in requirement ? 'platform_admin'
      : 'role' in requirement ? `${requirement.role} in workspace ${requirement.workspace}`
      : `${requirement.permission} in workspace ${requirement.workspace}`;
    throw forbidden(`requires ${what}`);
  };
}

/** Cookie attributes of the session and CSRF cookies (Secure also when the name demands it: src/auth/cookies.ts). */
export function cookieOptions(cfg: Config, kind: 'session' | 'csrf') {
  const name = kind === 'session' ? cfg.session.cookie_name : cfg.csrf.cookie_name;
  return {
    path: '/',
    sameSite: 'lax' as const,
    // The CSRF cookie is read by the page's script to echo it in the header; the session cookie never is.
    httpOnly: kind !== 'csrf',
    secure: secureFlag(name, cfg.session.secure),
  };
}

export function setSessionCookies(reply: FastifyReply, cfg: Config, s: { token: string; csrf: string }): void {
  const maxAge = cfg.session.absolute_ttl_hours * 3600;
  reply.setCookie(cfg.session.cookie_name, s.token, { ...cookieOptions(cfg, 'session'), maxAge });
  reply.setCookie(cfg.csrf.cookie_name, s.csrf, { ...cookieOptions(cfg, 'csrf'), maxAge });
}

export function clearSessionCookies(reply: FastifyReply, cfg: Config): void {
  reply.clearCookie(cfg.session.cookie_name, cookieOptions(cfg, 'session'));
  reply.clearCookie(cfg.csrf.cookie_name, cookieOptions(cfg, 'csrf'));
}
