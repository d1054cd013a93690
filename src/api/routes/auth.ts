// Local sign-in (the break-glass path: always on, rate limited), sign-out and the public
// sign-in configuration.
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { clearSessionCookies, requireUser, setSessionCookies } from '../plugins/auth.js';
import { boundedKey, clientAddress } from '../../auth/rate-limit.js';
import { findUserByEmail, publicUser } from '../../identity/users.js';
import { verifyPassword, hashPassword } from '../../identity/passwords.js';
import { DomainError, forbidden, unauthorized } from '../../errors.js';
import { loginRequestRefusal } from '../../auth/login-origin.js';
import { errorSchema, userSchema } from '../schemas.js';

// Verified when the email is unknown, so both answers take the same time (no user enumeration).
let dummyHash: Promise<string> | undefined;
const DUMMY = () => (dummyHash ??= hashPassword('svc-timing-equaliser'));

export function authRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get('/api/auth/config', {
      schema: {
        tags: ['auth'], summary: 'How people can sign in (sets no cookie)',
        response: { 200: z.object({ sso: z.boolean(), sso_login_url: z.string().nullable(), local_login: z.literal(true), csrf_header: z.string(), csrf_cookie: z.string(), signed_in: z.boolean() }) },
      },
    }, async (req) => {
      const cfg = ctx.services().config;
      return {
        sso: cfg.oidc.enabled, sso_login_url: cfg.oidc.enabled ? '/api/auth/oidc/login' : null,
        local_login: true as const, csrf_header: cfg.csrf.header_name, csrf_cookie: cfg.csrf.cookie_name,
        // Whether the request carries a live session: the console asks /api/me only then, instead
        // of a 401 in the browser's console on every load before sign-in.
        signed_in: Boolean(req.principal),
      };
    });

    app.post('/api/auth/login', {
      config: { csrf: false },
      // Login CSRF, decided on the headers before the body is read: refused before it counts as an attempt.
      onRequest: async (req) => {
        const refusal = loginRequestRefusal(req.headers);
        if (refusal) throw forbidden(refusal);
      },
      schema: {
        tags: ['auth'], summary: 'Local sign-in with email and password (rate limited; a JSON body, or a form posted from this origin)',
        body: z.object({ email: z.string().min(1).max(320), password: z.string().min(1).max(1024) }),
        response: { 200: z.object({ user: userSchema }), 401: errorSchema, 403: errorSchema, 429: errorSchema },
      },
    }, async (req, reply) => {
      const s = ctx.services();
      const ip = clientAddress(req.headers, req.socket.remoteAddress);
      const email = req.body.email.trim().toLowerCase();
      const decision = s.loginLimiter.hit([`ip:${ip}`, `email:${email}`]);
      if (!decision.allowed) {
        s.log.warn({ ip: boundedKey(ip) }, 'local sign-in rate limited');
        throw new DomainError('too_many_requests', 'too many sign-in attempts; try again later', decision.retryAfterSecs);
      }
      const user = await findUserByEmail(s.db, email);
      const ok = user?.password_hash
        ? await verifyPassword(user.password_hash, req.body.password)
        : (await verifyPassword(await DUMMY(), req.body.password), false);
      if (!ok || !user) throw unauthorized('invalid email or password');
      const session = await s.sessions.create(user.id, user.sub, { ip, userAgent: req.headers['user-agent'] });
      await s.db.updateTable('users').set({ last_login_at: s.clock.now() }).where('id', '=', user.id).execute();
      setSessionCookies(reply, s.config, session);
      return { user: publicUser(user) };
    });

    app.post('/api/auth/logout', {
      schema: { tags: ['auth'], summary: 'Ends the current session', response: { 204: z.null(), 401: errorSchema } },
    }, async (req, reply) => {
      const p = requireUser(req);
      await ctx.services().sessions.revoke(p.sessionToken);
      clearSessionCookies(reply, ctx.services().config);
      return reply.status(204).send(null);
    });
  };
}
