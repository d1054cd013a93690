import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics.js';

/** Counts every response by route pattern (never the raw URL: bounded labels, no ids or keys). */
export function instrument(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const labels = { method: req.method, route, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
}
