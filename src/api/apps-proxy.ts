// The apps origin's own HTTP traffic (docs/apps.md "Pods"): every path outside /_svc/ goes, with
// a live app cookie, to the pod of that session (launched on first use, waited for up to
// apps.pod.ready_timeout_secs). The pod never sees the app cookie as a cookie: it gets the token
// in X-Svc-App-Token (to call the gateway with the viewer's rights, as Databricks Apps forwards
// X-Forwarded-Access-Token) and the binding in X-Svc-App-* headers a client cannot set.
import type * as http from 'node:http';
import { http as httpModule } from '../util/node-http.js';
import { Transform, type Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { tokenHash, type AppTickets } from '../apps/tickets.js';
import { appSource, createPodLauncher, podManager, podStore } from '../apps/pod-runtime.js';
import { NOT_ORIGIN_FORM, isOriginForm, podRequestTarget, type PodHandle, type PodLauncher } from '../apps/pods.js';
import { DomainError, unreachableDependency } from '../errors.js';
import { mayStillOpen, noLongerAllowed } from '../apps/gateway.js';
import type { AppBinding } from '../apps/tickets.js';

/** A request body sent on to a pod (a notebook cell, an upload) is at most this large. */
export const MAX_PROXY_BODY = 10 * 1_048_576;
/**
 * A pod silent this long on a request (no answer yet, or a pause mid-answer) is given up: a 504,
 * or a cut stream once the answer began (nginx's proxy_read_timeout, 60 s). WebSockets are exempt.
 */
export const PROXY_IDLE_MS = 60_000;
/** How often an open WebSocket re-checks its app token and counts as use of its pod. */
export const WS_RECHECK_MS = 30_000;


// Hop-by-hop headers (RFC 9110 7.6.1) and what the proxy sets itself are never passed on.
const HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

export interface AppProxyOptions {
  services: Services; tickets: () => AppTickets; cookie: string; launcher?: PodLauncher;
  /** Replaces PROXY_IDLE_MS (tests). */
  idleMs?: number;
  /** Replaces WS_RECHECK_MS (tests). */
  wsRecheckMs?: number;
}

const fail = (reply: FastifyReply, status: number, error: string, message: string) => reply.status(status).send({ error, message });

/**
 * The Cookie header without the app cookie and without the service's session and CSRF cookies:
 * those never reach the apps origin when it is a sibling host, but on one host with two ports
 * (development, the browser tests, a mistaken deployment) the browser sends them here too, and a
 * pod runs the app author's code.
 */
function otherCookies(header: string | undefined, names: string[]): string | undefined {
  if (!header) return undefined;
  const kept = header.split(';').map((c) => c.trim()).filter((c) => c && !names.some((n) => c.startsWith(`${n}=`)));
  return kept.length ? kept.join('; ') : undefined;
}

/** A pod's Content-Security-Policy keeps its directives but never its own frame-ancestors. */
function withFrameAncestors(csp: string | undefined, serviceOrigin: string): string {
  const own = (csp ?? '').split(';').map((d) => d.trim()).filter((d) => d && !/^frame-ancestors\b/i.test(d));
  return [...own, `frame-ancestors ${serviceOrigin}`].join('; ');
}

/** Answers an upgrade request that is not passed on, in the one error body shape, and closes. */
function refuse(socket: Duplex, status: number, error: string, message: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error, message });
  socket.end(`HTTP/1.1 ${status} ${httpModule.STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

export async function appProxy(app: FastifyInstance, o: AppProxyOptions): Promise<void> {
  const { services } = o;
  const cfg = services.config.apps;
  const log = services.logging.module('svc::apps::proxy');
  const launcher = o.launcher ?? createPodLauncher(services.config);
  const manager = podManager(services);
  const store = podStore(services);
  const source = appSource(services);

  // Bodies are streamed to the pod as they come, whatever their type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  /** The session's pod (launched or waited for), or the refusal a request gets. */
  async function podFor(token: string | undefined) {
    const b = token ? await o.tickets().resolve(token) : null;
    if (!token || !b) throw new DomainError('unauthorized', 'no app session: open the app again from the service');
    if (!(await mayStillOpen(services.access, b))) throw noLongerAllowed(b);
    if (!launcher) throw new DomainError('unavailable', 'apps are not run here: apps.pod.launcher is none');
    const pod = await manager.open(b, tokenHash(token));
    if (b.mode === 'edit' && b.appId !== pod.appId) await manager.deliver(launcher, pod, b.appId, source);
    return { b, pod, launcher, extra: podHeaders(token, b) };
  }

  // The pod stopped answering (its process died): stop what is left and forget it, so the next
  // request launches it again.
  const forget = (launcher: PodLauncher, pod: Awaited<ReturnType<typeof manager.open>>) => async () => {
    log.warn({ pod: pod.key, launch: pod.id }, 'app pod not answering: stopped');
    await launcher.stop(pod.handle).catch((err: Error) => log.warn({ pod: pod.key, err: err.message }, 'app pod stop failed'));
    if ((await store.get(pod.key))?.id === pod.id) await store.remove(pod.key);
  };

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.url.startsWith('/_svc/')) return fail(reply, 404, 'not_found', `no route for ${req.method} ${req.url.split('?')[0].slice(0, 200)}`);
    const { pod, launcher: l, extra } = await podFor(req.cookies[o.cookie]);
    return forward(req, reply, pod.handle, extra, forget(l, pod));
  };
  app.all('/', handler);
  app.all('/*', handler);

  /** What a pod is told of the session: the token to call the gateway with, and its binding. */
  function podHeaders(token: string, b: AppBinding): Record<string, string> {
    return {
      'x-svc-app-token': token, 'x-svc-app-id': b.appId, 'x-svc-app-mode': b.mode,
      'x-svc-app-version': b.version === null ? '' : String(b.version), 'x-svc-app-workspace': b.workspace,
      'x-forwarded-host': new URL(cfg.origin).host, 'x-forwarded-proto': new URL(cfg.origin).protocol.replace(':', ''),
    };
  }

  /** The client's headers a pod may see: no hop-by-hop ones (unless `keep`), no X-Svc-*, no service or app cookie. */
  function passedHeaders(raw: http.IncomingHttpHeaders, extra: Record<string, string>, keep: string[] = []): http.OutgoingHttpHeaders {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(raw)) {
      if (v !== undefined && (!HOP.has(k) || keep.includes(k)) && !k.startsWith('x-svc-') && k !== 'cookie') headers[k] = v;
    }
    const cookies = otherCookies(raw.cookie, [o.cookie, services.config.session.cookie_name, services.config.csrf.cookie_name]);
    if (cookies) headers.cookie = cookies;
    return Object.assign(headers, extra);
  }

  /**
   * A pod's cookies stay its own: never the app cookie, never a cookie of the service's session or
   * CSRF name (on one host with two ports it would overwrite the service's), never one with a
   * Domain attribute (a cookie for the parent domain reaches the service: cookie tossing).
   */
  const ours = [o.cookie, services.config.session.cookie_name, services.config.csrf.cookie_name].map((n) => n.toLowerCase());
  function podMaySet(c: string): boolean {
    const [pair, ...attrs] = c.split(';');
    const name = pair.split('=')[0].trim().toLowerCase();
    return !ours.includes(name) && !attrs.some((a) => /^\s*domain\s*=/i.test(a));
  }

  /** A pod's answer headers: no hop-by-hop ones, only the cookies a pod may set, always our frame-ancestors. */
  function answerHeaders(raw: http.IncomingHttpHeaders): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(raw)) if (v !== undefined && !HOP.has(k)) out[k] = v;
    if (out['set-cookie']) out['set-cookie'] = ([] as string[]).concat(out['set-cookie']).filter(podMaySet);
    out['content-security-policy'] = withFrameAncestors(([] as string[]).concat(out['content-security-policy'] ?? []).join('; ') || undefined, cfg.service_origin);
    return out;
  }

  // WebSocket upgrades (a marimo kernel talks over one) take the request's checks plus the Origin:
  // a WebSocket is not bound by CORS, so without it any site could open the kernel with the
  // viewer's cookie (cross-site WebSocket hijacking). A socket that carried traffic re-checks its
  // token every WS_RECHECK_MS, which counts as use of the token and the pod (a kernel in use is not
  // stopped as idle), and closes once the token has ended (idle or absolute end). A silent socket
  // counts as no use: its pod's idle stop closes it.
  // CONNECT names a host and port (authority-form): the apps origin tunnels nowhere.
  app.server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    refuse(socket, 400, 'bad_request', NOT_ORIGIN_FORM);
  });
  app.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    upgrade(req, socket, head).catch((err: Error) => {
      if (err instanceof DomainError) return refuse(socket, err.status, err.code, err.message);
      const dependency = unreachableDependency(err);
      if (dependency) {
        log.warn({ dependency, err: err.message }, `${dependency} cannot be reached: answered 503`);
        return refuse(socket, 503, 'unavailable', 'temporarily unavailable; retry shortly');
      }
      log.warn({ err: err.message }, 'app WebSocket failed');
      refuse(socket, 502, 'bad_gateway', 'the app did not answer');
    });
  });

  async function upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer) {
    const url = req.url ?? '';
    if (!isOriginForm(url)) return refuse(socket, 400, 'bad_request', NOT_ORIGIN_FORM);
    if (url.startsWith('/_svc/')) return refuse(socket, 404, 'not_found', 'no WebSocket here');
    if (req.headers.origin !== cfg.origin) return refuse(socket, 403, 'forbidden', 'a WebSocket to an app must come from the apps origin');
    const token = app.parseCookie(req.headers.cookie ?? '')[o.cookie];
    const { pod, launcher: l, extra } = await podFor(token);
    if (socket.destroyed) return;
    const up = httpModule.request({ ...podRequestTarget(pod.handle.address, url)!, method: 'GET', headers: passedHeaders(req.headers, extra, ['connection', 'upgrade']) });
    up.on('response', (res) => {
      res.resume();
      refuse(socket, 502, 'bad_gateway', `the app refused the WebSocket (${res.statusCode})`);
    });
    up.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') void forget(l, pod)().catch((e: Error) => log.warn({ err: e.message }, 'app pod stop failed'));
      refuse(socket, 502, 'bad_gateway', 'the app did not answer');
    });
    up.on('upgrade', (res, podSocket, podHead) => {
      if (socket.destroyed) return podSocket.destroy();
      const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ''}`];
      const out = answerHeaders(res.headers);
      out.connection = 'Upgrade';
      out.upgrade = String(res.headers.upgrade ?? 'websocket');
      for (const [k, v] of Object.entries(out)) for (const one of ([] as string[]).concat(v)) lines.push(`${k}: ${one}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (podHead.length) socket.write(podHead);
      if (head.length) podSocket.write(head);
      let used = false;
      const end = () => { clearInterval(recheck); socket.destroy(); podSocket.destroy(); };
      const recheck = setInterval(() => {
        if (!used) return;
        used = false;
        podFor(token).catch(() => null).then((r) => { if (!r || r.pod.id !== pod.id) end(); }, end);
      }, o.wsRecheckMs ?? WS_RECHECK_MS);
      recheck.unref();
      podSocket.on('error', end).on('close', end);
      socket.on('close', end);
      socket.pipe(podSocket).pipe(socket);
      const mark = () => { used = true; };
      socket.on('data', mark);
      podSocket.on('data', mark);
    });
    up.end();
  }

  function forward(req: FastifyRequest, reply: FastifyReply, handle: PodHandle, extra: Record<string, string>, onRefused: () => Promise<void>) {
    const headers = passedHeaders(req.headers, extra);
    // The upstream is the pod, whatever the request names: only its path and query go on.
    const target = podRequestTarget(handle.address, req.url);
    if (!target) return fail(reply, 400, 'bad_request', NOT_ORIGIN_FORM);
    return new Promise<FastifyReply>((resolve, reject) => {
      const up = httpModule.request({ ...target, method: req.method, headers }, (res) => {
        resolve(reply.status(res.statusCode ?? 502).headers(answerHeaders(res.headers)).send(res));
      });
      const idleMs = o.idleMs ?? PROXY_IDLE_MS;
      up.setTimeout(idleMs, () => up.destroy(Object.assign(new Error('the app went silent'), { code: 'EIDLE' })));
      up.on('error', (err: NodeJS.ErrnoException) => {
        if (reply.sent) return;
        if (err.code === 'EIDLE') {
          resolve(fail(reply, 504, 'timeout', `the app did not answer within ${Math.ceil(idleMs / 1000)} s`));
        } else if (err.code === 'ECONNREFUSED') {
          onRefused().then(() => resolve(fail(reply, 502, 'bad_gateway', 'the app stopped answering: reload to start it again')), reject);
        } else {
          log.warn({ err: err.message, code: err.code }, 'app pod request failed');
          resolve(fail(reply, 502, 'bad_gateway', 'the app did not answer'));
        }
      });
      req.raw.on('close', () => { if (!req.raw.complete) up.destroy(); });
      let seen = 0;
      const limit = new Transform({
        transform(chunk: Buffer, _enc, next) {
          seen += chunk.length;
          next(seen > MAX_PROXY_BODY ? Object.assign(new Error('request body too large'), { code: 'EBODY' }) : null, chunk);
        },
      });
      limit.on('error', () => {
        up.destroy();
        if (!reply.sent) resolve(fail(reply, 413, 'payload_too_large', `a request to an app is at most ${MAX_PROXY_BODY} bytes`));
      });
      req.raw.pipe(limit).pipe(up);
    });
  }
}
