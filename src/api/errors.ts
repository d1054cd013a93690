// One error body for every route: {"error": "<code>", "message": "<what went wrong>"}.
// Domain errors map to their status; validation and client errors stay 4xx; anything else is a
// 500 with a generic message (the details go to the log, never to the client).
import type { FastifyError, FastifyInstance } from 'fastify';
import { DomainError } from '../errors.js';

const CODES: Record<number, string> = {
  400: 'bad_request', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 405: 'method_not_allowed',
  406: 'not_acceptable', 409: 'conflict', 410: 'gone', 413: 'payload_too_large', 415: 'unsupported_media_type',
  429: 'too_many_requests', 503: 'unavailable',
};

export function errorBody(status: number, message: string, code?: string) {
  return { error: code ?? CODES[status] ?? (status >= 500 ? 'internal' : 'bad_request'), message };
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof DomainError) {
      if (err.retryAfterSecs !== undefined) reply.header('retry-after', String(err.retryAfterSecs));
      return reply.status(err.status).send(errorBody(err.status, err.message, err.code));
    }
    if (err.validation) {
      const first = err.validation[0];
      const where = err.validationContext ?? 'request';
      const path = first?.instancePath ? first.instancePath.replace(/^\//, '').replace(/\//g, '.') : '';
      const msg = `invalid ${where}${path ? ` at ${path}` : ''}: ${first?.message ?? err.message}`;
      return reply.status(400).send(errorBody(400, msg));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send(errorBody(status, err.message));
    }
    req.log.error({ err }, 'request failed');
    return reply.status(500).send(errorBody(500, 'internal error', 'internal'));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send(errorBody(404, `no route for ${req.method} ${req.url.split('?')[0]}`));
  });
}
