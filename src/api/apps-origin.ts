// The apps listener (SPEC 4.4 `svc serve`, 5.3.8; docs/apps.md): a second Fastify instance on
// apps.listen serving the apps origin. It shares no cookie and no session layer with the API: it
// knows only its own `__Host-` cookie, minted from a one-time ticket plus the secret the parent
// page hands over by postMessage. Every answer may be framed by apps.service_origin only.
import { createHash } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import type { Services } from '../services.js';
import { AppTickets, TOKEN_SHAPE, type AppBinding } from '../apps/tickets.js';
import { MAX_SQL_BYTES } from '../queries/run.js';
import { gatewayCall } from './apps-gateway.js';
import { mayStillOpen, noLongerAllowed } from '../apps/gateway.js';
import { DependencyUnavailable, DomainError, UNAVAILABLE_RETRY_AFTER_SECS, unreachableDependency } from '../errors.js';
import { appProxy } from './apps-proxy.js';
import { NOT_ORIGIN_FORM, isOriginForm, type PodLauncher } from '../apps/pods.js';

export const APP_COOKIE = '__Host-svc_app';
/** A gateway call carries SQL of up to MAX_SQL_BYTES plus its parameters. */
const MAX_BODY = MAX_SQL_BYTES + 65_536;

/**
 * App tickets and sessions (and the pods they lead to) live in Redis, whose client holds commands
 * for the whole of an outage: with Redis away, whatever needs them is refused at once (503).
 */
export function appTickets(s: Services): AppTickets {
  if (!s.queues.available()) throw new DependencyUnavailable('Redis', 'Redis is not connected: app tickets and sessions cannot be read');
  const a = s.config.apps;
  return new AppTickets(s.redis(), s.clock, { ticketTtlSecs: a.ticket_ttl_secs, idleSecs: a.session_idle_secs, absoluteSecs: a.session_absolute_secs });
}

const fail = (reply: FastifyReply, status: number, error: string, message: string) => reply.status(status).send({ error, message });

/**
 * The ticket page's one script (docs/apps.md "Opening an app"): static, so the page's CSP allows it
 * by its hash and no request data is ever inside a script. It reads the ticket and the parent's
 * origin from data- attributes of its own tag, waits for the secret from the parent, redeems, then
 * opens the app.
 */
export const OPEN_SCRIPT = `(() => {
  const { ticket, parentOrigin } = document.currentScript.dataset;
  addEventListener('message', async (e) => {
    if (e.origin !== parentOrigin || e.source !== parent || !e.data || e.data.type !== 'svc-app-secret') return;
    const r = await fetch('/_svc/redeem', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ticket, secret: e.data.secret }), credentials: 'same-origin' });
    if (r.ok) location.replace('/'); else document.body.textContent = 'This link has expired. Open the app again from the service.';
  });
  parent.postMessage({ type: 'svc-app-ready' }, parentOrigin);
})();`;
const OPEN_SCRIPT_SRC = `'sha256-${createHash('sha256').update(OPEN_SCRIPT).digest('base64')}'`;

