// One access-log line per request at `info` (instead of fastify's two), with the path but never
// the query string: OIDC callbacks and webhooks carry codes and keys there. The incoming line is
// kept at `debug`. Halving the lines matters: logging was the largest cost of a cheap request.
import { LogController } from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

// The webhook route's last segment is its key, the route's only credential (SPEC 5.2.5): it is
// redacted whether or not the request was routed (a 404 or 405 on that path carries it too).
const WEBHOOK_KEY = /^(\/workflows\/v1\/[^/]*\/executions\/webhook\/[^/]*\/[^/]*\/)[^/]+/;
const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return (q < 0 ? url : url.slice(0, q)).replace(WEBHOOK_KEY, '$1[redacted]');
};

export class AccessLog extends LogController {
  constructor(private readonly access?: Logger) { super(); }

  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ method: request.method, url: pathOf(request.url) }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const fields = { method: request.method, url: pathOf(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 };
    if (error) reply.log.error({ ...fields, err: error }, 'request errored');
    else if (this.access && (reply.log as unknown as Logger).isLevelEnabled('info')) this.access.info({ reqId: request.id, ...fields }, 'request completed');
    else reply.log.info(fields, 'request completed');
  }
}
