// The queue dashboard: bull-board (@bull-board/fastify) at /admin/queues over every queue in
// QUEUES, for platform_admin only.
// - bull-board registers its own page, JSON API (/admin/queues/api/...) and static assets in a
//   fastify instance of its own, built on the first dashboard request (bull-board and bullmq are
//   about 330 modules that every `svc serve` start paid before it listened: issue 27 point 8).
//   Two routes of this encapsulated plugin (/admin/queues and /admin/queues/*) hand each request
//   to it; their onRequest hook checks every one: no session 401, no platform_admin 403 (our error
//   body). Page and API requests are recorded as authorization decisions, by their path; static
//   assets are checked but not recorded.
// - CSRF: bull-board's UI does not send our CSRF header, so its routes are exempted from the
//   global header check (an onRoute hook sets config.csrf = false on each) and this plugin checks
//   state-changing calls (retry, clean, pause, ...) itself: they pass with a valid CSRF header, or
//   when the browser states that the request comes from the same origin (Sec-Fetch-Site:
//   same-origin, or an Origin header whose host equals the Host header); anything else gets 403.
//   Session cookies are SameSite=Lax, so another site cannot send them on such calls anyway.
// - The `audit` queue is shown read-only (bull-board refuses to add, edit, retry or remove its
//   jobs): audit events cannot be forged or altered from the dashboard.
// - Not registered without services (`svc openapi`): the dashboard is not part of the API document.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type HTTPMethods } from 'fastify';
import type { AppContext } from '../context.js';
import type { Services } from '../../services.js';
import { errorBody } from '../errors.js';
import { allows } from '../../access/access.js';
import { csrfMatches } from '../../auth/sessions.js';
import { QUEUES } from '../../queue/queues.js';

export const DASHBOARD_PATH = '/admin/queues';
export const DASHBOARD_CSP = [
  "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self'",
  "connect-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'self'", "form-action 'self'",
].join('; ');
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function servicesOrNull(ctx: AppContext): Services | null {
  try { return ctx.services(); } catch { return null; }
}

/** Whether a state-changing dashboard call is from our own page (see the header). */
export function sameOriginCall(req: FastifyRequest, services: Services): boolean {
  const cfg = services.config;
  const header = req.headers[cfg.csrf.header_name.toLowerCase()];
  if (req.principal && csrfMatches(req.principal.sessionToken, Array.isArray(header) ? header[0] : header)) return true;
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return false;
  try {
    const o = new URL(origin);
    return o.host === new URL(`${o.protocol}//${req.headers.host ?? ''}`).host;
  } catch {
    return false;
  }
}

/** The dashboard page without links to font services on other origins (which the CSP refuses). */
export function withoutForeignFonts(html: string): string {
  return html.replace(/<link\b[^>]*href="https:\/\/fonts\.(googleapis|gstatic)\.com[^"]*"[^>]*>\s*/g, '');
}

/** bull-board over every queue, in a fastify instance of its own that only the dashboard's routes reach. */
async function buildBoard(services: Services): Promise<FastifyInstance> {
  const [{ createBullBoard }, { BullMQAdapter }, { FastifyAdapter }] = await Promise.all([
    import('@bull-board/api'), import('@bull-board/api/bullMQAdapter'), import('@bull-board/fastify'),
  ]);
  const board = Fastify();
  board.setNotFoundHandler((_req, reply) => reply.status(404).send(errorBody(404, 'no such page of the queue dashboard')));
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    // Audit batches are read-only: nobody edits, adds or removes audit events from here.
    queues: services.queues.all().map((q) => new BullMQAdapter(q, { readOnlyMode: Object.values(QUEUES).some((d) => d.name === q.name && d.readOnly === true) })),
    serverAdapter,
    // A way back to the console from the dashboard's header.
    options: { uiConfig: { boardTitle: 'svc queues', miscLinks: [{ text: 'Back to the svc console', url: '/' }] } },
  });
  await board.register(serverAdapter.registerPlugin() as never, { prefix: DASHBOARD_PATH });
  await board.ready();
  return board;
}

/** Request headers bull-board's routes read (the body's type, conditional and range requests of its assets). */
const PASSED = ['accept', 'content-type', 'if-none-match', 'if-modified-since', 'range'];
/** Answer headers of the connection, not of the answer. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date']);
const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function dashboardRoutes(ctx: AppContext): FastifyPluginAsyncZod {
  return async (app) => {
    const services = servicesOrNull(ctx);
    if (!services) return;
    let board: Promise<FastifyInstance> | undefined;
    services.onClose(async () => { await (await board?.catch(() => undefined))?.close(); });

    app.addHook('onRoute', (route) => {
      route.config = { ...(route.config ?? {}), csrf: false } as typeof route.config;
    });

    app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      const deny = (status: 401 | 403, message: string) => reply.status(status).send(errorBody(status, message));
      if (!req.principal) return deny(401, 'sign in required');
      const snap = await services.access.forUser(req.principal.userId);
      const ok = allows(snap, { platform: 'platform_admin' });
      const url = req.url.split('?')[0]!;
      if (!url.startsWith(`${DASHBOARD_PATH}/static/`)) {
        services.audit.record({
          action: `${req.method} ${url}`, actorId: req.principal.userId, actor: null, target: 'platform', workspace: null,
          decision: ok ? 'allow' : 'deny', details: { requirement: { platform: 'platform_admin' } },
        });
      }
      if (!ok) return deny(403, 'requires platform_admin');
      if (STATE_CHANGING.has(req.method) && !sameOriginCall(req, services)) {
        return deny(403, `cross-origin dashboard call refused: send the ${services.config.csrf.header_name} header or call from the dashboard page`);
      }
    });

    // bull-board's page: its own scripts and styles (React sets inline style attributes, hence
    // 'unsafe-inline' for styles only); no framing, plugins or foreign origins. Its Google Fonts
    // link is taken out of the page (the CSP refused it, an error in every admin's browser
    // console): the page uses local fonts and no admin's address reaches Google.
    app.addHook('onSend', async (_req, reply, payload) => {
      reply.header('content-security-policy', DASHBOARD_CSP).header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff');
      if (typeof payload === 'string' && String(reply.getHeader('content-type') ?? '').startsWith('text/html')) return withoutForeignFonts(payload);
      return payload;
    });

    // Each request is handed to bull-board's instance, built on the first one; its answer is sent
    // as this route's (an HTML page as text, so the onSend hook above can take the fonts out).
    const forward = async (req: FastifyRequest, reply: FastifyReply) => {
      const b = await (board ??= buildBoard(services).catch((err: Error) => { board = undefined; throw err; }));
      const headers: Record<string, string> = {};
      for (const h of PASSED) { const v = req.headers[h]; if (typeof v === 'string') headers[h] = v; }
      const body = req.body;
      const res = await b.inject({
        method: req.method as HTTPMethods, url: req.url, headers,
        payload: body === undefined || body === null ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
      });
      for (const [k, v] of Object.entries(res.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) reply.header(k, v);
      const type = String(res.headers['content-type'] ?? '');
      return reply.status(res.statusCode).send(/^(text\/|application\/(json|javascript))/.test(type) ? res.payload : res.rawPayload);
    };
    app.route({ method: METHODS, url: DASHBOARD_PATH, handler: forward });
    app.route({ method: METHODS, url: `${DASHBOARD_PATH}/*`, handler: forward });
  };
}