const ATTR_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const attr = (v: string) => v.replace(/[&<>"']/g, (c) => ATTR_ESCAPES[c]!);

/** The page at the ticket URL: the static script, given the (already validated) ticket as data. */
function openPage(serviceOrigin: string, ticket: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Opening app</title></head><body>Opening app…<script data-ticket="${attr(ticket)}" data-parent-origin="${attr(serviceOrigin)}">${OPEN_SCRIPT}</script></body></html>`;
}

export interface AppsOriginOptions {
  services: Services;
  /** Replaces the configured pod launcher (tests on an in-test Kubernetes API server). */
  podLauncher?: PodLauncher;
  /** Replaces how long a pod may stay silent on a request (PROXY_IDLE_MS; tests). */
  proxyIdleMs?: number;
  /** Replaces how often an open WebSocket re-checks its app token (WS_RECHECK_MS; tests). */
  wsRecheckMs?: number;
}

export async function buildAppsOrigin({ services, podLauncher, proxyIdleMs, wsRecheckMs }: AppsOriginOptions): Promise<FastifyInstance> {
  const cfg = services.config.apps;
  const app = Fastify({ logger: false, bodyLimit: MAX_BODY, trustProxy: false });
  await app.register(fastifyCookie);
  const tickets = () => appTickets(services);

  // Every request names a path of this origin, never another host (absolute-form, `//host/`,
  // authority-form, `*`): refused before routing, so no route and no pod ever sees one.
  app.addHook('onRequest', async (req, reply) => {
    if (!isOriginForm(req.url)) return fail(reply, 400, 'bad_request', NOT_ORIGIN_FORM);
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    const csp = reply.getHeader('content-security-policy');
    // Only the service may frame the apps origin; a page without its own policy gets the bare one.
    if (!csp) reply.header('content-security-policy', `frame-ancestors ${cfg.service_origin}`);
    reply.header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer').header('cache-control', 'no-store');
    return payload;
  });
  app.setErrorHandler((err: { statusCode?: number }, req, reply) => {
    if (err instanceof DomainError) {
      if (err.retryAfterSecs) reply.header('retry-after', String(err.retryAfterSecs));
      return fail(reply, err.status, err.code, err.message);
    }
    const dependency = unreachableDependency(err);
    if (dependency) {
      services.log.warn({ dependency, err: (err as Error).message, url: req.url }, `${dependency} cannot be reached: answered 503`);
      reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECS));
      return fail(reply, 503, 'unavailable', 'temporarily unavailable; retry shortly');
    }
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) services.log.error({ err, url: req.url }, 'apps origin request failed');
    return fail(reply, status, status === 500 ? 'internal' : 'bad_request', status === 500 ? 'internal error' : 'bad request');
  });
  app.setNotFoundHandler((req, reply) => fail(reply, 404, 'not_found', `no route for ${req.method} ${req.url.split('?')[0].slice(0, 200)}`));

  /** The binding of the request's app cookie, or null (answered 401). */
  const session = async (req: FastifyRequest): Promise<AppBinding | null> => {
    const token = req.cookies[APP_COOKIE];
    return token ? tickets().resolve(token) : null;
  };

  app.get('/_svc/open', async (req, reply) => {
    // A ticket is 43 base64url characters; anything else never reaches the page.
    const t = (req.query as { t?: unknown }).t;
    if (typeof t !== 'string' || !TOKEN_SHAPE.test(t)) return fail(reply, 400, 'bad_request', 'the ticket is missing or malformed: open the app again from the service');
    return reply.type('text/html; charset=utf-8')
      .header('content-security-policy', `default-src 'none'; script-src ${OPEN_SCRIPT_SRC}; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors ${cfg.service_origin}`)
      .send(openPage(cfg.service_origin, t));
  });

  app.post('/_svc/redeem', async (req, reply) => {
    // A cross-site form cannot redeem: the browser's Origin header must be the apps origin itself.
    if (req.headers.origin !== cfg.origin) return fail(reply, 403, 'forbidden', 'redeem only from the apps origin');
    const body = req.body as { ticket?: unknown; secret?: unknown } | undefined;
    if (typeof body?.ticket !== 'string' || typeof body.secret !== 'string') return fail(reply, 400, 'bad_request', 'ticket and secret are required');
    const r = await tickets().redeem(body.ticket, body.secret);
    if ('refused' in r) {
      services.log.info({ reason: r.refused }, 'app ticket refused');
      return fail(reply, 401, 'unauthorized', 'the ticket is not valid: open the app again from the service');
    }
    // Rights changed since the ticket was issued (seconds ago at most): the token is never handed over.
    if (!(await mayStillOpen(services.access, r.binding))) throw noLongerAllowed(r.binding);
    services.log.info({ user: r.binding.userId, app: r.binding.appId, version: r.binding.version, mode: r.binding.mode }, 'app ticket redeemed');
    reply.setCookie(APP_COOKIE, r.token, { path: '/', secure: true, httpOnly: true, sameSite: 'strict', maxAge: cfg.cookie_ttl_secs });
    return reply.status(204).send();
  });

  app.get('/_svc/session', async (req, reply) => {
    const b = await session(req);
    if (!b) return fail(reply, 401, 'unauthorized', 'no app session: open the app again from the service');
    return { workspace: b.workspace, app: b.appId, version: b.version, mode: b.mode };
  });

  app.post('/_svc/query', async (req) => {
    if (req.headers.origin !== cfg.origin) throw new DomainError('forbidden', 'queries only from the apps origin');
    return gatewayCall(services, tickets(), req.cookies[APP_COOKIE], req.body);
  });

  // Everything else is the app itself, served by the session's pod (in its own context: bodies
  // are streamed to the pod, not parsed).
  await app.register(appProxy, { services, tickets, cookie: APP_COOKIE, launcher: podLauncher, idleMs: proxyIdleMs, wsRecheckMs });

  return app;
}
