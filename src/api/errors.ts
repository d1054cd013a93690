// One error body for every route: {"error": "<code>", "message": "<what went wrong>"}.
// Domain errors map to their status; validation and client errors stay 4xx; anything else is a
// 500 with a generic message (the details go to the log, never to the client).
import type { FastifyError, FastifyInstance } from 'fastify';
import { DomainError, isUniqueViolation, unavailable, unreachableDependency } from '../errors.js';

const CODES: Record<number, string> = {
  400: 'bad_request', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 405: 'method_not_allowed',
  406: 'not_acceptable', 408: 'request_timeout', 409: 'conflict', 410: 'gone', 413: 'payload_too_large', 414: 'uri_too_long',
  415: 'unsupported_media_type', 429: 'too_many_requests', 431: 'request_header_fields_too_large', 503: 'unavailable',
};

export function errorBody(status: number, message: string, code?: string) {
  return { error: code ?? CODES[status] ?? (status >= 500 ? 'internal' : 'bad_request'), message };
}

export function installErrorHandling(app: FastifyInstance, ports: { postgres?: number; redis?: number } = {}): void {
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
    // Safety nets for what reached PostgreSQL anyway: a unique violation is two requests creating
    // the same thing at once (a conflict, not a fault); a data exception (SQLSTATE class 22: out
    // of range, malformed value) comes from a value the client sent. Neither echoes PostgreSQL.
    if (isUniqueViolation(err)) {
      req.log.warn({ constraint: (err as { constraint?: string }).constraint }, 'unique violation answered 409');
      return reply.status(409).send(errorBody(409, 'it already exists (a concurrent request created it); fetch it or retry'));
    }
    if (isDataException(err)) {
      req.log.warn({ sqlstate: err.code, reason: err.message }, 'data exception answered 400');
      return reply.status(400).send(errorBody(400, 'a value of the request is out of range or not valid'));
    }
    // A dependency that cannot be reached is a passing outage, not a bug: 503 with Retry-After, so
    // clients and load balancers retry; which one is said in the log only.
    const dependency = unreachableDependency(err, ports);
    if (dependency) {
      const u = unavailable();
      req.log.warn({ dependency, err: err.message }, `${dependency} cannot be reached: answered 503`);
      reply.header('retry-after', String(u.retryAfterSecs));
      return reply.status(503).send(errorBody(503, u.message, 'unavailable'));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send(errorBody(status, err.message));
    }
    req.log.error({ err }, 'request failed');
    return reply.status(500).send(errorBody(500, 'internal error', 'internal'));
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0];
    reply.status(404).send(errorBody(404, `no route for ${req.method} ${path.length > 200 ? `${path.slice(0, 200)}…` : path}`));
  });
}

/** A PostgreSQL data exception (SQLSTATE class 22), raised by the driver's error with a 5-character code. */
function isDataException(err: { code?: string }): boolean {
  return typeof err.code === 'string' && /^22[0-9A-Z]{3}$/.test(err.code) && !(err as { statusCode?: number }).statusCode;
}
