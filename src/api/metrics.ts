// Prometheus metrics of one app instance: process metrics plus request count and latency by
// route pattern and status. A registry per app, so tests and replicas never share counters.
import { Registry, collectDefaultMetrics, Counter, Histogram } from 'prom-client';
import type { FastifyInstance } from 'fastify';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  const httpRequests = new Counter({
    name: 'svc_http_requests_total', help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const, registers: [registry],
  });
  const httpDuration = new Histogram({
    name: 'svc_http_request_duration_seconds', help: 'HTTP request latency by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const, registers: [registry],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  return { registry, httpRequests, httpDuration };
}

export function instrument(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (req, reply) => {
    // The route pattern, never the raw URL: bounded label cardinality and no ids or keys in labels.
    const route = req.routeOptions.url ?? 'unmatched';
    const labels = { method: req.method, route, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
}
