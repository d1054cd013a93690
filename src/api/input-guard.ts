// The edge rule for what a request may carry, applied to every route before its own code runs:
// path parameters, query strings and bodies (JSON keys and values, text, form fields) must be
// storable text (no NUL, no lone surrogate) and nest at most MAX_VALUE_DEPTH levels. One rule
// here instead of a check at each of the ~75 operations; see docs/api.md "Limits".
// Also: the answers fastify and Node make themselves (bad URL, over-long path parameter, header
// overflow, malformed HTTP) in the one error shape, without echoing the URL.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import { DomainError } from '../errors.js';
import { valueProblem } from '../util/well-formed.js';
import { errorBody } from './errors.js';

const PARTS = [['params', 'path parameter'], ['query', 'query parameter']] as const;

function reject(part: string, where: string, problem: string): never {
  throw new DomainError('bad_request', `invalid ${part}${where ? ` ${where}` : ''}: ${problem}`);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route reads its query itself and answers bad input in its own shape (the SSO callback's HTML page). */
    inputGuard?: boolean;
  }
}

export function installInputGuard(app: FastifyInstance): void {
  app.addHook('onRequest', async (req) => {
    // A cookie that is not storable text is treated as absent (a stray cookie of another site
    // on the same host must not lock a browser out).
    const cookies = (req as { cookies?: Record<string, string | undefined> }).cookies;
    if (cookies) for (const k of Object.keys(cookies)) if (valueProblem(cookies[k], 1)) delete cookies[k];
    if (req.routeOptions.config?.inputGuard === false) return;
    for (const [key, part] of PARTS) {
      const bad = valueProblem(req[key], 2);
      if (bad) reject(part, bad.where, bad.problem);
    }
  });
  app.addHook('preValidation', async (req) => {
    if (req.routeOptions.config?.inputGuard === false) return;
    const bad = valueProblem(req.body);
    if (bad) reject('body', bad.where ? `at ${bad.where}` : '', bad.problem);
  });
}

/** fastify's `frameworkErrors`: routing failures in the one error shape, never echoing the URL. */
export function frameworkErrors(err: Error & { code?: string }, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply.status(414).send(errorBody(414, 'a path segment of the URL is too long', 'uri_too_long'));
  } else if (err.code === 'FST_ERR_BAD_URL') {
    reply.status(400).send(errorBody(400, 'the URL is not valid: a path segment has a malformed percent-encoding'));
  } else {
    reply.status(400).send(errorBody(400, 'the request could not be routed'));
  }
}

/** Node's `clientError` (malformed HTTP, headers over the limit, timeouts) in the one error shape. */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, body] = err.code === 'HPE_HEADER_OVERFLOW'
    ? [431, 'Request Header Fields Too Large', errorBody(431, 'the request headers are too large', 'request_header_fields_too_large')]
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', errorBody(408, 'the request took too long to arrive', 'request_timeout')]
      : [400, 'Bad Request', errorBody(400, 'the request is not valid HTTP')];
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(text)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${text}`);
  }
  socket.destroy(err);
}
