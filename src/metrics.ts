// Prometheus metrics of one process: process metrics, HTTP request count and latency by route
// pattern and status, and the audit queue. A registry per Services object, so tests and replicas
// never share counters.
import { Registry, collectDefaultMetrics, Counter, Histogram } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  auditDropped: Counter;
  auditWritten: Counter;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  const labelNames = ['method', 'route', 'status'] as const;
  return {
    registry,
    httpRequests: new Counter({ name: 'svc_http_requests_total', help: 'HTTP requests by method, route pattern and status', labelNames, registers: [registry] }),
    httpDuration: new Histogram({
      name: 'svc_http_request_duration_seconds', help: 'HTTP request latency by method, route pattern and status', labelNames, registers: [registry],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    auditDropped: new Counter({ name: 'svc_audit_events_dropped_total', help: 'authorization audit events dropped because the in-memory queue was full or a batch failed', registers: [registry] }),
    auditWritten: new Counter({ name: 'svc_audit_events_written_total', help: 'authorization audit events written', registers: [registry] }),
  };
}
